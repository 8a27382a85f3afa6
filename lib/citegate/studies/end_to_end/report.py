"""Notebook 08's figures and prose: the outcomes per set and stratum as stacked bars, the pointer
floor's precision sweep, and the conclusion, every stated fact computed from the measured values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from citegate.studies.end_to_end.compute import OUTCOMES, Floor

COLORS = {
    "answered_gold": "#2e7d32",
    "answered_wrong_source": "#c62828",
    "declined": "#9e9e9e",
    "fallback": "#f9a825",
    "error": "#000000",
}


def plot_outcomes(df: pd.DataFrame) -> Any:
    """Share of each outcome per set, label and stratum (stacked horizontal bars)."""
    import matplotlib.pyplot as plt

    keys = ["set", "label", "stratum"]
    shares = df.groupby(keys)["outcome"].value_counts(normalize=True).unstack(fill_value=0.0)
    shares = shares.reindex(columns=list(OUTCOMES), fill_value=0.0)
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(shares) + 1.5))
    left = np.zeros(len(shares))
    labels = [" / ".join(map(str, k)) for k in shares.index]
    for o in OUTCOMES:
        ax.barh(labels, shares[o], left=left, color=COLORS[o], label=o)
        left += shares[o].to_numpy()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of questions")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8)
    fig.tight_layout()
    return fig


def plot_floor(sweep: pd.DataFrame, floor: Floor) -> Any:
    """Pointer precision against the floor, tune and test, with the target and the chosen floor."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for split, g in sweep.groupby("split"):
        ax.plot(g["floor"], g["precision"], label=f"precision ({split})")
    ax.axhline(floor.target, color="grey", linestyle=":", label=f"target {floor.target:g}")
    if floor.feasible:
        ax.axvline(floor.floor, color="black", linestyle="--", label=f"floor {floor.floor:.4f}")
    ax.set_xlabel("cosine floor")
    ax.set_ylabel("share of pointers that are a gold source")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{x:.1%}"


def _with_ci(m: Mapping[str, float], name: str) -> str:
    v = m.get(name, float("nan"))
    lo, hi = m.get(f"{name}.ci_low", float("nan")), m.get(f"{name}.ci_high", float("nan"))
    n = int(m.get(f"{name}.n", 0))
    if v != v:
        return "n/a (none)"
    return f"{_pct(v)} [{_pct(lo)}, {_pct(hi)}] of {n}"


def conclusion(m: Mapping[str, float], floor: Floor, goals: Mapping[str, float]) -> str:
    """The run's conclusion: each answerable set's wrong-source share (named / unnamed) against
    its goal, the gold-answer rates, the false answers per negative kind, the errors and the
    pointer floor."""
    lines = ["**Conclusion.** What the user got, end to end:"]
    for name in ("gita", "xquad"):
        key = f"wrong_source_share.{name}"
        if key not in m:
            continue
        lines.append(
            f"**{name}:** of the answered answerable questions, {_with_ci(m, key)} cite only "
            f"other sources than the one asked about (naming a source: "
            f"{_with_ci(m, key + '.named')}; naming none: {_with_ci(m, key + '.unnamed')}). "
            "Answerable questions answered from a gold source: "
            f"{_with_ci(m, f'gold_answer_rate.{name}')}."
        )
        for goal_key, goal in goals.items():
            if goal_key.startswith(key):
                value = m.get(goal_key, float("nan"))
                met = "meets" if value == value and value <= goal else "misses"
                lines.append(f"- `{goal_key}` {_pct(value)} {met} the goal ≤ {goal:.0%}.")
    false = [
        (k, v)
        for k, v in m.items()
        if k.startswith("false_answer_rate.")
        and k.count(".") <= 2
        and not k.endswith((".n", ".ci_low", ".ci_high"))
    ]
    if false:
        lines.append(
            "**False answers:** "
            + "; ".join(
                f"{k.removeprefix('false_answer_rate.')} {_with_ci(m, k)}" for k, v in false
            )
            + "."
        )
    lines.append(
        f"**Errors:** {_pct(m.get('error_share', float('nan')))} of the turns; turn time "
        f"p50 {m.get('turn_ms_p50', float('nan')):.0f} ms, p95 {m.get('turn_ms_p95', float('nan')):.0f} ms."
    )
    lines.append(floor_line(floor))
    return "\n\n".join(lines)


def floor_line(floor: Floor) -> str:
    """The pointer floor, as chosen and as it held on the test part."""
    if not floor.feasible:
        best = (
            f" (the best: {floor.best_low:.3f} at {floor.best_floor:.4f} over {floor.best_n} "
            "pointers)"
            if floor.best_n
            else ""
        )
        return (
            "**Pointer floor:** no cosine floor keeps the exact lower bound of the pointers' "
            f"precision ≥ {floor.target:g} on the tune part{best}, so none is shown (floor 1.0) "
            'and the fallback admits no probe hit: "I don\'t know" stands alone.'
        )
    return (
        f"**Pointer floor:** {floor.floor:.4f} (tune precision {floor.tune_precision:.3f}, "
        f"exact lower bound {floor.tune_low:.3f} ≥ {floor.target:g} over {floor.tune_n} "
        f"pointers); on the test part {_pct(floor.test_precision)} "
        f"[{_pct(floor.test_ci_low)}, {_pct(floor.test_ci_high)}] of {floor.test_n} pointers "
        "are a gold source of their question."
    )


__all__ = ["COLORS", "conclusion", "floor_line", "plot_floor", "plot_outcomes"]
