"""Notebook 06's answer tables: each composer's answers, claim by claim, as the claim check saw
them. Pure functions of the answer rows `run.answer_rows` makes (one row per question and
composer); intervals over claims are clustered by question (an answer's claims move together).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import MAX_MODEL_ERROR_SHARE, MODEL_ERROR, check_model_errors
from citegate.evaluation.clustered import cluster_rate_ci
from citegate.evaluation.metrics import rate_ci_or_nan
from citegate.pipeline.claimcheck import AnswerCheck, flag
from citegate.studies.answer_faithfulness.bars import composer_verdict
from citegate.studies.answer_faithfulness.judge import (
    JudgeSummary,
    PairJudgement,
    validator_agreement,
)


@dataclass(frozen=True)
class AnswerRow:
    """One composer's answer to one question: how it went (`outcome`: answered, abstained,
    no_answer, gate, model_error), its texts, and the claim check's verdicts (JSON-able)."""

    composer: str
    qid: str
    question: str
    language: str
    group: str
    outcome: str
    status: str
    abstained: str
    composed: str
    shown: str
    claims: tuple[dict[str, Any], ...]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """Plain values for a table."""
        d = asdict(self)
        d["claims"] = list(self.claims)
        return d


def claim_records(check: AnswerCheck | None) -> tuple[dict[str, Any], ...]:
    """The verdicts of a claim check as records, each with whether its shown line is flagged."""
    if check is None:
        return ()
    return tuple(
        {
            "text": v.text,
            "status": str(v.status),
            "score": v.score,
            "fabricated": len(v.fabricated),
            "flagged": bool(flag(v)),
            "removed": v in check.removed,
        }
        for v in check.verdicts
    )


def answers_frame(rows: Sequence[AnswerRow]) -> pd.DataFrame:
    """One row per answer (its claims counted, not listed)."""
    frame = pd.DataFrame([r.to_dict() for r in rows])
    if len(frame):
        frame["claims"] = [len(r.claims) for r in rows]
    return frame


def claims_frame(rows: Sequence[AnswerRow]) -> pd.DataFrame:
    """One row per claim of an answered question: composer, question, language, verdict."""
    out = [
        {"composer": r.composer, "qid": r.qid, "language": r.language, "group": r.group, **c}
        for r in rows
        if r.outcome == "answered"
        for c in r.claims
    ]
    cols = ["composer", "qid", "language", "group", "text", "status", "score", "fabricated"]
    return pd.DataFrame(out, columns=[*cols, "flagged", "removed"])


def _share(hits: np.ndarray, units: np.ndarray, n_boot: int) -> tuple[float, float, float]:
    """A rate and its 95% interval resampling whole questions (NaN when empty)."""
    if not len(hits):
        return float("nan"), float("nan"), float("nan")
    lo, hi = cluster_rate_ci(hits, units, n_boot)
    return float(hits.mean()), lo, hi


def composer_table(rows: Sequence[AnswerRow], n_boot: int = 1000) -> pd.DataFrame:
    """Per composer and language (and "all"): questions, answered / abstained / model errors,
    claims, the share supported (clustered by question), unsupported, uncited, fabricated
    markers and how many of them were shown unflagged, exact abstentions, seconds p50."""
    frame = pd.DataFrame([r.to_dict() for r in rows])
    claims = claims_frame(rows)
    out = []
    for (composer, lang), part in _by_language(frame):
        c = claims[(claims["composer"] == composer) & claims["qid"].isin(part["qid"])]
        share, lo, hi = _share(
            (c["status"] == "supported").to_numpy(float), c["qid"].to_numpy(), n_boot
        )
        abst = part[part["outcome"] == "abstained"]
        exact = rate_ci_or_nan(abst["abstained"] == "exact")
        shown = c[~c["removed"]]
        out.append(
            {
                "composer": composer,
                "language": lang,
                "questions": len(part),
                "answered": int((part["outcome"] == "answered").sum()),
                "abstained": len(abst),
                "model_errors": int((part["outcome"] == MODEL_ERROR).sum()),
                "claims": len(c),
                "supported_share": share,
                "supported_lo": lo,
                "supported_hi": hi,
                "unsupported": int((c["status"] == "unsupported").sum()),
                "uncited": int((c["status"] == "uncited").sum()),
                "fabricated_markers": int(c["fabricated"].sum()),
                "fabricated_unflagged": int(
                    shown[(shown["fabricated"] > 0) & ~shown["flagged"]]["fabricated"].sum()
                ),
                "abstention_exact": exact[0],
                "seconds_p50": float(part["seconds"].median()) if len(part) else float("nan"),
            }
        )
    return pd.DataFrame(out)


