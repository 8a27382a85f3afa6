"""Notebook 06's tables, headline metrics and conclusion: the validator's rows (modes, ROC,
certificate, test realisation) as frames, the metrics a run logs, and the prose whose every
factual sentence is chosen by the value it states."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from citegate.corpus.audited_claims import AuditedClaim
from citegate.evaluation import metrics as M
from citegate.evaluation.certify import Certified, CertifiedKinds
from citegate.studies.answer_faithfulness.answers import passes_bar
from citegate.studies.answer_faithfulness.compute import RealisedRow, RocRow, ValidatorReport
from citegate.studies.answer_faithfulness.validator import ModeRow

GOAL_AUROC = 0.90  # the validator must separate supported from unsupported claims this well


def roc_frame(rows: Sequence[RocRow]) -> pd.DataFrame:
    """One row per slice: pairs, groups, AUROC with its clustered and iid intervals."""
    return pd.DataFrame(
        [
            {
                "slice": r.slice.name,
                "supported": r.n_pos,
                "unsupported": r.n_neg,
                "groups": r.n_groups,
                "auroc": r.auroc,
                "lo (by group)": r.lower,
                "hi (by group)": r.upper,
                "lo (iid)": r.lower_iid,
                "hi (iid)": r.upper_iid,
            }
            for r in rows
        ]
    )


def mode_frame(rows: Sequence[ModeRow]) -> pd.DataFrame:
    """Modes x slices of the tune part (corpus and language pairs; the families are in the ROC
    table): the AUROC each support mode reaches."""
    frame = pd.DataFrame(
        [
            {"mode": r.mode, "slice": r.row.slice.name, "auroc": r.row.auroc}
            for r in rows
            if r.row.slice.family == "*"
        ]
    )
    order = list(dict.fromkeys(frame["slice"]))
    wide = frame.pivot(index="mode", columns="slice", values="auroc")[order]
    return wide.rename_axis(columns=None).reset_index()


def certificate_frame(cert: Certified | CertifiedKinds) -> pd.DataFrame:
    """One row per corpus certified (or one pooled row): its threshold alone, false supports
    and Clopper-Pearson bound at the kept threshold, alpha and the confidence."""
    kinds = cert.per_kind if isinstance(cert, CertifiedKinds) else {"pooled": cert}
    own = cert.kind_thresholds if isinstance(cert, CertifiedKinds) else {}
    return pd.DataFrame(
        [
            {
                "corpus": k,
                "threshold (kept)": cert.threshold,
                "threshold (alone)": own.get(k, c.threshold),
                "tune negatives": c.n_neg,
                "false supports": c.false_answers,
                "bound": c.bound,
                "alpha": c.alpha,
                "confidence": 1 - c.delta,
                "feasible": c.feasible,
            }
            for k, c in kinds.items()
        ]
    )


def realised_frame(rows: Sequence[RealisedRow]) -> pd.DataFrame:
    """The certified threshold on the test part, per slice."""
    return pd.DataFrame(
        [
            {
                "slice": r.slice.name,
                "unsupported": r.n_neg,
                "false supports": r.false_supports,
                "false-support rate": r.false_support_rate,
                "lo (Wilson)": r.fsr_lower,
                "hi (Wilson)": r.fsr_upper,
                "hi (by group)": r.fsr_cluster_upper,
                "supported": r.n_pos,
                "kept": r.kept,
                "recall": r.recall,
                "recall lo": r.recall_lower,
                "recall hi": r.recall_upper,
            }
            for r in rows
        ]
    )


def audit_frame(audited: Sequence[AuditedClaim], scores: Any, threshold: float) -> pd.DataFrame:
    """The hand-audited generated claims at `threshold`, per language and all: supported claims
    kept (recall) and unsupported ones passed (false supports), with Wilson intervals."""
    frame = pd.DataFrame(
        {
            "language": [a.language for a in audited],
            "label": [a.label for a in audited],
            "passed": [float(s) >= threshold for s in scores],
        }  # fmt: skip
    )
    rows = []
    for lang, part in [*frame.groupby("language", sort=True), ("all", frame)]:
        pos, neg = part[part["label"] == 1], part[part["label"] == 0]
        fsr = M.rate_ci_or_nan(neg["passed"])
        rec = M.rate_ci_or_nan(pos["passed"])
        rows.append(
            {
                "language": lang,
                "supported (audit)": len(pos),
                "kept": int(pos["passed"].sum()),
                "recall": rec[0],
                "unsupported (audit)": len(neg),
                "false supports": int(neg["passed"].sum()),
                "false-support rate": fsr[0],
                "lo (Wilson)": fsr[1],
                "hi (Wilson)": fsr[2],
            }
        )
    return pd.DataFrame(rows)


def _key(name: str) -> str:
    """A slice name as a metric suffix: `xquad ru->en` -> `xquad.ru_en`."""
    return name.replace("->", "_").replace(" ", ".")


def validator_metrics(report: ValidatorReport) -> dict[str, float]:
    """Test AUROC per slice (not per family), the certified threshold and each corpus's bound,
    the test false-support rate and recall overall and per corpus."""
    out: dict[str, float] = {"support_threshold": float(report.certified.threshold)}
    for r in report.roc:
        if r.slice.family == "*":
            out["validator_auroc" + ("" if r.slice.name == "all" else f".{_key(r.slice.name)}")] = (
                r.auroc
            )
    kinds = report.certified.per_kind if isinstance(report.certified, CertifiedKinds) else {}
    for k, c in kinds.items():
        out[f"certified_bound.{k}"] = c.bound
    out["certified_feasible"] = float(report.certified.feasible)
    for r in report.realised:
        if r.slice.family == "*" and r.slice.language == "*":
            tail = "" if r.slice.name == "all" else f".{_key(r.slice.name)}"
            out["false_support_rate.test" + tail] = r.false_support_rate
            out["supported_recall.test" + tail] = r.recall
    return {k: v for k, v in out.items() if math.isfinite(v)}


def audit_metrics(audit: pd.DataFrame) -> dict[str, float]:
    """The audited sample's false-support rate and recall over all languages."""
    r = audit[audit["language"] == "all"].iloc[0]
    out = {"audit_false_support_rate": r["false-support rate"], "audit_recall": r["recall"]}
    return {k: float(v) for k, v in out.items() if math.isfinite(float(v))}


