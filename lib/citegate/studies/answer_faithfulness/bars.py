"""Notebook 06's role bars: the generative composer's (`COMPOSER_BAR`, from its answers checked
claim by claim) and the pairwise judge's (`JUDGE_BAR`, from its position bias), each judged into
a `RoleVerdict` per model. Pure functions of the composer table (`answers.composer_table`) and
the judge's summary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from citegate.core.verdicts import VERDICT_NOTEBOOKS, RoleVerdict
from citegate.evaluation.bars import Criterion, judge, judge_rate, verdict
from citegate.research.models import role_model_id
from citegate.studies.answer_faithfulness.judge import JudgeSummary

NAN = math.nan
# The composer's bar. Its claims must be supported by the notes they cite: the lower bound of
# the share supported at the certified threshold (95% interval resampled by question, since an
# answer's claims move together) above SUPPORTED_LOW; no fabricated marker ([SOURCED] on a claim
# no note supports) may be shown unflagged, and no call may fail.
SUPPORTED_LOW = 0.90
COMPOSER_BAR = (
    Criterion("supported_share", "claims supported by their notes", SUPPORTED_LOW, "ci_low>"),
    Criterion("fabricated_unflagged", "fabricated markers shown unflagged", 0.0, "none"),
    Criterion("model_errors", "answers whose call failed", 0.0, "none"),
    Criterion("answered_share", "questions answered", 0.0, "info", required=False),
)
# The judge's bar: its preference must not follow the slot (the share of decided pairs whose
# winner changes with the order, Wilson 95% high at most MAX_FLIP), and it must give a complete
# verdict in both orders for most pairs.
MAX_FLIP = 0.2
COMPLETE_MIN = 0.8
JUDGE_BAR = (
    Criterion(
        "flip_rate", "decided pairs whose winner follows the slot", MAX_FLIP, "wilson_high<="
    ),
    Criterion("complete_rate", "pairs judged in both orders", COMPLETE_MIN, "wilson_low>="),
)


def composer_verdict(table: pd.DataFrame, composer: str, model: str, run: str) -> RoleVerdict:
    """The composer role's verdict on `model` from its row of `table` over every language (a
    composer with no row or no claim is unmeasured, so it fails)."""
    supported, fabricated, errors, answered = COMPOSER_BAR
    row = table[(table["composer"] == composer) & (table["language"] == "all")]
    if row.empty:
        lines = [judge(c, NAN, NAN, NAN, 0) for c in COMPOSER_BAR]
    else:
        r = row.iloc[0]
        claims, questions = int(r["claims"]), int(r["questions"])
        lines = [
            judge(supported, r["supported_share"], r["supported_lo"], r["supported_hi"], claims),
            judge(fabricated, float(r["fabricated_unflagged"]), NAN, NAN, claims),
            judge(errors, float(r["model_errors"]), NAN, NAN, questions),
            judge(answered, r["answered"] / questions if questions else NAN, NAN, NAN, questions),
        ]
    return verdict("composer", model, VERDICT_NOTEBOOKS["composer"], run, lines)


def judge_verdict(summary: JudgeSummary, model: str, run: str) -> RoleVerdict:
    """The judge role's verdict on `model` from its summary over the judged pairs."""
    flip, complete = JUDGE_BAR
    lines = [
        judge(flip, summary.flip_rate, *summary.flip_ci, summary.n_decided),
        judge_rate(complete, [True] * summary.n_complete + [False] * (summary.n_pairs - summary.n_complete)),
    ]  # fmt: skip
    return verdict("judge", model, VERDICT_NOTEBOOKS["judge"], run, lines)


def role_verdicts(
    table: pd.DataFrame,
    summary: JudgeSummary | None,
    composers: Sequence[str],
    judge_model: str,
    run: str,
) -> list[RoleVerdict]:
    """The composer verdict of every generative composer in `table` (`generative:<model>`), and
    the judge's when it judged (`summary`), each on the id a config's role field runs the model
    as (`research.models.role_model_id`)."""
    out = [
        composer_verdict(table, name, role_model_id(name.partition(":")[2]), run)
        for name in composers
        if name.startswith("generative:") and name in set(table["composer"])
    ]
    if summary is not None and summary.n_pairs:
        out.append(judge_verdict(summary, role_model_id(judge_model), run))
    return out


__all__ = ["COMPOSER_BAR", "JUDGE_BAR", "composer_verdict", "judge_verdict", "role_verdicts"]
