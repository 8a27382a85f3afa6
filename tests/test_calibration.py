"""Notebook 02's conclusion: which score carries one threshold follows from the losses given."""

from __future__ import annotations

import pandas as pd

from citegate.studies import calibration as cal


def _table(loss_cosine: float, loss_rerank: float) -> pd.DataFrame:
    row = {
        "global threshold": 0.5,
        "global bal. acc.": 0.8,
        "oracle bal. acc.": 0.9,
        "best-threshold IQR": 0.1,
        "pooled AUROC": 0.85,
        "mean per-question AUROC": 0.8,
        "ECE": 0.1,
    }
    return pd.DataFrame(
        [
            {"score": "cosine", **row, "loss vs oracle": loss_cosine},
            {"score": "rerank", **row, "loss vs oracle": loss_rerank},
        ]
    )


def test_equal_losses_name_no_winner() -> None:
    text = cal.conclusion(_table(0.136, 0.136), "none")
    assert "better carrier" not in text
    assert "neither carries an absolute threshold better" in text
    assert "the rerank score *is* the cosine" in text


def test_the_score_that_loses_less_is_named() -> None:
    text = cal.conclusion(_table(0.136, 0.054), "ltr/default")
    assert "**rerank** loses less" in text and "0.082 balanced-accuracy points" in text
    assert "*is* the cosine" not in text
    text = cal.conclusion(_table(0.05, 0.2), "ltr/default")
    assert "**cosine** loses less" in text
