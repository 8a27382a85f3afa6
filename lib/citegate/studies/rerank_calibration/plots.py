"""Notebook 02's figures (matplotlib, imported inside each function)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from citegate.evaluation import metrics as M
from citegate.studies.rerank_calibration.compute import SCORES


def plot_reliability(frame: pd.DataFrame, n_bins: int = 10) -> Any:
    """Reliability diagrams, one panel per score, with ECE in the title."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SCORES), figsize=(3.0 * len(SCORES), 3.2), sharey=True)
    for ax, score in zip(axes, SCORES, strict=True):
        rel = M.reliability(frame[score].clip(0, 1), frame["gold"], n_bins=n_bins)
        ok = rel.count > 0
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
        ax.plot(rel.mean_score[ok], rel.frac_positive[ok], marker="o", ms=4)
        ax.bar(
            (rel.bin_lower + rel.bin_upper)[ok] / 2,
            rel.count[ok] / rel.count.sum(),
            width=1 / n_bins,
            alpha=0.2,
            color="C1",
        )
        ax.set_title(f"{score}\nECE {rel.ece:.3f}", fontsize=9)
        ax.set_xlabel("score")
        ax.set_xlim(0, 1)
    axes[0].set_ylabel("share gold (bars: share of pairs)")
    fig.tight_layout()
    return fig


def plot_threshold_spread(best: pd.DataFrame) -> Any:
    """Box plot of per-question best thresholds: a usable absolute score has a narrow box."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.2))
    data = [best.loc[best["score"] == s, "threshold"] for s in SCORES]
    ax.boxplot(data, vert=False, showfliers=False)
    ax.set_yticks(range(1, len(SCORES) + 1), SCORES)
    ax.set_xlabel("per-question best threshold")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
