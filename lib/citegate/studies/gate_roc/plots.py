"""Notebook 03's figures (matplotlib, imported inside each function).

A frame with a `corpus` column (several corpora side by side) gets one row of panels per corpus,
titled with its name, on shared axes limits where the scales are comparable; a frame without one
draws as a single corpus.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.evaluation import metrics as M
from citegate.studies.gate_roc.compute import contrast


def _corpora(frame: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """(corpus, its rows) in order of first appearance; ("", frame) without a corpus column."""
    if "corpus" not in frame:
        yield "", frame
        return
    for corpus in frame["corpus"].unique():
        yield str(corpus), frame[frame["corpus"] == corpus]


def _titled(title: str, corpus: str) -> str:
    return f"{corpus}: {title}" if corpus else title


def plot_two_scale(sweep: pd.DataFrame, design: dict[str, float]) -> Any:
    """Answer rate against a shared threshold, per scale and label (log x), one panel per corpus;
    design points marked."""
    import matplotlib.pyplot as plt

    parts = list(_corpora(sweep))
    fig, axes = plt.subplots(len(parts), 1, figsize=(10, 4 * len(parts)), squeeze=False)
    styles = {"reranker scale": "-", "fusion scale": "--"}
    for ax, (corpus, part) in zip(axes[:, 0], parts, strict=True):
        for (scale, label), g in part.groupby(["scale", "label"]):
            ax.plot(
                g["threshold"],
                g["answer_rate"],
                styles[scale],
                marker=".",
                label=f"{scale}: {label}",
            )
        for name, t in design.items():
            ax.axvline(t, color="grey", lw=1, ls=":")
            ax.text(
                t,
                1.02,
                f"{name} {t:g}",
                fontsize=7,
                ha="center",
                transform=ax.get_xaxis_transform(),
            )
        ax.set(xscale="log", xlabel="one threshold applied to the scale", ylabel="share answered")
        ax.set_title(_titled("why one threshold cannot serve both scales", corpus), pad=14)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot_roc_pr(
    frame: pd.DataFrame,
    negatives: Sequence[str],
    marks: dict[str, float],
    n_boot: int = 200,
    recommended: Mapping[str, Mapping[str, float]] | None = None,
) -> Any:
    """ROC (with a bootstrap band over question groups, as the AUROC intervals) and
    precision–recall of max cosine, per kind of negative, one row per corpus; `marks` and each
    corpus's own `recommended[corpus]` thresholds marked on its ROC (one marker shape per
    threshold, named in the legend)."""
    import matplotlib.pyplot as plt

    parts = list(_corpora(frame))
    fig, axes = plt.subplots(len(parts), 2, figsize=(11, 4.2 * len(parts)), squeeze=False)
    for row, (corpus, part) in zip(axes, parts, strict=True):
        own = (recommended or {}).get(corpus, {})
        here = {**marks, **{f"recommended {k}": v for k, v in own.items()}}
        for i, neg in enumerate(negatives):
            _draw_roc_pr(row, contrast(part, neg), neg, f"C{i}", here, n_boot)
        for name, t in here.items():  # one legend entry per threshold, in grey
            marker = _MARKERS.get(name.split()[-1], "o")
            row[0].plot(
                [], [], ls="", marker=marker, color="grey", mec="k", label=f"{name} {t:.3f}"
            )
        row[0].plot([0, 1], [0, 1], color="grey", ls="--", lw=1)
        row[0].set(
            xlabel="false-answer rate (negatives answered)",
            ylabel="answerable answered",
            title=_titled("ROC of max cosine (95% band, question groups resampled)", corpus),
        )
        row[1].set(
            xlabel="recall (answerable answered)",
            ylabel="precision",
            title=_titled("precision–recall of max cosine", corpus),
        )
        row[0].legend(fontsize=7, loc="lower right")
        row[1].legend(fontsize=8)
        for ax in row:
            ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


_MARKERS = {"bail_out_score": "v", "sufficient_score": "o", "good_enough_score": "^"}


def _draw_roc_pr(
    axes: Sequence[Any],
    sub: pd.DataFrame,
    neg: str,
    color: str,
    marks: dict[str, float],
    n_boot: int,
) -> None:
    """One kind of negative's ROC band, threshold marks and PR curve on a row of two axes."""
    if sub["y"].nunique() < 2:
        return
    grid, tpr, lo, hi = M.roc_curve_band(
        sub["max_cosine"], sub["y"], n_boot=n_boot, groups=sub["group"]
    )
    auc = M.auroc_ci(sub["max_cosine"], sub["y"], n_boot=1).auroc
    axes[0].plot(grid, tpr, color=color, label=f"vs {neg} (AUROC {auc:.3f})")
    axes[0].fill_between(grid, lo, hi, color=color, alpha=0.2)
    for name, t in marks.items():
        p = M.operating_point(sub["max_cosine"], sub["y"], t)
        axes[0].plot(
            p["fpr"],
            p["tpr"],
            ls="",
            marker=_MARKERS.get(name.split()[-1], "o"),
            color=color,
            mec="k",
            ms=7,
        )
    pr = M.pr_curve(sub["max_cosine"], sub["y"])
    axes[1].plot(pr.x, pr.y, color=color, label=f"vs {neg}")


