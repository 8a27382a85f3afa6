"""Notebook 08: the whole turn measured end to end, and the certified floor of the pointers.

`run` sends every sampled test question through the live turn (`Service.answer`, the code
`citegate ask --answer` runs) and reads the tune questions' final notes for the pointer floor;
`compute` reads each turn's outcome from what the user was shown, makes the tables and headline
metrics and certifies the pointer floor (pure); `report` writes the sentences and draws the
figures; `artifacts` writes the recommendation `citegate promote` reads. The notebook imports
this package as `from citegate.studies import end_to_end as ee`: it is the notebook's one facade,
and re-exports every name the notebook uses, production's pointer count (`MAX_POINTERS`) among
them.
"""

from __future__ import annotations

from citegate.pipeline.pointers import MAX_POINTERS
from citegate.research.study import production_base
from citegate.studies.end_to_end.artifacts import save_recommendation
from citegate.studies.end_to_end.compute import (
    certify_floor,
    check_errors,
    finite,
    floor_sweep,
    frame,
    headline,
    outcome_table,
    policy_table,
)
from citegate.studies.end_to_end.report import conclusion, floor_line, plot_floor, plot_outcomes
from citegate.studies.end_to_end.run import config_of, note_rows, turn_rows

__all__ = [
    "MAX_POINTERS",
    "certify_floor",
    "check_errors",
    "conclusion",
    "config_of",
    "finite",
    "floor_line",
    "floor_sweep",
    "frame",
    "headline",
    "note_rows",
    "outcome_table",
    "plot_floor",
    "plot_outcomes",
    "policy_table",
    "production_base",
    "save_recommendation",
    "turn_rows",
]
