"""Support scores with the bundled embedder: one batched call per role, the sentence unit keeps a
note's best sentence, pair scores read the right cells, and an unknown mode is refused."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from citegate.models.embed import Embedder, default_embedder
from citegate.pipeline.support import MODES, note_units, support_scores
from citegate.studies.answer_faithfulness.validator import pair_scores

CLAIMS = ["The soul passes into another body at death.", "Warsaw is the capital of Poland."]
NOTES = [
    "Arjuna lifts his bow. Just as the embodied soul passes through childhood, youth and old age,"
    " so it passes into another body at death; the wise are not deluded by this.",
    "Warsaw is the capital and largest city of Poland.\n\nIt stands on the Vistula River.",
]


class Counting:
    """The real embedder, counting its calls per role."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.calls: list[tuple[str, int]] = []

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("query", len(texts)))
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("passage", len(texts)))
        return self.inner.embed_passages(texts)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return default_embedder()


@pytest.mark.parametrize("mode", MODES)
def test_one_batched_call_per_role(embedder: Embedder, mode: str) -> None:
    counting = Counting(embedder)
    scores = support_scores(counting, CLAIMS, NOTES, mode)
    assert scores.shape == (2, 2)
    units = 2 if mode.endswith("note") else sum(len(note_units(n)) for n in NOTES)
    if mode.startswith("qp"):
        assert counting.calls == [("query", 2), ("passage", units)]
    else:
        role = "query" if mode.startswith("qq") else "passage"
        assert counting.calls == [(role, 2 + units)]
    assert scores[0, 0] > scores[0, 1] and scores[1, 1] > scores[1, 0]


def test_sentence_unit_is_the_best_sentence_of_the_note(embedder: Embedder) -> None:
    units = note_units(NOTES[1])
    assert units == [
        "Warsaw is the capital and largest city of Poland.",
        "It stands on the Vistula River.",
    ]
    per_unit = support_scores(embedder, CLAIMS[1:], units, "qp-note")[0]
    best = support_scores(embedder, CLAIMS[1:], NOTES, "qp-sentence")[0, 1]
    assert best == pytest.approx(per_unit.max(), abs=1e-6)


def test_pair_scores_read_each_aligned_pair(embedder: Embedder) -> None:
    matrix = support_scores(embedder, CLAIMS, NOTES, "qq-sentence")
    pairs = pair_scores(
        embedder, [CLAIMS[0], CLAIMS[1], CLAIMS[0]], [NOTES[1], NOTES[1], NOTES[0]], "qq-sentence"
    )
    assert pairs == pytest.approx([matrix[0, 1], matrix[1, 1], matrix[0, 0]], abs=1e-6)
    with pytest.raises(ValueError, match="align"):
        pair_scores(embedder, CLAIMS, NOTES[:1])


def test_empty_sides_and_unknown_modes(embedder: Embedder) -> None:
    assert support_scores(embedder, [], NOTES, "qp-note").shape == (0, 2)
    with pytest.raises(ValueError, match="unknown support mode 'cosine'"):
        support_scores(embedder, CLAIMS, NOTES, "cosine")
