"""Notebook 02: can the rerank score or the cosine carry one absolute threshold across questions?

`compute` turns a loaded `Study` into labeled (question, candidate) pairs and the per-score
calibration table (pure), `plots` draws the reliability diagrams and threshold spreads, `report`
writes the conclusion. The notebook imports this package as
`from citegate.studies import rerank_calibration as cal`.
"""

from __future__ import annotations

from citegate.studies.rerank_calibration.compute import (
    SCORES,
    TIE,
    best_thresholds,
    headline,
    pairs,
    score_table,
)
from citegate.studies.rerank_calibration.plots import plot_reliability, plot_threshold_spread
from citegate.studies.rerank_calibration.report import conclusion, dense_search_line

__all__ = [
    "SCORES",
    "TIE",
    "best_thresholds",
    "conclusion",
    "dense_search_line",
    "headline",
    "pairs",
    "plot_reliability",
    "plot_threshold_spread",
    "score_table",
]
