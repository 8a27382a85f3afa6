"""The follow-up study's figure (matplotlib, imported inside the function)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def plot_recall(table: pd.DataFrame) -> Any:
    """Recall of the follow-up's verse by arm (rewrite per model), one bar per language, with
    95% bootstrap CIs."""
    import matplotlib.pyplot as plt

    if table.empty:
        fig, ax = plt.subplots(figsize=(6, 1.5))
        ax.text(0.5, 0.5, "no follow-up conversation sampled", ha="center", va="center")
        ax.set_axis_off()
        return fig
    labels = list(
        dict.fromkeys(_arm_label(a, m) for a, m in zip(table["arm"], table["model"], strict=True))
    )
    langs = list(dict.fromkeys(table["language"]))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(labels)), 3.8))
    width = 0.8 / max(len(langs), 1)
    x = np.arange(len(labels))
    for i, lang in enumerate(langs):
        sub = table[table["language"] == lang]
        idx = [
            labels.index(_arm_label(a, m)) for a, m in zip(sub["arm"], sub["model"], strict=True)
        ]
        err = np.vstack([sub["recall"] - sub["recall lo"], sub["recall hi"] - sub["recall"]])
        ax.bar(
            x[idx] + (i - (len(langs) - 1) / 2) * width,
            sub["recall"],
            width,
            yerr=err.clip(min=0),
            capsize=3,
            label=f"{lang} (n={int(sub['conversations'].max())})",
            color=f"C{i}",
        )
    ax.set_xticks(x, labels, fontsize=8)
    ax.set(ylim=(0, 1.05), ylabel="follow-up recall (gold verse in final notes)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _arm_label(arm: str, model: str) -> str:
    return f"{arm}\n{model}" if model else arm
