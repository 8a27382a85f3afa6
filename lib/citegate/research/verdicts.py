"""What a notebook does with the role verdicts it measured: writes each into its run folder
(`verdicts/verdict-<role>-<digest12>.json`, what `citegate models adopt` reads), shows them as a
table (one row per criterion), logs `<role>_bar_passed.<model>` metrics, and says in a sentence
computed from them which model passed which bar and why not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from citegate.core.verdicts import VERDICTS_DIR, RoleVerdict, write_verdict

VERDICT_COLUMNS = [
    "role",
    "model",
    "criterion",
    "label",
    "value",
    "ci95 low",
    "ci95 high",
    "n",
    "threshold",
    "rule",
    "required",
    "passed",
    "reason",
]


@dataclass(frozen=True)
class VerdictReport:
    """What a notebook records of its verdicts: the files written into its run folder, the
    table, the metrics and the sentences."""

    paths: list[Path]
    table: pd.DataFrame
    metrics: dict[str, float]
    text: str


def report_verdicts(run_dir: Any, verdicts: Sequence[RoleVerdict]) -> VerdictReport:
    """Write the verdicts into the run folder and make their table, metrics and sentences."""
    return VerdictReport(
        save_verdicts(run_dir, verdicts),
        verdict_table(verdicts),
        verdict_metrics(verdicts),
        verdict_sentences(verdicts),
    )


def save_verdicts(run_dir: Any, verdicts: Sequence[RoleVerdict]) -> list[Path]:
    """Write every verdict into the run folder's verdicts/ (by digest); returns the paths."""
    folder = Path(run_dir) / VERDICTS_DIR
    return [write_verdict(folder, v) for v in verdicts]


def verdict_table(verdicts: Sequence[RoleVerdict]) -> pd.DataFrame:
    """One row per role, model and criterion: the value, its 95% interval, n, threshold, rule,
    whether it is required, passed, and why not."""
    rows = [
        {
            "role": v.role,
            "model": v.model,
            "criterion": c.name,
            "label": c.label,
            "value": c.value,
            "ci95 low": c.ci95[0],
            "ci95 high": c.ci95[1],
            "n": c.n,
            "threshold": c.threshold,
            "rule": c.rule,
            "required": c.required,
            "passed": c.passed,
            "reason": c.reason,
        }
        for v in verdicts
        for c in v.criteria
    ]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def verdict_metrics(verdicts: Sequence[RoleVerdict]) -> dict[str, float]:
    """`<role>_bar_passed.<model>`: 1.0 when the model passed the role's bar, else 0.0."""
    return {f"{v.role}_bar_passed.{v.model}": float(v.passed) for v in verdicts}


def verdict_sentences(verdicts: Sequence[RoleVerdict]) -> str:
    """One sentence per verdict, from its values: which bar the model passed, or which
    criteria it failed and by how much (`RoleVerdict.why_not`)."""
    if not verdicts:
        return "_No model was measured, so no verdict was written: the role keeps its offline default._"
    lines = []
    for v in verdicts:
        if v.passed:
            lines.append(f"- **{v.model}** passed the {v.role} bar.")
        else:
            lines.append(f"- **{v.model}** failed the {v.role} bar: {v.why_not()}.")
    return "\n".join(lines)


__all__ = [
    "VERDICT_COLUMNS",
    "VerdictReport",
    "report_verdicts",
    "save_verdicts",
    "verdict_metrics",
    "verdict_sentences",
    "verdict_table",
]
