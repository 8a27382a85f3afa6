"""The citation study's checking and tables: each answer's claims against its sources (with the
embedder given), the shuffled control, and the citation, audit and sweep tables and metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import MAX_MODEL_ERROR_SHARE, MODEL_ERROR
from citegate.core.errors import check_model_errors as check_statuses
from citegate.core.types import Status
from citegate.evaluation.metrics import auroc_ci, rate_ci_or_nan
from citegate.studies.fallback_disclaimer.citation.checks import (
    DEFAULT_THRESHOLD,
    validate_citations,
)
from citegate.studies.fallback_disclaimer.citation.tagged import audit_sourced

FORMATS = ("outline", "composed", "fallback")
MAX_SOURCES = 5


@dataclass(frozen=True)
class GroundedItem:
    """An answerable question, the gate's decision, and its final notes with their texts."""

    set: str
    question: Any
    decision: str
    notes: tuple[Any, ...]


@dataclass
class Answer:
    """One answer to check: its text, the sources offered to the model (id -> text), the ids
    counted as retrieved for the audit, and facts of how it was made."""

    model: str
    format: str
    set: str
    qid: str
    language: str
    text: str
    offered: dict[str, str]
    status: str
    dropped: int = 0
    attached: dict[str, str] = field(default_factory=dict)
    group: str = ""  # the question's gold group (verse): the shuffled control avoids it


def outline_answer(outline: Any) -> str:
    """The outline as the answer text checked: one line per thesis with its note numbers (the
    production reply shows the notes' addresses instead; the numbers are what the model chose)."""
    return "\n".join(
        f"- {t} [{', '.join(str(r) for r in refs)}]"
        for t, refs in zip(outline.theses, outline.cited, strict=True)
    )


def check_model_errors(
    answers: Sequence[Answer], max_share: float = MAX_MODEL_ERROR_SHARE
) -> dict[str, int]:
    """Failed grounded calls (outline and composed) per model; `ModelFailure` beyond
    `max_share`. Answers that made no call (the gate bailed out) do not count."""
    statuses: dict[str, list[str]] = {}
    for a in answers:
        if a.format in FORMATS[:2] and a.status != "gate: bail out":
            statuses.setdefault(a.model, []).append(a.status)
    return check_statuses(statuses, max_share, "grounded answer calls")


def _control(answers: Sequence[Answer]) -> list[dict[str, str]]:
    """Each answer's sources swapped for those of the next answer (same model and format) to a
    different question: the shuffled control."""
    out: list[dict[str, str]] = [{} for _ in answers]
    groups: dict[tuple[str, str], list[int]] = {}
    for n, a in enumerate(answers):
        groups.setdefault((a.model, a.format), []).append(n)
    for members in groups.values():
        for pos, n in enumerate(members):
            others = members[pos + 1 :] + members[:pos]
            donor = next((m for m in others if _unrelated(answers[m], answers[n])), None)
            if donor is not None:
                out[n] = answers[donor].offered or answers[donor].attached
    return out


def _unrelated(a: Answer, b: Answer) -> bool:
    """Different questions with different gold groups (when known)."""
    return a.qid != b.qid and (not a.group or a.group != b.group)


def _sources(a: Answer) -> dict[str, str]:
    """What a claim is checked against: the offered sources, or the attached citations."""
    return a.offered or a.attached


def check_answers(
    answers: Sequence[Answer], embedder: Any, threshold: float = DEFAULT_THRESHOLD
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per answer, one row per claim): support, fabricated markers, the audit, and the
    shuffled control's verdicts. Answers without text (bail-outs, failed calls) are counted only."""
    controls = _control(answers)
    rows, claims = [], []
    for a, control in zip(answers, controls, strict=True):
        if not a.text.strip():
            rows.append(_answer_row(a, None, None, None))
            continue
        report = validate_citations(a.text, _sources(a), embedder, threshold)
        shuffled = validate_citations(a.text, control, embedder, threshold) if control else None
        audit = audit_sourced(a.text, a.offered) if a.format == "composed" else None
        rows.append(_answer_row(a, report, shuffled, audit))
        claims += _claim_rows(a, report, shuffled)
    return pd.DataFrame(rows), pd.DataFrame(claims)


