"""Notebook 05's figures (matplotlib, imported inside each function): every figure per corpus, and
per language where the data allow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.studies.gate_signals.compute import (
    ALL,
    LEVELS,
    NEGATIVES,
    RAW,
    FittedGate,
    contrast,
    learned_name,
)

_LANG_COLOURS = {ALL: "k", "en": "C0", "ru": "C3", "hi": "C2"}


def _colour(lang: str) -> str:
    """The colour of a language in every figure."""
    return _LANG_COLOURS.get(lang, "C4")


def _label_points(ax: Any, x: np.ndarray, ticks: Sequence[str], ylabel: str, title: str) -> None:
    """Finish a panel of points in a row: slanted small tick labels, the axis label and title, a
    light grid and the legend."""
    ax.set_xticks(x, ticks, rotation=60, ha="right", fontsize=7)
    ax.set(ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def plot_auroc_forest(aurocs: pd.DataFrame, labels: str = RAW) -> Any:
    """AUROC and 95% CI of every signal, one panel per corpus × kind of negative, one marker per
    language (all languages in black); 0.5 (chance) marked."""
    import matplotlib.pyplot as plt

    sub = aurocs[aurocs["labels"] == labels]
    corpora = list(dict.fromkeys(sub["corpus"]))
    negs = [n for n in NEGATIVES if n in set(sub["negatives"])]
    fig, axes = plt.subplots(
        len(corpora), len(negs), figsize=(6 * len(negs), 4 * len(corpora)), squeeze=False
    )
    for i, corpus in enumerate(corpora):
        for j, neg in enumerate(negs):
            ax = axes[i][j]
            part = sub[(sub["corpus"] == corpus) & (sub["negatives"] == neg)]
            names = list(dict.fromkeys(part["signal"]))
            langs = list(dict.fromkeys(part["language"]))
            for k, lang in enumerate(langs):
                rows = part[part["language"] == lang].set_index("signal").reindex(names)
                y = np.arange(len(names)) + (k - (len(langs) - 1) / 2) * 0.18
                err = [rows["AUROC"] - rows["CI low"], rows["CI high"] - rows["AUROC"]]
                ax.errorbar(
                    rows["AUROC"], y, xerr=err, fmt="o", ms=3, color=_colour(lang), label=lang
                )
            ax.axvline(0.5, color="grey", ls="--", lw=1)
            ax.set_yticks(np.arange(len(names)), names, fontsize=8)
            ax.invert_yaxis()
            ax.set(xlim=(0, 1.02), xlabel="AUROC (95% CI, question groups resampled)")
            ax.set_title(f"{corpus}: answerable vs {neg} (test, {labels} labels)", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def plot_max_cosine_by_language(frame: pd.DataFrame) -> Any:
    """Max cosine by label and language, one panel per corpus (test split): why one threshold
    for every language penalises some of them."""
    import matplotlib.pyplot as plt

    test = frame[frame["split"] == "test"]
    corpora = list(dict.fromkeys(test["corpus"]))
    fig, axes = plt.subplots(1, len(corpora), figsize=(6.5 * len(corpora), 4), squeeze=False)
    for ax, corpus in zip(axes[0], corpora, strict=True):
        part = test[test["corpus"] == corpus]
        keys = sorted(set(zip(part["label"], part["language"], strict=True)))
        data = [
            part[(part["label"] == lab) & (part["language"] == lang)]["max_cosine"]
            for lab, lang in keys
        ]
        bp = ax.boxplot(data, patch_artist=True, showfliers=True)
        for patch, (_, lang) in zip(bp["boxes"], keys, strict=True):
            patch.set_facecolor(_colour(lang))
            patch.set_alpha(0.4)
        ax.set_xticks(
            range(1, len(keys) + 1),
            [f"{lab}\n{lang} (n={len(d)})" for (lab, lang), d in zip(keys, data, strict=True)],
            fontsize=7,
        )
        ax.set(ylabel="max cosine of the final notes", title=f"{corpus} (test split)")
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def plot_learned_roc(
    frame: pd.DataFrame, gates: Mapping[tuple[str, str], FittedGate], negative: str
) -> Any:
    """ROC on the test split of the learned gates and max cosine against one kind, one panel per
    corpus × language (all languages first)."""
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_curve

    test = frame[frame["split"] == "test"]
    corpora = list(dict.fromkeys(test["corpus"]))
    langs = [ALL, *sorted(test["language"].unique())]
    fig, axes = plt.subplots(
        len(corpora), len(langs), figsize=(3.3 * len(langs), 3.2 * len(corpora)), squeeze=False
    )
    for i, corpus in enumerate(corpora):
        part = contrast(test[test["corpus"] == corpus], negative)
        scores = {learned_name(k): g.score(part) for (c, k), g in gates.items() if c == corpus} | {
            "max_cosine": part["max_cosine"].to_numpy(float)
        }
        for j, lang in enumerate(langs):
            ax = axes[i][j]
            mask = (
                np.ones(len(part), bool) if lang == ALL else (part["language"] == lang).to_numpy()
            )
            y = part["y"].to_numpy()[mask]
            if len(np.unique(y)) < 2:
                ax.text(0.5, 0.5, f"{corpus}, {lang}: too few questions", ha="center", fontsize=8)
                ax.set_axis_off()
                continue
            for n, (name, s) in enumerate(scores.items()):
                fpr, tpr, _ = roc_curve(y, s[mask])
                ax.plot(fpr, tpr, color=f"C{n}", lw=1.2, label=name)
            ax.plot([0, 1], [0, 1], color="grey", ls="--", lw=0.8)
            ax.set_title(f"{corpus}, {lang} (n={int(mask.sum())})", fontsize=8)
            ax.set(xlabel="false-answer rate", ylabel="answerable answered")
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.suptitle(f"test split, answerable vs {negative}", fontsize=10)
    fig.tight_layout()
    return fig


def plot_bound_vs_realised(realised: pd.DataFrame, labels: str = RAW) -> Any:
    """Certified bound (from tune) against the realised false-answer rate on test (Wilson 95%
    CI), per corpus, gate, α and kind; α marked for each point. Infeasible points (answer
    nothing) are drawn hollow."""
    import matplotlib.pyplot as plt

    sub = realised[(realised["labels"] == labels) & (realised["language"] == ALL)]
    corpora = list(dict.fromkeys(sub["corpus"]))
    fig, axes = plt.subplots(1, len(corpora), figsize=(6.5 * len(corpora), 4), squeeze=False)
    for ax, corpus in zip(axes[0], corpora, strict=True):
        part = sub[sub["corpus"] == corpus].reset_index(drop=True)
        x = np.arange(len(part))
        err = [
            part["false-answer rate"] - part["FA low"],
            part["FA high"] - part["false-answer rate"],
        ]
        ax.errorbar(
            x,
            part["false-answer rate"],
            yerr=err,
            fmt="o",
            color="C0",
            label="realised on test (95% CI)",
        )
        ax.scatter(x, part["bound"], marker="_", s=300, color="C3", label="certified bound (tune)")
        ax.scatter(x, part["alpha"], marker="x", color="grey", label="target α")
        hollow = ~part["feasible"].astype(bool)
        ax.scatter(x[hollow], part["bound"][hollow], s=80, facecolors="none", edgecolors="C3")
        ticks = [
            f"{g}\nα={a:g} {n}"
            for g, a, n in zip(part["gate"], part["alpha"], part["negatives"], strict=True)
        ]
        _label_points(
            ax, x, ticks, "false-answer rate", f"{corpus}: bound vs realised ({labels} labels)"
        )
    fig.tight_layout()
    return fig


def plot_group_sensitivity(sensitivity: pd.DataFrame, alpha: float) -> Any:
    """SENSITIVITY CHECK (not the certificate): at each gate's certified threshold for `alpha`,
    the Clopper–Pearson bound with questions, question groups and held-out units as the sample,
    one panel per corpus, bars per gate × kind; α marked; each bar labelled with its n."""
    import matplotlib.pyplot as plt

    sub = sensitivity[np.isclose(sensitivity["alpha"], alpha)]
    corpora = list(dict.fromkeys(sub["corpus"]))
    fig, axes = plt.subplots(1, len(corpora), figsize=(6.5 * len(corpora), 4), squeeze=False)
    width = 0.8 / len(LEVELS)
    for ax, corpus in zip(axes[0], corpora, strict=True):
        part = sub[sub["corpus"] == corpus]
        keys = list(dict.fromkeys(zip(part["gate"], part["negatives"], strict=True)))
        x = np.arange(len(keys))
        for i, level in enumerate(LEVELS):
            rows = part[part["level"] == level].set_index(["gate", "negatives"]).reindex(keys)
            pos = x + (i - (len(LEVELS) - 1) / 2) * width
            ax.bar(pos, rows["bound"], width, color=f"C{i}", label=level)
            for xi, (b, n) in zip(pos, zip(rows["bound"], rows["n"], strict=True), strict=True):
                ax.text(xi, b, f"n={int(n)}", ha="center", va="bottom", fontsize=6)
        ax.axhline(alpha, color="grey", ls="--", lw=1, label=f"α = {alpha:g}")
        ax.set_xticks(x, [f"{g}\nvs {k}" for g, k in keys], fontsize=7)
        ax.set(ylim=(0, 1.05), ylabel="Clopper–Pearson upper bound")
        ax.set_title(f"{corpus}: sensitivity check, not the certificate", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    return fig


def plot_transfer(transfer: pd.DataFrame, model: str = "logistic") -> Any:
    """AUROC (test) of a gate trained on one corpus and tested on each, per kind of negative."""
    import matplotlib.pyplot as plt

    sub = transfer[transfer["model"] == model]
    negs = [n for n in NEGATIVES if n in set(sub["negatives"])]
    fig, axes = plt.subplots(1, len(negs), figsize=(4.5 * len(negs), 3.6), squeeze=False)
    for ax, neg in zip(axes[0], negs, strict=True):
        part = sub[sub["negatives"] == neg]
        table = part.pivot(index="trained on", columns="tested on", values="AUROC")
        im = ax.imshow(table.to_numpy(float), vmin=0.4, vmax=1.0, cmap="viridis")
        ax.set_xticks(range(len(table.columns)), table.columns, fontsize=8)
        ax.set_yticks(range(len(table.index)), table.index, fontsize=8)
        for (r, c), v in np.ndenumerate(table.to_numpy(float)):
            ax.text(c, r, f"{v:.3f}", ha="center", va="center", color="w", fontsize=9)
        ax.set(xlabel="tested on (test split)", ylabel="trained on (tune)")
        ax.set_title(f"{model} gate, vs {neg}", fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def plot_crossfit(table: pd.DataFrame, negative: str = NEGATIVES[0]) -> Any:
    """Out-of-fold answer rate (clustered 95% CI) per corpus, certificate level, label view and
    language, with the realised false-answer rate vs `negative` beside it: one panel per corpus."""
    import matplotlib.pyplot as plt

    sub = table[table["negatives"] == negative]
    corpora = list(dict.fromkeys(sub["corpus"]))
    fig, axes = plt.subplots(1, len(corpora), figsize=(6.5 * len(corpora), 4), squeeze=False)
    for ax, corpus in zip(axes[0], corpora, strict=True):
        part = sub[sub["corpus"] == corpus].reset_index(drop=True)
        x = np.arange(len(part))
        for col, lo, hi, colour, name in (
            ("answer rate", "AR low (clustered)", "AR high (clustered)", "C0", "answer rate"),
            (
                "false-answer rate",
                "FA low (clustered)",
                "FA high (clustered)",
                "C3",
                "false answers",
            ),
        ):
            err = [part[col] - part[lo], part[hi] - part[col]]
            ax.errorbar(x, part[col], yerr=err, fmt="o", color=colour, label=f"{name} (95% CI)")
        ticks = [
            f"{lv} {lb}\n{lang}"
            for lv, lb, lang in zip(part["level"], part["labels"], part["language"], strict=True)
        ]
        _label_points(
            ax, x, ticks, "rate, out of fold", f"{corpus}: cross-fitted gate vs {negative}"
        )
    fig.tight_layout()
    return fig
