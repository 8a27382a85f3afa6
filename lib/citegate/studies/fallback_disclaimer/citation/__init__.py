"""Notebook 04, second part: are the claims of an answer supported by what it cites?

Three kinds of answer are checked with `checks.validate_citations` (claims split per sentence,
claims and chunks embedded in one batched call each, a claim is supported when a cited chunk
reaches the cosine threshold; markers naming a source never offered are fabricated):

- `outline`: the production grounded reply. The model picks note numbers per thesis; the parser
  drops numbers no note carries (counted here as fabricated markers).
- `composed`: the related design. The model writes prose over numbered sources, citing `[n]` and
  tagging sentences [SOURCED]/[INFERRED] (`tagged.compose`); `tagged.audit_sourced` downgrades
  [SOURCED] claims that cite nothing retrieved.
- `fallback`: a fallback answer. It was offered no source, so every marker it writes is
  fabricated; its probes' admitted hits are attached as optional citations, and a claim counts as
  supported when one of them reaches the threshold.

A shuffled control repeats the support test with the cited numbers pointing at ANOTHER question's
sources: a threshold that passes those as often as the real ones does not separate support from
topical similarity.

A grounded answer whose model call failed (status `llm_error`) is no answer of the model's: it is
counted in the table's "model errors" column and left out of every count and rate, and
`check_model_errors` stops the run when such failures exceed the allowed share.

`run` retrieves the grounded questions' notes and asks the models (database, models), `checks`
and `tagged` hold the related design's citation check, writer and audit (no turn runs them),
`compute` checks the answers against their sources with a given embedder and makes the tables
and metrics, `plots` draws the support histogram, `report` writes the conclusion. The notebook
imports this package as `from citegate.studies.fallback_disclaimer import citation as cs`.
"""

from __future__ import annotations

from citegate.studies.fallback_disclaimer.citation.compute import (
    AUDIT_COLUMNS,
    FORMATS,
    MAX_SOURCES,
    Answer,
    GroundedItem,
    audit_table,
    check_answers,
    check_model_errors,
    citation_table,
    examples,
    headline,
    outline_answer,
    threshold_sweep,
)
from citegate.studies.fallback_disclaimer.citation.plots import plot_support
from citegate.studies.fallback_disclaimer.citation.report import conclusion
from citegate.studies.fallback_disclaimer.citation.run import (
    answer_item,
    fallback_answers,
    grounded_items,
    hydrate,
    run_grounded,
)

__all__ = [
    "AUDIT_COLUMNS",
    "Answer",
    "FORMATS",
    "GroundedItem",
    "MAX_SOURCES",
    "answer_item",
    "audit_table",
    "check_answers",
    "check_model_errors",
    "citation_table",
    "conclusion",
    "examples",
    "fallback_answers",
    "grounded_items",
    "headline",
    "hydrate",
    "outline_answer",
    "plot_support",
    "run_grounded",
    "threshold_sweep",
]