def answer_metrics(table: pd.DataFrame, judge: pd.DataFrame | None) -> dict[str, float]:
    """Per composer (all languages and each language): supported share, claims, fabricated
    markers shown unflagged, exact abstentions, model errors; the judge's flip rate."""
    out: dict[str, float] = {}
    for r in table.to_dict("records"):
        tail = r["composer"] + ("" if r["language"] == "all" else f".{r['language']}")
        for name in ("supported_share", "fabricated_unflagged", "abstention_exact", "claims"):
            value = float(r[name])
            if math.isfinite(value):
                out[f"{name}.{tail}"] = value
    if judge is not None and len(judge) and math.isfinite(float(judge["flip rate"].iloc[0])):
        out["judge_flip_rate"] = float(judge["flip rate"].iloc[0])
    return out


def conclusion(
    report: ValidatorReport,
    mode: str,
    table: pd.DataFrame,
    chosen: str,
    judge: pd.DataFrame | None,
    audit: pd.DataFrame | None = None,
) -> str:
    """Markdown conclusion: the validator against its goal, the certificate, the test cost in
    recall, the composer recommended, and what the judge may be trusted with."""
    m = validator_metrics(report)
    auroc = m.get("validator_auroc", float("nan"))
    cert = report.certified
    met = "meets" if auroc >= GOAL_AUROC else "misses"
    lines = [
        "## Conclusion",
        "",
        f"- The claim check in mode `{mode}` separates supported from unsupported claims with "
        f"test AUROC {auroc:.3f}: it {met} the goal of {GOAL_AUROC:.2f}.",
        f"- Certified on the tune part: threshold {cert.threshold:.4f} keeps the false-support "
        f"rate's exact bound at or under {cert.alpha:g} for every corpus"
        if cert.feasible
        else f"- No threshold could be certified to a false-support rate of {cert.alpha:g}: "
        "the recommendation is refused by the promotion's certificate guard.",
        f"- On the test part it lets {m.get('false_support_rate.test', float('nan')):.1%} of "
        f"unsupported claims pass and keeps {m.get('supported_recall.test', float('nan')):.1%} "
        "of supported ones: a faithful paraphrase the embedder scores lower is flagged, never "
        "an unsupported claim shown as supported beyond the certified rate.",
    ]
    if audit is not None and len(audit):
        a = audit[audit["language"] == "all"].iloc[0]
        lines.append(
            f"- On {a['unsupported (audit)'] + a['supported (audit)']} claims the local model "
            f"wrote, audited by hand: {a['false supports']} of {a['unsupported (audit)']} "
            f"unsupported ones pass ({a['false-support rate']:.1%}, Wilson 95% up to "
            f"{a['hi (Wilson)']:.1%}), {a['kept']} of {a['supported (audit)']} supported ones "
            "are kept."
        )
    verdict = "passes" if passes_bar(table, chosen) else "does not pass"
    lines.append(f"- Production's composer: **{chosen}**; at this threshold it {verdict} the bar.")
    if judge is not None and len(judge):
        lines.append(f"- The judge: {judge['verdict'].iloc[0]}.")
    return "\n".join(lines)


def as_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as JSON-able records (for recommendation.json)."""
    return frame.to_dict("records")


__all__ = [
    "GOAL_AUROC",
    "answer_metrics",
    "audit_frame",
    "audit_metrics",
    "as_records",
    "certificate_frame",
    "conclusion",
    "mode_frame",
    "realised_frame",
    "roc_frame",
    "validator_metrics",
]