def _by_language(frame: pd.DataFrame) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """(composer, language) groups of the answer rows, then (composer, "all")."""
    groups = []
    for composer, part in frame.groupby("composer", sort=False):
        for lang, sub in part.groupby("language", sort=True):
            groups.append(((str(composer), str(lang)), sub))
        groups.append(((str(composer), "all"), part))
    return groups


def passes_bar(table: pd.DataFrame, composer: str) -> bool:
    """Whether a composer's answers (all languages) pass the composer role's bar
    (`bars.COMPOSER_BAR`: supported share, nothing fabricated shown unflagged, no failed call)."""
    return composer_verdict(table, composer, composer, "").passed


def production_composer(table: pd.DataFrame, preferred: Sequence[str]) -> str:
    """The first composer of `preferred` (generative ones first: they write prose) that passes
    the bar, else "extractive", which is faithful by construction."""
    for name in preferred:
        if passes_bar(table, name):
            return name
    return "extractive"


def judge_table(summary: JudgeSummary) -> pd.DataFrame:
    """The judge's verdict: its position bias (flip rate with its Wilson interval, slot A's
    mean advantage), then, only for a usable judge, each answer name's mean scores and
    wins/ties/losses (an unusable judge's scores are not shown: they measure the slot)."""
    head = {
        "judged pairs": summary.n_pairs,
        "complete": summary.n_complete,
        "decided": summary.n_decided,
        "flip rate": summary.flip_rate,
        "flip lo": summary.flip_ci[0],
        "flip hi": summary.flip_ci[1],
        "slot A advantage": summary.a_advantage,
        "verdict": summary.verdict,
        "model errors": sum(summary.errors.values()),
    }
    if not summary.per_name:
        return pd.DataFrame([{"answer": "(no averaged scores)", **head}])
    return pd.DataFrame(
        [
            {
                "answer": n.name,
                **n.means,
                "wins": n.wins,
                "ties": n.ties,
                "losses": n.losses,
                **head,
            }
            for n in summary.per_name.values()
        ]
    )


def judge_agreement(judgements: Sequence[PairJudgement], rows: Sequence[AnswerRow]) -> float:
    """Spearman correlation between the judge's faithfulness score of each judged answer (both
    orders averaged) and the share of its claims the claim check supports (NaN when too few)."""
    share = {
        (r.composer, r.question): float(np.mean([c["status"] == "supported" for c in r.claims]))
        for r in rows
        if r.claims
    }
    judged, supported = [], []
    for pair in judgements:
        for name in pair.names:
            faith = pair.mean_scores(name).get("faithfulness")
            if faith is not None and (name, pair.question) in share:
                judged.append(faith)
                supported.append(share[(name, pair.question)])
    return validator_agreement(judged, supported)


def check_errors(
    rows: Sequence[AnswerRow],
    judgements: Sequence[PairJudgement],
    judge: str,
    max_share: float = MAX_MODEL_ERROR_SHARE,
) -> dict[str, int]:
    """Failed calls per composer (its answers the gate let through) and of the judge (each
    order of each pair); `ModelFailure` when any share exceeds `max_share`: an outage is no
    composer or judge behaviour, so the run fails instead of scoring it."""
    statuses: dict[str, list[str]] = {}
    for r in rows:
        if r.outcome != "gate":
            statuses.setdefault(r.composer, []).append(r.status)
    for pair in judgements:
        statuses.setdefault(f"judge {judge}", []).extend(o.status for o in pair.orders)
    return check_model_errors(statuses, max_share, "calls")


__all__ = [
    "answers_frame",
    "check_errors",
    "judge_agreement",
    "judge_table",
    "AnswerRow",
    "claim_records",
    "claims_frame",
    "composer_table",
    "passes_bar",
    "production_composer",
]
