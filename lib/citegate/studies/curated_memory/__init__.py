"""Notebook 07: curated memory, the pre-check and the lean path.

`run` measures against the database: it reads and imports the demo notes, gives each question
its pre-check signal, retrieves and times both policies on the questions the pre-check sends
lean (through `retrieve`, the code `citegate ask` runs) and replays the boost sweep; `compute`
turns those rows into the pre-check's precision and recall by threshold, the lean-against-wide
comparison, the boost strength and the check that no memory note is cited (pure); `report`
writes the sentences and draws the figures; `artifacts` writes the recommendation
`citegate promote` reads. The notebook imports this package as
`from citegate.studies import curated_memory as cm`: it is the notebook's one facade, and
re-exports every name the notebook uses, the database connection and production's reranker
among them.
"""

from __future__ import annotations

from citegate.research.study import production_base
from citegate.store.db import connect
from citegate.store.production import load_reranker
from citegate.studies.curated_memory.artifacts import save_recommendation
from citegate.studies.curated_memory.compute import (
    boost_metrics,
    boost_table,
    headline,
    lean_vs_wide,
    memory_cited,
    path_table,
    pinned_cited_share,
    precheck_metrics,
    precheck_table,
    recommend_boost,
    recommend_threshold,
    sweep,
)
from citegate.studies.curated_memory.report import (
    boost_line,
    conclusion,
    plot_boost,
    plot_paths,
    plot_sweep,
    precheck_line,
)
from citegate.studies.curated_memory.run import (
    boost_rows,
    boost_sample,
    import_demo,
    load_notes,
    path_rows,
    questions_for,
    signal_rows,
    taken_lean,
)

__all__ = [
    "boost_line",
    "boost_metrics",
    "boost_rows",
    "boost_sample",
    "boost_table",
    "conclusion",
    "connect",
    "headline",
    "import_demo",
    "lean_vs_wide",
    "load_notes",
    "load_reranker",
    "memory_cited",
    "path_rows",
    "path_table",
    "pinned_cited_share",
    "plot_boost",
    "plot_paths",
    "plot_sweep",
    "precheck_line",
    "precheck_metrics",
    "precheck_table",
    "production_base",
    "questions_for",
    "recommend_boost",
    "recommend_threshold",
    "save_recommendation",
    "signal_rows",
    "sweep",
    "taken_lean",
]
