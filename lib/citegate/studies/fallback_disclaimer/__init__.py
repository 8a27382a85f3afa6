"""Notebook 04: how often does a fallback model keep the mandated disclaimer, against the
server-painted one; how well does it judge scope, answer in the user's language and derive probes?

Every (question, prompt variant, model) goes through `fallback.fallback_turn`, the production
branch; probes are searched through the shared, cached retrieval pass (`traces.traces_for` +
`replay`, the same code as `retrieve`). Model calls go through `ChatClient` and its disk cache, so
a rerun costs no model time.

A call that failed (status `llm_error`: server down, HTTP error) is no model behaviour: `scored`
drops those rows from every table, rate and metric, `error_table` counts them per model, and
`check_model_errors` stops the run when they exceed the allowed share.

`run` holds what touches models, the database and the question files (sampling the questions,
`run_calls`; the model registry and probe search are `research.models` and `research.probe`,
shared with notebook 01's rewrite arm and the `citation` part); `compute` turns the answer rows
into tables and metrics (pure), among them the fallback role's bar (`BAR`, `bar_table`: per
model, passed or not), `plots` draws them, `report` writes the conclusion, `artifacts` writes
`bar.json`. The notebook imports this package as
`from citegate.studies import fallback_disclaimer as fs`; its second part, whether cited claims
are supported, is the `citation` subpackage
(`from citegate.studies.fallback_disclaimer import citation as cs`).
"""

from __future__ import annotations

from citegate.research.verdicts import report_verdicts
from citegate.studies.fallback_disclaimer.artifacts import fallback_verdicts, save_bar
from citegate.studies.fallback_disclaimer.compute import (
    BAR,
    FallbackQuestions,
    Item,
    adherence_table,
    answer_row,
    bar_metrics,
    bar_table,
    bar_verdicts,
    check_model_errors,
    check_painted,
    config_table,
    cost_table,
    error_table,
    examples,
    headline,
    model_notes,
    probe_table,
    question_records,
    questions_table,
    scope_by_label,
    scope_table,
    scored,
)
from citegate.studies.fallback_disclaimer.plots import plot_adherence, plot_cost
from citegate.studies.fallback_disclaimer.report import bar_lines, conclusion
from citegate.studies.fallback_disclaimer.run import load_questions, record_questions, run_calls

__all__ = [
    "BAR",
    "FallbackQuestions",
    "Item",
    "adherence_table",
    "answer_row",
    "bar_lines",
    "bar_metrics",
    "bar_table",
    "bar_verdicts",
    "check_model_errors",
    "check_painted",
    "conclusion",
    "config_table",
    "cost_table",
    "error_table",
    "examples",
    "headline",
    "load_questions",
    "model_notes",
    "plot_adherence",
    "plot_cost",
    "probe_table",
    "question_records",
    "questions_table",
    "record_questions",
    "run_calls",
    "fallback_verdicts",
    "report_verdicts",
    "save_bar",
    "scope_by_label",
    "scope_table",
    "scored",
]