def _answer_row(a: Answer, report: Any, shuffled: Any, audit: Any) -> dict[str, Any]:
    """One answer's totals."""
    fabricated = (report.fabricated_markers if report else 0) + a.dropped
    if a.format == "fallback" and report is not None:
        fabricated = sum(len(r.markers) for r in report.rows)
    return {
        "model": a.model,
        "format": a.format,
        "set": a.set,
        "qid": a.qid,
        "language": a.language,
        "status": Status.parse(a.status).kind,
        "answered": report is not None,
        "claims": report.claims if report else 0,
        "cited": report.cited if report else 0,
        "supported": _supported(a, report) if report else 0,
        "shuffled_supported": _supported(a, shuffled) if shuffled else 0,
        "fabricated_markers": fabricated,
        "sources": len(_sources(a)),
        "sourced": audit.sourced if audit else np.nan,
        "inferred": audit.inferred if audit else np.nan,
        "downgraded": audit.downgraded if audit else np.nan,
        "untagged": audit.untagged if audit else np.nan,
        "text": a.text[:400],
    }


def _supported(a: Answer, report: Any) -> int:
    """Supported claims: a cited offered chunk reaches the threshold; for a fallback answer, any
    attached citation does (every claim is implicitly backed by all of them)."""
    if a.format != "fallback":
        return report.supported
    return sum(
        1
        for r in report.rows
        if r.nearest_offered is not None and r.nearest_offered >= report.threshold
    )


def _claim_rows(a: Answer, report: Any, shuffled: Any) -> list[dict[str, Any]]:
    """Per-claim cosines: the claim's best cited (or, for fallback, attached) cosine, and the
    same under the shuffled control."""
    fallback = a.format == "fallback"
    out = []
    for n, r in enumerate(report.rows):
        s = shuffled.rows[n] if shuffled else None
        out.append(
            {
                "model": a.model,
                "format": a.format,
                "language": a.language,
                "qid": a.qid,
                "claim": r.text[:200],
                "status": "attached" if fallback else r.status,
                "cosine": r.nearest_offered if fallback else r.best_cosine,
                "shuffled_cosine": (s.nearest_offered if fallback else s.best_cosine)
                if s
                else None,
            }
        )
    return out


# --------------------------------------------------------------------------- tables


def _support_flags(g: pd.DataFrame, column: str, threshold: float) -> np.ndarray:
    """Supported-or-not of the claims that count: cited claims (fallback: claims of answers with
    attached citations), judged on `column` (real or shuffled cosine)."""
    counted = g[_judged(g)]
    return (counted[column].fillna(-1.0) >= threshold).to_numpy()


def citation_table(
    answers: pd.DataFrame, claims: pd.DataFrame, threshold: float, n_boot: int = 1000
) -> pd.DataFrame:
    """Per model, answer format and language: answers, claims, cited share, supported share (95%
    CI over claims) beside the shuffled control, fabricated markers per answer; failed calls are
    counted under "model errors" and left out of everything else."""
    rows = []
    for (model, fmt, lang), every in answers.groupby(["model", "format", "language"]):
        a = every[every["status"] != MODEL_ERROR]
        c = (
            claims[
                (claims["model"] == model)
                & (claims["format"] == fmt)
                & (claims["language"] == lang)
            ]
            if len(claims)
            else claims
        )
        said = a[a["answered"]]
        flags = _support_flags(c, "cosine", threshold) if len(c) else np.array([], bool)
        shuffled = _support_flags(c, "shuffled_cosine", threshold) if len(c) else np.array([], bool)
        rate, lo, hi = rate_ci_or_nan(flags)
        rows.append(
            {
                "model": model,
                "format": fmt,
                "language": lang,
                "answers": len(a),
                "model errors": len(every) - len(a),
                "with text": len(said),
                "claims": int(said["claims"].sum()),
                "cited share": said["cited"].sum() / said["claims"].sum()
                if said["claims"].sum()
                else np.nan,
                "claims judged": len(flags),
                "supported share": rate,
                "lo": lo,
                "hi": hi,
                "shuffled control": float(shuffled.mean()) if len(shuffled) else np.nan,
                "fabricated markers/answer": said["fabricated_markers"].mean()
                if len(said)
                else np.nan,
                "answers with fabricated": (said["fabricated_markers"] > 0).mean()
                if len(said)
                else np.nan,
            }
        )
    return pd.DataFrame(rows)


AUDIT_COLUMNS = [
    "model",
    "language",
    "answers",
    "claims",
    "tagged SOURCED",
    "downgraded",
    "downgraded share",
    "INFERRED after audit",
    "untagged share",
]


