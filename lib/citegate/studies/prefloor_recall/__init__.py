"""Notebook 01: recall before and after the cosine pre-floor, and where gold fragments are lost.

`compute` replays a loaded `Study` into tables and metrics (pure: no database, no model, no
file), `run` loads the arms' traces (a re-collection when an arm's collection settings differ)
and builds the recommendation, `plots` draws them (matplotlib), `report` writes the conclusion
from the numbers. The notebook imports this package as
`from citegate.studies import prefloor_recall as fs`; every public name of those modules is
re-exported here. The rewrite arm (elliptical follow-ups searched raw, concatenated and
rewritten) is the `followup` subpackage, imported as
`from citegate.studies.prefloor_recall import followup as fu`.
"""

from __future__ import annotations

from citegate.research.verdicts import report_verdicts
from citegate.studies.prefloor_recall.compute import (
    LOSS_ORDER,
    Arm,
    answerable,
    arm_metrics,
    arm_naming_table,
    arm_split_table,
    arm_table,
    arm_waterfall,
    at_floors,
    gold_cosines,
    headline,
    killed_between,
    naming_metrics,
    overall_recall,
    recall_by_floor,
    waterfall,
)
from citegate.studies.prefloor_recall.planner import (
    planner_table,
    planner_verdicts,
    run_planner,
)
from citegate.studies.prefloor_recall.plots import (
    plot_arms,
    plot_cosines,
    plot_recall,
    plot_waterfall,
)
from citegate.studies.prefloor_recall.report import arm_conclusion, conclusion
from citegate.studies.prefloor_recall.run import (
    arm_config,
    load_arms,
    recommended_config,
    save_recommendation,
)

__all__ = [
    "LOSS_ORDER",
    "Arm",
    "answerable",
    "arm_conclusion",
    "arm_config",
    "arm_metrics",
    "arm_naming_table",
    "arm_split_table",
    "arm_table",
    "arm_waterfall",
    "at_floors",
    "conclusion",
    "gold_cosines",
    "headline",
    "killed_between",
    "load_arms",
    "naming_metrics",
    "overall_recall",
    "planner_table",
    "planner_verdicts",
    "plot_arms",
    "plot_cosines",
    "plot_recall",
    "plot_waterfall",
    "recall_by_floor",
    "recommended_config",
    "report_verdicts",
    "run_planner",
    "save_recommendation",
    "waterfall",
]