def plot_risk_coverage(
    frame: pd.DataFrame,
    marks: dict[str, float],
    recommended: Mapping[str, Mapping[str, float]] | None = None,
) -> Any:
    """Risk (share of answers that should have been abstentions) against coverage, all questions,
    one panel per corpus; `marks` and each corpus's `recommended[corpus]` thresholds marked (one
    marker shape per threshold, named in the legend)."""
    import matplotlib.pyplot as plt

    parts = list(_corpora(frame))
    fig, axes = plt.subplots(1, len(parts), figsize=(7 * len(parts), 4), squeeze=False)
    for ax, (corpus, part) in zip(axes[0], parts, strict=True):
        y = (part["label"] == "answerable").astype(int)
        rc = M.risk_coverage(part["max_cosine"], y)
        ax.plot(rc.coverage, rc.risk, label=f"max cosine (AURC {M.aurc(rc):.3f})")
        own = (recommended or {}).get(corpus, {})
        for name, t in {**marks, **{f"recommended {k}": v for k, v in own.items()}}.items():
            p = M.operating_point(part["max_cosine"], y, t)
            marker = _MARKERS.get(name.split()[-1], "o")
            ax.plot(
                p["coverage"],
                p["risk"],
                ls="",
                marker=marker,
                color="k",
                ms=6,
                label=f"{name} {t:.3f}",
            )
        ax.set(
            xlabel="coverage (share of all questions answered)",
            ylabel="risk (share of answers that are false)",
            title=_titled("risk–coverage", corpus),
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_distributions(
    frame: pd.DataFrame,
    marks: dict[str, float],
    recommended: Mapping[str, Mapping[str, float]] | None = None,
) -> Any:
    """Histograms of max cosine by label, one row per corpus on one shared x axis, with `marks`
    (dashed) and each corpus's own recommended thresholds (`recommended[corpus]`, dotted red)."""
    import matplotlib.pyplot as plt

    parts = list(_corpora(frame))
    fig, axes = plt.subplots(
        len(parts), 1, figsize=(11, 3.5 * len(parts)), squeeze=False, sharex=True
    )
    lo = max(0.0, float(frame["max_cosine"].min()) - 0.02)
    bins = np.linspace(lo, min(1.0, float(frame["max_cosine"].max()) + 0.02), 60)
    for ax, (corpus, part) in zip(axes[:, 0], parts, strict=True):
        for label, g in part.groupby("label"):
            ax.hist(
                g["max_cosine"], bins=bins, alpha=0.5, density=True, label=f"{label} (n={len(g)})"
            )
        for name, t in marks.items():
            ax.axvline(t, color="k", ls="--", lw=1)
            ax.text(t, 1.01, name, fontsize=7, ha="center", transform=ax.get_xaxis_transform())
        own = (recommended or {}).get(corpus, {})
        for i, (name, t) in enumerate(own.items()):
            ax.axvline(t, color="C3", ls=":", lw=1.2)
            ax.text(
                t,
                0.92 - 0.08 * i,
                f"recommended {name} {t:.3f} ",
                fontsize=7,
                color="C3",
                ha="right",
                transform=ax.get_xaxis_transform(),
            )
        ax.set_ylabel("density")
        ax.set_title(_titled("max cosine of the final notes by label", corpus), pad=14)
        ax.legend(fontsize=8, loc="upper left")
    axes[-1, 0].set_xlabel("max cosine of the final notes")
    fig.tight_layout()
    return fig
