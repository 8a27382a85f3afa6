"""The bars notebooks 01 and 06 judge their roles by: the follow-up rewrite's (accept rate and
recall above searching as written), the query planner's (plans parsed, offline hits kept), the
composer's (supported share's interval, nothing fabricated unflagged, no failed call) and the
judge's (position bias); a failed call is never scored; each verdict is written, tabled and
stated from its values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from citegate.core.errors import MODEL_ERROR
from citegate.core.verdicts import VERDICTS_DIR, read_verdict
from citegate.evaluation.metrics.operation import rate_ci
from citegate.research.models import role_model_id
from citegate.research.verdicts import (
    save_verdicts,
    verdict_metrics,
    verdict_sentences,
    verdict_table,
)
from citegate.studies.answer_faithfulness.bars import composer_verdict, judge_verdict
from citegate.studies.answer_faithfulness.judge import JudgeSummary
from citegate.studies.prefloor_recall.followup.compute import rewrite_verdicts
from citegate.studies.prefloor_recall.planner import planner_table, planner_verdicts

LOCAL = role_model_id("smollm2-135m")


def followup_frames(accepted: int, rewrite_hits: int, raw_hits: int, n: int = 40):
    """n conversations: raw finds `raw_hits`, the model's rewrites `rewrite_hits`, and the
    validator accepted `accepted` of its rewrites; one more call failed."""
    results = pd.DataFrame(
        [{"arm": "raw", "model": "", "conversation": i, "hit": i < raw_hits} for i in range(n)]
        + [
            {"arm": "rewrite", "model": "smollm2-135m", "conversation": i, "hit": i < rewrite_hits}
            for i in range(n)
        ]
    )
    rewrites = pd.DataFrame(
        [{"model": "smollm2-135m", "accepted": i < accepted, "rule": "ok"} for i in range(n)]
        + [{"model": "smollm2-135m", "accepted": False, "rule": MODEL_ERROR}]
    )
    return results, rewrites


def test_rewrite_bar_needs_accepted_rewrites_that_beat_raw() -> None:
    (good,) = rewrite_verdicts(*followup_frames(40, 38, 20), "run-a")
    assert good.passed and good.model == LOCAL and good.role == "rewrite"
    errors = next(c for c in good.criteria if c.name == "model_errors")
    assert errors.n == 41 and errors.passed is None  # the failed call is shown, never scored
    (same,) = rewrite_verdicts(*followup_frames(40, 20, 20), "run-a")
    assert not same.passed and "recall" in same.why_not()  # no better than as written
    (rejected,) = rewrite_verdicts(*followup_frames(0, 20, 20), "run-a")
    assert "rewrites the validator accepts: 0% of 40" in rejected.why_not()


def planner_rows(planned: int, kept: int, offline_hits: int = 30, n: int = 40) -> pd.DataFrame:
    rows = []
    for i in range(n):
        offline = i < offline_hits
        rows.append(
            {
                "model": "smollm2-135m",
                "question": f"q{i}",
                "language": "en",
                "status": "ok" if i < planned else "parse_failure: no JSON",
                "subquestions": 2,
                "offline_hit": offline,
                "plan_hit": offline and i < kept,
            }
        )
    rows.append({**rows[0], "question": "failed", "status": f"{MODEL_ERROR}: refused"})
    return pd.DataFrame(rows)


def test_planner_bar_keeps_what_the_question_alone_finds() -> None:
    (good,) = planner_verdicts(planner_rows(40, 30), "run-b")
    assert good.passed and good.role == "planner"
    (lossy,) = planner_verdicts(planner_rows(40, 20), "run-b")
    assert not lossy.passed and "gold verses the offline plan finds" in lossy.why_not()
    (unparsed,) = planner_verdicts(planner_rows(10, 30), "run-b")
    assert not unparsed.passed and "planned" in unparsed.why_not()
    table = planner_table(planner_rows(40, 20))
    row = table.iloc[0]
    assert row["model errors"] == 1 and row["losses"] == 10 and row["questions"] == 41


def composer_row(share: float, lo: float, fabricated: int = 0, errors: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "composer": "generative:smollm2-135m",
                "language": "all",
                "questions": 40,
                "answered": 36,
                "claims": 120,
                "supported_share": share,
                "supported_lo": lo,
                "supported_hi": min(1.0, share + 0.02),
                "fabricated_unflagged": fabricated,
                "model_errors": errors,
            }
        ]
    )


def test_composer_bar_reads_the_interval_not_the_point() -> None:
    name = "generative:smollm2-135m"
    assert composer_verdict(composer_row(0.97, 0.93), name, LOCAL, "r").passed
    assert not composer_verdict(composer_row(0.97, 0.88), name, LOCAL, "r").passed
    unflagged = composer_verdict(composer_row(0.99, 0.97, fabricated=1), name, LOCAL, "r")
    assert "fabricated markers shown unflagged: 1 of 120, must be none" in unflagged.why_not()
    assert not composer_verdict(composer_row(0.99, 0.97, errors=2), name, LOCAL, "r").passed
    missing = composer_verdict(composer_row(0.99, 0.97), "extractive", LOCAL, "r")
    assert not missing.passed and "not measured" in missing.why_not()


def summary(flips: int, decided: int, complete: int, pairs: int) -> JudgeSummary:
    rate, lo, hi = rate_ci([True] * flips + [False] * (decided - flips))
    return JudgeSummary(
        pairs, complete, decided, 0, flips, rate, (lo, hi), 0.0, 0.2, True, "usable"
    )


def test_judge_bar_is_its_position_bias() -> None:
    assert judge_verdict(summary(1, 40, 40, 40), LOCAL, "r").passed
    biased = judge_verdict(summary(40, 40, 40, 40), LOCAL, "r")
    assert not biased.passed and "winner follows the slot: 100% of 40" in biased.why_not()
    assert not judge_verdict(summary(0, 40, 20, 40), LOCAL, "r").passed


def test_verdicts_are_written_tabled_and_stated(tmp_path: Path) -> None:
    verdicts = [
        *rewrite_verdicts(*followup_frames(40, 38, 20), "run-a"),
        *planner_verdicts(planner_rows(10, 30), "run-a"),
    ]
    paths = save_verdicts(tmp_path, verdicts)
    assert [p.parent.name for p in paths] == [VERDICTS_DIR, VERDICTS_DIR]
    assert [read_verdict(p) for p in paths] == verdicts
    table = verdict_table(verdicts)
    assert set(table["role"]) == {"rewrite", "planner"} and len(table) == 6
    assert verdict_metrics(verdicts) == {
        f"rewrite_bar_passed.{LOCAL}": 1.0,
        f"planner_bar_passed.{LOCAL}": 0.0,
    }
    text = verdict_sentences(verdicts)
    assert f"**{LOCAL}** passed the rewrite bar" in text
    assert f"**{LOCAL}** failed the planner bar: questions the model planned" in text
    assert json.loads(paths[0].read_text())["passed"] is True
    assert np.isfinite(table["value"].dropna()).all()
