"""Notebook 03's figures (matplotlib, imported inside each function)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.evaluation import metrics as M
from citegate.studies.gate.compute import contrast


def plot_two_scale(sweep: pd.DataFrame, design: dict[str, float]) -> Any:
    """Answer rate against a shared threshold, per scale and label (log x); design points marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    styles = {"reranker scale": "-", "fusion scale": "--"}
    for (scale, label), g in sweep.groupby(["scale", "label"]):
        ax.plot(
            g["threshold"], g["answer_rate"], styles[scale], marker=".", label=f"{scale}: {label}"
        )
    for name, t in design.items():
        ax.axvline(t, color="grey", lw=1, ls=":")
        ax.text(
            t, 1.02, f"{name} {t:g}", fontsize=7, ha="center", transform=ax.get_xaxis_transform()
        )
    ax.set(
        xscale="log",
        xlabel="one threshold applied to the scale",
        ylabel="share answered",
        title="why one threshold cannot serve both scales",
    )
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot_roc_pr(
    frame: pd.DataFrame, negatives: Sequence[str], marks: dict[str, float], n_boot: int = 200
) -> Any:
    """ROC (with a bootstrap band over question groups, as the AUROC intervals) and
    precision–recall of max cosine, per kind of negative; design thresholds marked on the ROC."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, neg in enumerate(negatives):
        sub = contrast(frame, neg)
        if sub["y"].nunique() < 2:
            continue
        grid, tpr, lo, hi = M.roc_curve_band(
            sub["max_cosine"], sub["y"], n_boot=n_boot, groups=sub["group"]
        )
        auc = M.auroc_ci(sub["max_cosine"], sub["y"], n_boot=1).auroc
        axes[0].plot(grid, tpr, color=f"C{i}", label=f"vs {neg} (AUROC {auc:.3f})")
        axes[0].fill_between(grid, lo, hi, color=f"C{i}", alpha=0.2)
        for t in marks.values():
            p = M.operating_point(sub["max_cosine"], sub["y"], t)
            axes[0].plot(p["fpr"], p["tpr"], marker="o", color=f"C{i}", ms=5)
            axes[0].annotate(
                f"{t:.2f}",
                (p["fpr"], p["tpr"]),
                fontsize=7,
                xytext=(4, -8),
                textcoords="offset points",
            )
        pr = M.pr_curve(sub["max_cosine"], sub["y"])
        axes[1].plot(pr.x, pr.y, color=f"C{i}", label=f"vs {neg}")
    axes[0].plot([0, 1], [0, 1], color="grey", ls="--", lw=1)
    axes[0].set(
        xlabel="false-answer rate (negatives answered)",
        ylabel="answerable answered",
        title="ROC of max cosine (95% band, question groups resampled)",
    )
    axes[1].set(
        xlabel="recall (answerable answered)",
        ylabel="precision",
        title="precision–recall of max cosine",
    )
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_risk_coverage(frame: pd.DataFrame, marks: dict[str, float]) -> Any:
    """Risk (share of answers that should have been abstentions) against coverage, all questions."""
    import matplotlib.pyplot as plt

    y = (frame["label"] == "answerable").astype(int)
    rc = M.risk_coverage(frame["max_cosine"], y)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(rc.coverage, rc.risk, label=f"max cosine (AURC {M.aurc(rc):.3f})")
    for name, t in marks.items():
        p = M.operating_point(frame["max_cosine"], y, t)
        ax.plot(p["coverage"], p["risk"], marker="o", color="k", ms=4)
        ax.annotate(
            f"{name} {t:.2f}",
            (p["coverage"], p["risk"]),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.set(
        xlabel="coverage (share of all questions answered)",
        ylabel="risk (share of answers that are false)",
        title="risk–coverage",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_distributions(frame: pd.DataFrame, marks: dict[str, float]) -> Any:
    """Histograms of max cosine by label, with the thresholds marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 3.5))
    lo = max(0.0, float(frame["max_cosine"].min()) - 0.02)
    bins = np.linspace(lo, min(1.0, float(frame["max_cosine"].max()) + 0.02), 60)
    for label, g in frame.groupby("label"):
        ax.hist(g["max_cosine"], bins=bins, alpha=0.5, density=True, label=f"{label} (n={len(g)})")
    for name, t in marks.items():
        ax.axvline(t, color="k", ls="--", lw=1)
        ax.text(
            t, 1.01, name, rotation=0, fontsize=7, ha="center", transform=ax.get_xaxis_transform()
        )
    ax.set(xlabel="max cosine of the final notes", ylabel="density")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
