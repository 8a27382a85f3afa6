"""The in-process SmolLM2 yes/no relevance scorer: ordering, range, determinism, disk cache."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from citegate.models.llm_rerank import LLMRelevanceScorer, yes_probability
from citegate.models.rerank import CachedReranker, Scorable

QUESTION = "What is the capital of France?"


@dataclass(frozen=True)
class Cand:
    """The fields a reranker may read."""

    text: str
    score: float = 0.5
    kind: str = "article"
    lang: str = "en"
    lanes: tuple[str, ...] = ("dense",)


ANSWER = Cand("Paris is the capital of France.")
UNRELATED = Cand("Bananas are yellow.")


@pytest.fixture(scope="module")
def scorer() -> LLMRelevanceScorer:
    """One loaded model for the module (one thread: the CPUs are shared)."""
    return LLMRelevanceScorer(n_threads=1)


class Counting:
    """A reranker wrapper that counts how often, and on how many pairs, it is called."""

    def __init__(self, inner: LLMRelevanceScorer) -> None:
        self.inner = inner
        self.id = inner.id
        self.calls = 0
        self.pairs = 0

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        self.calls += 1
        self.pairs += len(cands)
        return self.inner.score(question, cands)


@pytest.mark.slow
def test_answer_beats_unrelated_and_scores_are_probabilities(scorer: LLMRelevanceScorer) -> None:
    good, bad = scorer.score(QUESTION, [ANSWER, UNRELATED])
    assert 0.0 <= bad < good <= 1.0
    assert scorer.id == "llm/smollm2-135m-yes-prob"


@pytest.mark.slow
def test_deterministic_and_order_independent(scorer: LLMRelevanceScorer) -> None:
    first = scorer.score(QUESTION, [ANSWER, UNRELATED])
    scorer.score("Who wrote Hamlet?", [UNRELATED])  # another question evicts the cached prefix
    again = scorer.score(QUESTION, [UNRELATED, ANSWER])[::-1]
    assert first == again  # bit-identical, not just close


@pytest.mark.slow
def test_through_cached_reranker(scorer: LLMRelevanceScorer, tmp_path: Path) -> None:
    inner = Counting(scorer)
    cached = CachedReranker(inner, cache_path=tmp_path / "rerank.sqlite")
    assert cached.id == scorer.id
    first = cached.score(QUESTION, [ANSWER, UNRELATED])
    assert (inner.calls, inner.pairs) == (1, 2)
    second = cached.score(QUESTION, [UNRELATED, ANSWER])
    assert inner.calls == 1  # every pair came from the cache
    assert second == first[::-1]


def test_yes_probability_sums_variants() -> None:
    logits = np.array([0.0, 1.0, 1.0, 2.0, 100.0], dtype=np.float32)
    # yes ids {1, 2}, no id {3}; id 4 is outside the yes/no softmax
    expected = 2 * np.e / (2 * np.e + np.e**2)
    assert yes_probability(logits, [1, 2], [3]) == pytest.approx(expected)
    assert yes_probability(np.array([-1e4, 1e4], dtype=np.float32), [1], [0]) == 1.0
