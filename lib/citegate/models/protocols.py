"""The reranking protocols every scorer in `citegate.models` implements.

They live apart from the implementations so that `rerank` (the factory), `llm_rerank` and `ltr`
can all import them without importing one another in a circle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Scorable(Protocol):
    """What a reranker may read of a candidate."""

    text: str
    score: float
    kind: str
    lang: str
    lanes: tuple[str, ...]


class Reranker(Protocol):
    """Scores (question, passage) pairs jointly; higher is more relevant. Scores are pointwise."""

    id: str

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]: ...
