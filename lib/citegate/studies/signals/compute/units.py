"""Experiment 05's certificate over independent units, beside the per-question one.

The per-question certificate (`certified.certified_points`) counts calibration negatives as
independent questions; questions written about one verse (gita) or one article (xquad) are not.
Here every gate is certified again with the question GROUP as the exchangeable unit
(`certified.certified_points(..., per_group=True)`, which passes `units=` to
`evaluation.certify`): a group counts once, as a false answer when any of its negative
questions is answered. The assumption, stated once for the report: calibration groups are
exchangeable with the groups production meets; questions inside a group may depend on each other
in any way. `levels_table` sets both certificates side by side on the test split and `unit_lines`
turns them into computed report sentences (their MLflow metrics: `report.certified_metrics` with
the suffix `UNIT`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from citegate.studies.signals.compute.contrasts import ALL, RAW
from citegate.studies.signals.compute.fit import PRODUCTION_GATE
from citegate.studies.signals.compute.frame import NEGATIVES
from citegate.studies.signals.compute.sensitivity import min_clean_n

ASSUMPTION = (
    "The per-unit certificate treats each question group (a gita verse, an XQuAD article) as "
    "one exchangeable unit, answered falsely when any of its negative questions is answered; "
    "questions inside a group may depend on each other in any way."
)
UNIT = "_unit"  # metric-name suffix of the per-unit certificate


_KEEP = ["threshold", "bound", "n_neg cal", "answer rate", "false-answer rate", "FA high"]


def levels_table(by_question: pd.DataFrame, by_unit: pd.DataFrame) -> pd.DataFrame:
    """Per corpus, gate, α and kind (raw labels, every language): the per-question and the
    per-unit certificate side by side (threshold, bound on tune and n it rests on: questions or
    units; answer rate and realised false-answer rate on test, with the Wilson upper end)."""
    keys = ["corpus", "gate", "alpha", "delta", "negatives"]

    def part(t: pd.DataFrame, level: str) -> pd.DataFrame:
        sub = t[(t["labels"] == RAW) & (t["language"] == ALL)]
        return sub[keys + _KEEP].rename(columns={c: f"{c} ({level})" for c in _KEEP})

    if by_question.empty or by_unit.empty:
        return pd.DataFrame()
    return part(by_question, "question").merge(part(by_unit, "unit"), on=keys, how="inner")


def unit_lines(levels: pd.DataFrame, alpha: float, negative: str = NEGATIVES[0]) -> list[str]:
    """The assumption, then one computed sentence per corpus for the production gate at α: what
    each certificate allows, and how many independent units the per-unit one rests on."""
    if levels.empty:
        return []
    sel = levels[
        (levels["gate"] == PRODUCTION_GATE)
        & np.isclose(levels["alpha"], alpha)
        & (levels["negatives"] == negative)
    ]
    lines = [ASSUMPTION]
    for r in sel.to_dict("records"):
        kinds = levels.loc[levels["corpus"] == r["corpus"], "negatives"].nunique()
        lines.append(
            f"- **{r['corpus']}**, {PRODUCTION_GATE} vs {negative} at α = {alpha:g}: "
            + _level_text(r, "question", "questions", alpha)
            + "; "
            + _level_text(r, "unit", "question groups", alpha)
            + f" (a bound ≤ α needs at least {min_clean_n(alpha, r['delta'] / kinds)} units even "
            "with no false answer)."
        )
    return lines


def _level_text(r: Mapping[str, object], level: str, units: str, alpha: float) -> str:
    """One certificate's clause of a `unit_lines` sentence: certified or not, its bound and n."""
    bound = float(r[f"bound ({level})"])  # type: ignore[arg-type]
    ok = bound <= alpha + 1e-12
    answers = (
        f"test answer rate {float(r[f'answer rate ({level})']):.3f}"  # type: ignore[arg-type]
        if ok
        else "so the gate answers nothing"
    )
    n = int(r[f"n_neg cal ({level})"])  # type: ignore[call-overload]
    what = "bound" if ok else "the strictest threshold's bound"
    return f"per {level} {'certified' if ok else 'not certified'} ({what} {bound:.3f} over {n} {units}, {answers})"


__all__ = ["ASSUMPTION", "UNIT", "levels_table", "unit_lines"]
