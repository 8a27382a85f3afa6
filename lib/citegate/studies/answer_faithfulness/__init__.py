"""Notebook 06, answer faithfulness: the claim validator on a labeled claim set, each composer's
answers through the claim check, and the blind pairwise judge.

`validator` scores the labeled claim set (`corpus.claims`) in each support mode, chooses the mode
on the tune part and certifies its threshold (`compute`: AUROCs, the certificate, its test
realisation; `pair_scores` scores aligned claim and note pairs, the hand-audited generated claims
too); `run` answers the answerable test questions with each composer through the code a turn runs
and asks the blind judge (`judge`: both orders, its position bias measured); `answers` turns the
answer rows into tables (pure); `tables` makes the validator's frames, the metrics a run logs and
the conclusion; `report` writes the prose and draws the figures; `artifacts` writes the
recommendation `citegate promote` reads. The notebook imports this package as
`from citegate.studies import answer_faithfulness as af`: it is the notebook's one facade, and
re-exports every name the notebook uses, the claim set's loaders and the grounded questions of
notebook 04's citation part among them.
"""

from __future__ import annotations

from citegate.corpus.audited_claims import load_audited
from citegate.corpus.claims import build_claims
from citegate.research.study import production_base
from citegate.research.verdicts import report_verdicts
from citegate.studies.answer_faithfulness.answers import (
    answers_frame,
    check_errors,
    claims_frame,
    composer_table,
    judge_agreement,
    judge_table,
    production_composer,
)
from citegate.studies.answer_faithfulness.artifacts import save_recommendation
from citegate.studies.answer_faithfulness.bars import role_verdicts
from citegate.studies.answer_faithfulness.judge import judge_summary
from citegate.studies.answer_faithfulness.report import (
    composer_lines,
    config_table,
    examples,
    judge_line,
    mode_line,
    plot_composers,
    plot_scores,
)
from citegate.studies.answer_faithfulness.run import (
    EXTRACTIVE,
    answer_rows,
    answerable_test,
    first_per_language,
    judge_pairs,
)
from citegate.studies.answer_faithfulness.tables import (
    answer_metrics,
    audit_frame,
    audit_metrics,
    certificate_frame,
    conclusion,
    mode_frame,
    realised_frame,
    roc_frame,
    validator_metrics,
)
from citegate.studies.answer_faithfulness.validator import (
    choose_mode,
    mode_table,
    pair_scores,
    score_pairs,
    validate,
)
from citegate.studies.fallback_disclaimer.citation.run import grounded_items
from citegate.studies.fallback_disclaimer.run import record_questions

__all__ = [
    "EXTRACTIVE",
    "answer_metrics",
    "answer_rows",
    "answerable_test",
    "answers_frame",
    "audit_frame",
    "audit_metrics",
    "build_claims",
    "certificate_frame",
    "check_errors",
    "choose_mode",
    "claims_frame",
    "composer_lines",
    "composer_table",
    "conclusion",
    "config_table",
    "examples",
    "first_per_language",
    "grounded_items",
    "judge_agreement",
    "judge_line",
    "judge_pairs",
    "judge_summary",
    "judge_table",
    "load_audited",
    "mode_frame",
    "mode_line",
    "mode_table",
    "pair_scores",
    "plot_composers",
    "plot_scores",
    "production_base",
    "production_composer",
    "realised_frame",
    "record_questions",
    "report_verdicts",
    "roc_frame",
    "role_verdicts",
    "save_recommendation",
    "score_pairs",
    "validate",
    "validator_metrics",
]