def audit_table(answers: pd.DataFrame) -> pd.DataFrame:
    """The [SOURCED]/[INFERRED] audit of the composed answers, per model and language: claims
    tagged [SOURCED] by the model, how many were downgraded, [INFERRED] after the audit, untagged."""
    said = answers[(answers["format"] == "composed") & answers["answered"]]
    rows = []
    for (model, lang), g in said.groupby(["model", "language"]):
        tagged = g["sourced"].sum() + g["downgraded"].sum()
        rows.append(
            {
                "model": model,
                "language": lang,
                "answers": len(g),
                "claims": int(g["claims"].sum()),
                "tagged SOURCED": int(tagged),
                "downgraded": int(g["downgraded"].sum()),
                "downgraded share": g["downgraded"].sum() / tagged if tagged else np.nan,
                "INFERRED after audit": int(g["inferred"].sum()),
                "untagged share": g["untagged"].sum() / g["claims"].sum()
                if g["claims"].sum()
                else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=AUDIT_COLUMNS)  # columns even when nothing was composed


def threshold_sweep(
    claims: pd.DataFrame, thresholds: Sequence[float], n_boot: int = 1000
) -> pd.DataFrame:
    """Per answer format, pooled over models: the share of judged claims supported at each
    threshold with their real citations and with shuffled ones, and the AUROC of the cosine for
    telling the two apart (claims of one answer resampled together)."""
    rows = []
    for fmt, g in claims.groupby("format") if len(claims) else []:
        judged = g[_judged(g)]
        real = judged["cosine"].fillna(-1.0).to_numpy(float)  # citing only fabricated: never
        fake = judged["shuffled_cosine"].dropna().to_numpy(float)
        auc = np.nan
        if len(real) and len(fake):
            groups = [*judged["qid"], *judged.loc[judged["shuffled_cosine"].notna(), "qid"]]
            auc = auroc_ci(
                np.r_[real, fake],
                np.r_[np.ones(len(real)), np.zeros(len(fake))],
                n_boot=n_boot,
                groups=groups,
            )
        for t in thresholds:
            rows.append(
                {
                    "format": fmt,
                    "threshold": t,
                    "claims": len(real),
                    "supported (cited)": float((real >= t).mean()) if len(real) else np.nan,
                    "supported (shuffled)": float((fake >= t).mean()) if len(fake) else np.nan,
                    "AUROC cited vs shuffled": getattr(auc, "auroc", np.nan),
                    "AUROC lo": getattr(auc, "lower", np.nan),
                    "AUROC hi": getattr(auc, "upper", np.nan),
                }
            )
    return pd.DataFrame(rows)


def _judged(g: pd.DataFrame) -> pd.Series:
    """Claims whose support is judged: cited claims (fallback: claims of answers with attached
    citations)."""
    fallback = g["format"] == "fallback"
    return (fallback & g["cosine"].notna()) | (~fallback & (g["status"] != "uncited"))


def examples(answers: pd.DataFrame, per_group: int = 1) -> pd.DataFrame:
    """A few checked answers per model and format, with their verdict counts."""
    said = answers[answers["answered"]]
    cols = ["model", "format", "language", "claims", "cited", "supported", "fabricated_markers"]
    return said.groupby(["model", "format"]).head(per_group)[[*cols, "text"]]


# --------------------------------------------------------------------------- metrics, conclusion


def headline(
    table: pd.DataFrame, audit: pd.DataFrame, sweep: pd.DataFrame | None = None
) -> dict[str, float]:
    """MLflow metrics, pooled over languages: supported share (and its shuffled control) and
    fabricated markers per answer per model and format; the audit's downgrade share per model;
    per format, the AUROC of the cited cosine against the shuffled one."""
    out: dict[str, float] = {}
    if sweep is not None and len(sweep):
        for fmt, g in sweep.groupby("format"):
            out[f"citation_auroc_vs_shuffled.{fmt}"] = g["AUROC cited vs shuffled"].iloc[0]
    for (model, fmt), g in table.groupby(["model", "format"]):
        w = g["claims judged"]
        if w.sum():
            out[f"supported_claim_share.{model}.{fmt}"] = np.average(
                g["supported share"].fillna(0), weights=w
            )
            out[f"shuffled_supported_share.{model}.{fmt}"] = np.average(
                g["shuffled control"].fillna(0), weights=w
            )
        said = g["with text"]
        if said.sum():
            out[f"fabricated_markers_per_answer.{model}.{fmt}"] = np.average(
                g["fabricated markers/answer"].fillna(0), weights=said
            )
    for model, g in audit.groupby("model"):
        tagged = g["tagged SOURCED"].sum()
        if tagged:
            out[f"sourced_downgrade_share.{model}"] = g["downgraded"].sum() / tagged
    return {k: float(v) for k, v in out.items() if np.isfinite(v)}
