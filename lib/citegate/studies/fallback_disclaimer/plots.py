"""Notebook 04's figures (matplotlib, imported inside each function)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from citegate.studies.fallback_disclaimer.compute import scored


def plot_adherence(table: pd.DataFrame) -> Any:
    """Disclaimer rates with 95% CIs: one panel per model, bars per variant and language."""
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(table["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4), squeeze=False)
    series = ("model exact", "model normalized", "painted")
    for ax, model in zip(axes[0], models, strict=True):
        sub = table[table["model"] == model].reset_index(drop=True)
        x = np.arange(len(sub))
        for i, s in enumerate(series):
            err = np.vstack([sub[s] - sub[f"{s} lo"], sub[f"{s} hi"] - sub[s]]).clip(min=0)
            ax.bar(x + (i - 1) * 0.27, sub[s], 0.27, yerr=err, capsize=2, label=s, color=f"C{i}")
        ax.set_xticks(
            x,
            [f"{v}\n{lang}" for v, lang in zip(sub["variant"], sub["language"], strict=True)],
            fontsize=8,
        )
        ax.set(ylim=(0, 1.05), ylabel="share of answers with the disclaimer", title=model)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    fig.tight_layout()
    return fig


def plot_cost(frame: pd.DataFrame) -> Any:
    """Completion tokens and latency per answer, by model (latency from uncached calls only)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for i, (model, g) in enumerate(scored(frame).groupby("model")):
        axes[0].hist(g["completion_tokens"], bins=20, alpha=0.5, label=model, color=f"C{i}")
        fresh = g[g["uncached_calls"] > 0]
        if len(fresh):
            axes[1].hist(fresh["latency_s"], bins=20, alpha=0.5, label=model, color=f"C{i}")
    axes[0].set(xlabel="completion tokens per answer (repair included)", ylabel="answers")
    axes[1].set(xlabel="seconds per answer (uncached)", ylabel="answers")
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
