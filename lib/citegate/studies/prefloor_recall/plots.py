"""Notebook 01's figures (matplotlib, imported inside each function)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.studies.prefloor_recall.compute import LOSS_ORDER


def plot_recall(frame: pd.DataFrame, marks: Sequence[float] = (0.18, 0.45)) -> Any:
    """Recall and lost-at-floor against the floor, one line per set; design floors marked."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    for name, g in frame.groupby("set"):
        axes[0].plot(g["floor"], g["recall"], marker="o", ms=3, label=name)
        axes[1].plot(g["floor"], g["lost_at_floor"], marker="o", ms=3, label=name)
    for ax, title in zip(axes, ("recall of final notes", "gold lost at the floor"), strict=True):
        for m in marks:
            ax.axvline(m, color="grey", ls="--", lw=1)
            ax.text(m, 1.02, f"{m:g}", ha="center", fontsize=8, transform=ax.get_xaxis_transform())
        ax.set_xlabel("cosine pre-floor")
        ax.set_title(title, pad=14)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_waterfall(table: pd.DataFrame) -> Any:
    """Stacked bars: share of answerable questions by the stage that lost (or kept) their gold."""
    import matplotlib.pyplot as plt

    shares = table.div(table.sum(axis=1), axis=0)
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.6 * len(shares)))
    left = np.zeros(len(shares))
    colors = plt.cm.tab10(np.linspace(0, 1, len(LOSS_ORDER)))
    for col, color in zip(LOSS_ORDER, colors, strict=True):
        ax.barh(shares.index, shares[col], left=left, color=color, label=col)
        left += shares[col].to_numpy()
    ax.set_xlabel("share of answerable questions")
    ax.legend(ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    ax.set_xlim(0, 1)
    fig.tight_layout()
    return fig


def plot_cosines(frame: pd.DataFrame, marks: Sequence[float] = (0.18, 0.45)) -> Any:
    """Histogram of gold vs other candidate cosines: where the floors sit on this embedder."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 3.5))
    bins = np.linspace(0, 1, 101)
    for gold, label in ((False, "other candidates"), (True, "gold fragments")):
        vals = frame.loc[frame["gold"] == gold, "cosine"]
        ax.hist(vals, bins=bins, alpha=0.6, density=True, label=f"{label} (n={len(vals)})")
    for m in marks:
        ax.axvline(m, color="grey", ls="--", lw=1)
    ax.set_xlabel("cosine to the question")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_arms(table: pd.DataFrame, set_name: str) -> Any:
    """Recall of the final notes per arm (rows of `arm_table` for one set), one bar per language
    and all, with the 95% interval over verse groups."""
    import matplotlib.pyplot as plt

    sub = table[table["set"] == set_name]
    arms = list(dict.fromkeys(sub["arm"]))
    languages = list(dict.fromkeys(sub["language"]))
    width = 0.8 / max(len(languages), 1)
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(arms)), 4))
    for j, language in enumerate(languages):
        rows = sub[sub["language"] == language].set_index("arm").reindex(arms)
        x = np.arange(len(arms)) + (j - (len(languages) - 1) / 2) * width
        err = np.vstack([rows["recall"] - rows["recall lo"], rows["recall hi"] - rows["recall"]])
        ax.bar(x, rows["recall"], width, label=language, yerr=np.clip(err, 0, None), capsize=2)
    ax.set_xticks(np.arange(len(arms)), arms, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("recall of the final notes")
    ax.set_title(f"{set_name}: recall per arm and language (95% interval over verse groups)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncol=len(languages))
    fig.tight_layout()
    return fig
