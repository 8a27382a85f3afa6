"""Notebook 03's conclusion: every claim follows from a measured value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def conclusion(
    aurocs: pd.DataFrame,
    design: pd.DataFrame,
    test_points: pd.DataFrame,
    rec: dict[str, float],
    target_fpr: float,
    negative: str | None = None,
) -> str:
    """Markdown conclusion from this run's numbers: every claim follows from a measured value.

    `negative` is the kind the recommendation was tuned against (default: the kind of the
    `design` operating points, which the notebook computes against the same kind)."""
    tuned = negative or _design_negative(design)
    lines = ["## Conclusion", ""]
    lines += [
        _separation_line(r) for r in aurocs[aurocs["signal"] == "max_cosine"].to_dict("records")
    ]
    best = aurocs.sort_values("AUROC", ascending=False).groupby("negatives").head(1)
    lines += [_best_signal_line(r) for r in best.to_dict("records")]
    bail = design[design["point"].str.startswith("bail_out_score")]
    if len(bail):
        lines.append(_bail_line(bail.iloc[0].to_dict(), _design_negative(design)))
    lines.append(
        f"- Recommended from the tune split (target false-answer rate {target_fpr:.0%} "
        f"against {tuned} questions): bail_out {rec['bail_out_score']:.3f}, "
        f"sufficient {rec['sufficient_score']:.3f}, good_enough {rec['good_enough_score']:.3f}."
    )
    points = test_points[test_points["point"].str.startswith("sufficient_score")]
    lines += [_test_line(r, rec, tuned, target_fpr) for r in points.to_dict("records")]
    return "\n".join(lines)


def _design_negative(design: pd.DataFrame) -> str:
    """The kind of negative the design operating points were computed against."""
    if "negatives" in design and len(design):
        return str(design["negatives"].iloc[0])
    return "hard-negative"


def _separation_line(r: dict[str, Any]) -> str:
    """Whether max cosine separates, fails to separate, or inverts, judged by the 95% CI."""
    stats = (
        f"AUROC {r['AUROC']:.3f} (95% CI {r['CI low']:.3f}–{r['CI high']:.3f}; "
        f"{r['answerable']} vs {r['negative']} questions)"
    )
    neg = r["negatives"]
    if r["CI low"] > 0.5:
        return f"- Max cosine separates answerable from **{neg}** questions: {stats}."
    if r["CI high"] < 0.5:
        return (
            f"- Max cosine ranks **{neg}** questions *above* answerable ones, worse than "
            f"chance: {stats}."
        )
    return (
        f"- Max cosine does not separate answerable from **{neg}** questions better than "
        f"chance (the interval includes 0.5): {stats}."
    )


def _best_signal_line(r: dict[str, Any]) -> str:
    """The signal with the highest AUROC against one kind, and whether it beats chance."""
    head = f"- Best signal against {r['negatives']}: `{r['signal']}` (AUROC {r['AUROC']:.3f}"
    if r["CI low"] > 0.5:
        return head + f", CI {r['CI low']:.3f}–{r['CI high']:.3f})."
    return head + f", but its CI {r['CI low']:.3f}–{r['CI high']:.3f} includes or lies below 0.5)."


def _bail_line(b: dict[str, Any], negative: str) -> str:
    """What the design bail-out threshold does here: how many questions of each kind it rejects."""
    pos_bail, neg_bail = 1 - b["tpr"], 1 - b["fpr"]
    head = (
        f"- The design bail-out {b['threshold']:.2f} lets through {b['tpr']:.1%} of answerable "
        f"and {b['fpr']:.1%} of {negative} questions: "
    )
    if pos_bail == 0 and neg_bail == 0:
        return head + "on this embedder it never bails."
    if neg_bail < 0.1:
        return head + (
            f"it bails on only {neg_bail:.1%} of {negative} questions, so it barely acts as a "
            "gate on this embedder."
        )
    if neg_bail > 0.5:
        return head + (
            f"it rejects most {negative} questions ({neg_bail:.1%}), at the cost of "
            f"{pos_bail:.1%} of answerable ones."
        )
    return head + f"it rejects {neg_bail:.1%} of {negative} and {pos_bail:.1%} of answerable ones."


def _test_line(r: dict[str, Any], rec: dict[str, float], tuned: str, target_fpr: float) -> str:
    """The test-split rates at the recommended sufficient score; for the tuned kind, on target?"""
    line = (
        f"- On the **test** split at sufficient = {rec['sufficient_score']:.3f}: "
        f"{r['tpr']:.1%} of answerable answered, false-answer rate {r['fpr']:.1%} "
        f"vs {r['negatives']}"
    )
    if r["negatives"] != tuned or not np.isfinite(r["fpr"]):
        return line + "."
    if r["fpr"] <= target_fpr + 1e-12:
        return line + f" (within the {target_fpr:.0%} target)."
    return line + f" (above the {target_fpr:.0%} target it was tuned for on the tune split)."
