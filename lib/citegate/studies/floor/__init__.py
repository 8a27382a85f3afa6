"""Notebook 01: recall before and after the cosine pre-floor, and where gold fragments are lost.

`compute` replays a loaded `Study` into tables and metrics (pure: no database, no model, no
file), `plots` draws them (matplotlib), `report` writes the conclusion from the numbers. The
notebook imports this package as `from citegate.studies import floor as fs`; every public name
of the three modules is re-exported here.
"""

from __future__ import annotations

from citegate.studies.floor.compute import (
    LOSS_ORDER,
    answerable,
    arm_table,
    at_floors,
    gold_cosines,
    headline,
    killed_between,
    overall_recall,
    recall_by_floor,
    waterfall,
)
from citegate.studies.floor.plots import plot_cosines, plot_recall, plot_waterfall
from citegate.studies.floor.report import conclusion

__all__ = [
    "LOSS_ORDER",
    "answerable",
    "arm_table",
    "at_floors",
    "conclusion",
    "gold_cosines",
    "headline",
    "killed_between",
    "overall_recall",
    "plot_cosines",
    "plot_recall",
    "plot_waterfall",
    "recall_by_floor",
    "waterfall",
]
