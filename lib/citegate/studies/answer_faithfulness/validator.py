"""Notebook 06's validator part end to end: score the labeled claim set with the retrieval
embedder in each support mode, choose the mode on the tune part, and certify its threshold.

The tune part chooses everything (the mode by its pooled AUROC, the threshold by
`compute.certify_support`); the test part is only reported (`compute.validator_report`).
Embeddings go through the embedder's disk cache, so a rerun scores from the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citegate.corpus.claims import ClaimPair
from citegate.models.embed import Embedder
from citegate.pipeline.support import DEFAULT_MODE, MODES, support_scores
from citegate.studies.answer_faithfulness.compute import (
    ALPHA,
    DELTA,
    RocRow,
    ValidatorReport,
    roc_table,
)
from citegate.studies.answer_faithfulness.compute import validator_report as _report


def pair_scores(
    embedder: Embedder, claims: Sequence[str], notes: Sequence[str], mode: str = DEFAULT_MODE
) -> np.ndarray:
    """The support score of each aligned (claims[i], notes[i]) pair, each distinct text embedded
    once (`support_scores` over the distinct claims and notes, then read pair by pair)."""
    if len(claims) != len(notes):
        raise ValueError(f"claims and notes must align ({len(claims)} vs {len(notes)})")
    uc, un = list(dict.fromkeys(claims)), list(dict.fromkeys(notes))
    ci, ni = {t: i for i, t in enumerate(uc)}, {t: i for i, t in enumerate(un)}
    matrix = support_scores(embedder, uc, un, mode)
    rows = np.array([ci[t] for t in claims], dtype=int)
    cols = np.array([ni[t] for t in notes], dtype=int)
    return matrix[rows, cols] if len(rows) else np.zeros(0, dtype=np.float32)


@dataclass(frozen=True)
class ModeRow:
    """One support mode's AUROC on one slice of a split (clustered 95% interval)."""

    mode: str
    split: str
    row: RocRow


def score_pairs(pairs: Sequence[ClaimPair], embedder: Embedder, mode: str) -> np.ndarray:
    """One support score per pair in `mode` (each distinct claim and note embedded once)."""
    return pair_scores(embedder, [p.claim for p in pairs], [p.note for p in pairs], mode)


def mode_table(
    pairs: Sequence[ClaimPair],
    embedder: Embedder,
    modes: Sequence[str] = MODES,
    split: str = "tune",
    n_boot: int = 200,
) -> list[ModeRow]:
    """Every slice's AUROC of `split` for every mode: the comparison the mode is chosen by."""
    return [
        ModeRow(mode, split, row)
        for mode in modes
        for row in roc_table(pairs, score_pairs(pairs, embedder, mode), split, n_boot)
    ]


def choose_mode(rows: Sequence[ModeRow]) -> str:
    """The mode with the highest AUROC over all pairs (the `all` slice) of the tune part;
    ValueError when the rows hold no tune `all` row."""
    pooled = [r for r in rows if r.split == "tune" and r.row.slice.name == "all"]
    if not pooled:
        raise ValueError("no tune AUROC over all pairs to choose a support mode by")
    return max(pooled, key=lambda r: r.row.auroc).mode


def validate(
    pairs: Sequence[ClaimPair],
    embedder: Embedder,
    mode: str,
    alpha: float = ALPHA,
    delta: float = DELTA,
    n_boot: int = 1000,
) -> ValidatorReport:
    """The validator report of `mode`: test ROC, tune certificate per corpus (false-support
    rate `alpha` at confidence 1 - `delta`), test realisation."""
    scores = score_pairs(pairs, embedder, mode)
    return _report(pairs, scores, mode, alpha, delta, n_boot=n_boot)
