"""Notebook 01's conclusion: its claims about the floors follow from the numbers given."""

from __future__ import annotations

import pandas as pd

from citegate.studies import floor as fs


def _overall(recall_low: float, recall_high: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"set": "gita", "floor": f, "questions": 100, "recall": r, "lost_at_floor": 0.0}
            for f, r in ((0.0, recall_low), (0.18, recall_low), (0.45, recall_high))
        ]
    )


def _metrics(gold_min: float, killed: int = 0) -> dict[str, float]:
    return {
        "gold_killed_by_high_floor": killed,
        "gold_cosine_p05": 0.8,
        "gold_cosine_min": gold_min,
    }


def test_floors_below_every_gold_fragment_remove_nothing() -> None:
    text = fs.conclusion(_metrics(0.7), _overall(0.55, 0.55))
    assert "neither floor removes a relevant fragment" in text
    assert "No floor in the grid costs more than 1 point" in text


def test_gold_between_the_floors_without_a_recall_drop_costs_no_recall() -> None:
    text = fs.conclusion(_metrics(0.3, killed=2), _overall(0.55, 0.55))
    assert "between 0.18 and 0.45" in text
    assert "costs no recall" in text and "costs recall" not in text
    assert "drops 2 of them" in text


def test_gold_below_the_low_floor_with_a_recall_drop_says_what_it_costs() -> None:
    text = fs.conclusion(_metrics(0.1, killed=5), _overall(0.55, 0.40))
    assert "below even the 0.18 floor" in text
    assert "costs up to 0.150 recall" in text
    assert "Recall first falls by more than 1 point at floor 0.45" in text
    assert "neither floor" not in text
