"""The citation study's figure (matplotlib, imported inside the function)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from citegate.studies.fallback_disclaimer.citation.compute import FORMATS


def plot_support(claims: pd.DataFrame, threshold: float) -> Any:
    """Per answer format: cosine of each claim to what it cites, against the shuffled control,
    with the support threshold marked."""
    import matplotlib.pyplot as plt

    formats = [f for f in FORMATS if len(claims) and (claims["format"] == f).any()] or list(FORMATS)
    fig, axes = plt.subplots(1, len(formats), figsize=(4.2 * len(formats), 3.4), squeeze=False)
    bins = np.linspace(0.5 * min(threshold, 0.6), 1.0, 26)
    for ax, fmt in zip(axes[0], formats, strict=True):
        g = claims[claims["format"] == fmt] if len(claims) else claims
        for col, label, colour in (
            ("cosine", "cited", "tab:blue"),
            ("shuffled_cosine", "shuffled control", "tab:orange"),
        ):
            values = g[col].dropna().to_numpy(float) if len(g) else np.array([])
            ax.hist(
                np.clip(values, bins[0], 1.0),
                bins=bins,
                alpha=0.55,
                color=colour,
                label=f"{label} (n={len(values)})",
            )
        ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:.2f}")
        ax.set(title=fmt, xlabel="cosine claim ↔ cited chunk", ylabel="claims")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
