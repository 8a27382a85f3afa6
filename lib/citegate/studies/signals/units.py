"""Experiment 05's certificate over independent units, beside the per-question one.

The per-question certificate (`compute.certified_points`) counts calibration negatives as
independent questions; questions written about one verse (gita) or one article (xquad) are not.
Here every gate is certified again with the question GROUP as the exchangeable unit
(`evaluation.certify`, `units=`): a group counts once, as a false answer when any of its negative
questions is answered. The assumption, stated once for the report: calibration groups are
exchangeable with the groups production meets; questions inside a group may depend on each other
in any way. `levels_table` sets both certificates side by side on the test split, `unit_metrics`
and `unit_lines` turn them into MLflow metrics and computed report sentences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from citegate.studies.signals.compute import (
    NEGATIVES,
    FittedGate,
    GatePoint,
    certify,
    learned_name,
    min_clean_n,
    tune_parts,
)
from citegate.studies.signals.report import ALL, PRODUCTION_GATE, RAW, _a, short

ASSUMPTION = (
    "The per-unit certificate treats each question group (a gita verse, an XQuAD article) as "
    "one exchangeable unit, answered falsely when any of its negative questions is answered; "
    "questions inside a group may depend on each other in any way."
)
UNIT_SUFFIX = " (per question group)"


def unit_points(
    frame: pd.DataFrame,
    gates: Mapping[tuple[str, str], FittedGate],
    alphas: Sequence[float],
    delta: float,
    cal_share: float,
    negatives: Sequence[str] = NEGATIVES,
    production_kind: str = "logistic",
) -> list[GatePoint]:
    """`compute.certified_points` with the question group as the unit: the learned gate on the
    calibration part of tune, max cosine on all of tune (the same rows as there)."""
    out = []
    for corpus, g in frame.groupby("corpus", sort=False):
        _, cal = tune_parts(g, cal_share)
        tune = g[g["split"] == "tune"]
        gate = gates[(str(corpus), production_kind)]
        pairs = (
            (learned_name(production_kind), gate.score(cal), cal, "tune calibration part"),
            ("max_cosine", tune["max_cosine"].to_numpy(float), tune, "all of tune"),
        )
        for alpha in alphas:
            for name, scores, rows, where in pairs:
                units = rows["group"].astype(str).to_numpy()
                cert = certify(scores, rows, alpha, delta, negatives, units=units)
                out.append(GatePoint(str(corpus), name, alpha, delta, cert, where + UNIT_SUFFIX))
    return out


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


def unit_metrics(by_unit: pd.DataFrame, alphas: Sequence[float]) -> dict[str, float]:
    """MLflow metrics of the per-unit certificates: `<corpus>_<gate>_<a>_unit_bound_<kind>`,
    `..._unit_answer_rate` (and per language, vs the first kind) on the test split."""
    out: dict[str, float] = {}
    for r in by_unit[by_unit["labels"] == RAW].to_dict("records"):
        if (
            r["gate"] not in (PRODUCTION_GATE, "max_cosine")
            or not np.isclose(alphas, r["alpha"]).any()
        ):
            continue
        g = "learned" if r["gate"] == PRODUCTION_GATE else "max_cosine"
        head = f"{short(r['corpus'])}_{g}_{_a(r['alpha'])}_unit"
        if r["language"] == ALL:
            out[f"{head}_answer_rate"] = r["answer rate"]
            out[f"{head}_bound_{r['negatives']}"] = r["bound"]
            out[f"{head}_n_units_{r['negatives']}"] = r["n_neg cal"]
        elif r["negatives"] == NEGATIVES[0]:
            out[f"{head}_answer_rate_{r['language']}"] = r["answer rate"]
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}


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


__all__ = ["ASSUMPTION", "levels_table", "unit_lines", "unit_metrics", "unit_points"]
