"""Notebook 01, comparison arm: does rewriting a follow-up question into a standalone query
recover the recall that an elliptical follow-up loses?

Two-turn conversations are built from real labeled questions: turn 1 names its verse ("In
Chapter 1, Verse 2, ..."), turn 2 is another question about the SAME verse that names no verse and
points back elliptically ("How is the army described in the verse?"). Turn 2 is searched three
ways through the shared, cached retrieval pass (`research.probe.probe_search`: `traces_for` +
`replay`, the production code): `raw` (the follow-up alone), `concat` (turn 1 + turn 2, the naive
baseline) and `rewrite` (`rewrite.rewrite_query`, validated; the raw query on rejection). A hit is
the follow-up's gold verse among the final notes, by the fragment ids `questions.resolve_gold`
gives. Model calls are cached on disk by `ChatClient`, so a rerun costs no model time.

A rewrite whose model call failed (rule `llm_error`: server down, HTTP error) is no rewrite: it
is left out of the rewrite arm, its acceptance and rejection shares and every metric, counted
per model, and `run_study` stops (`ModelFailure`) when such failures exceed the allowed share.

`compute` builds and samples the conversations and turns rewrites and searches into tables and
metrics (pure), `run` calls the models and searches the arms (database), `plots` draws the
recall bars, `report` writes the conclusion. The notebook imports this package as
`from citegate.studies.prefloor_recall import followup as fu`; it re-exports `load_set`, which
reads the labeled question set the conversations are built from.
"""

from __future__ import annotations

from citegate.corpus.questions import load_set
from citegate.studies.prefloor_recall.followup.compute import (
    ARMS,
    ELLIPTICAL,
    REWRITE_COLUMNS,
    SAMPLE_SALT,
    Conversation,
    FollowupStudy,
    answered,
    arm_queries,
    candidate_conversations,
    check_model_errors,
    examples,
    gold_ref,
    headline,
    identifiers,
    identifiers_kept,
    is_first_turn,
    is_followup,
    model_notes,
    named_verses,
    names_a_verse,
    names_group,
    paired_vs_raw,
    recall_table,
    rejection_table,
    rewrite_row,
    rewrite_verdicts,
    sample_conversations,
    score_hits,
    yield_table,
)
from citegate.studies.prefloor_recall.followup.plots import plot_recall
from citegate.studies.prefloor_recall.followup.report import conclusion
from citegate.studies.prefloor_recall.followup.run import run_rewrites, run_study, search_arms

__all__ = [
    "ARMS",
    "Conversation",
    "ELLIPTICAL",
    "FollowupStudy",
    "REWRITE_COLUMNS",
    "SAMPLE_SALT",
    "answered",
    "arm_queries",
    "candidate_conversations",
    "check_model_errors",
    "conclusion",
    "examples",
    "gold_ref",
    "headline",
    "identifiers",
    "identifiers_kept",
    "is_first_turn",
    "is_followup",
    "load_set",
    "model_notes",
    "named_verses",
    "names_a_verse",
    "names_group",
    "paired_vs_raw",
    "plot_recall",
    "recall_table",
    "rejection_table",
    "rewrite_row",
    "rewrite_verdicts",
    "run_rewrites",
    "run_study",
    "sample_conversations",
    "score_hits",
    "search_arms",
    "yield_table",
]
