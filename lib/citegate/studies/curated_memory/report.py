"""Notebook 07's figures and sentences: the pre-check's precision and recall by threshold, the
two policies' retrieve times, the boost sweep, and the conclusion, every fact in it computed
from the measured values."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from citegate.studies.curated_memory.compute import PRECISION_TARGET


def plot_sweep(table: pd.DataFrame, threshold: float) -> Any:
    """Precision and recall of "memory answers" against the threshold (tune part), the
    recommended threshold marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(table["threshold"], table["precision"], label="precision")
    ax.plot(table["threshold"], table["recall"], label="recall")
    ax.axhline(PRECISION_TARGET, color="grey", lw=0.8, ls=":")
    ax.axvline(threshold, color="black", lw=0.8, ls="--", label=f"recommended {threshold:.4f}")
    ax.set_xlabel("best pinned note's similarity (threshold)")
    ax.set_ylim(0, 1.02)
    lo = table.loc[table["recall"] > 0, "threshold"].min()
    if math.isfinite(lo):
        ax.set_xlim(max(0.0, lo - 0.05), 1.0)
    ax.legend(loc="lower left")
    ax.set_title("Pre-check: does curated memory already answer? (tune part)")
    fig.tight_layout()
    return fig


def plot_paths(rows: pd.DataFrame) -> Any:
    """Retrieve milliseconds per question under each policy (the questions taken lean)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    data = [rows.loc[rows["policy"] == p, "seconds"] * 1000 for p in ("lean", "wide")]
    ax.boxplot(data, tick_labels=["lean", "wide"], vert=False)
    ax.set_xlabel("retrieve ms (median of the timed repeats)")
    ax.set_title("Lean and wide retrieval on the questions taken lean")
    fig.tight_layout()
    return fig


def plot_boost(table: pd.DataFrame, chosen: float) -> Any:
    """Final-notes recall against boost strength, on boost topics and on other questions."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    for name in ("boost topic", "other"):
        ax.errorbar(
            table["strength"], table[f"{name} recall"],
            yerr=[table[f"{name} recall"] - table[f"{name} lo"],
                  table[f"{name} hi"] - table[f"{name} recall"]],
            marker="o", capsize=3, label=name,
        )  # fmt: skip
    ax.axvline(chosen, color="black", lw=0.8, ls="--", label=f"chosen {chosen:g}")
    ax.set_xlabel("memory_boost (added to the rerank score)")
    ax.set_ylabel("gold verses among final notes")
    ax.legend()
    fig.tight_layout()
    return fig


def precheck_line(m: dict[str, float], threshold: float, split: str) -> str:
    """The pre-check at the recommended threshold on one split, in words."""
    if not m["taken"]:
        return f"On the {split} part no question reaches {threshold:.4f}: the pre-check never goes lean."
    verdict = "meets" if m["precision"] >= PRECISION_TARGET else "misses"
    return (
        f"On the {split} part, at threshold {threshold:.4f} the pre-check sends "
        f"{m['taken']:.0f} questions lean; precision {m['precision']:.3f} "
        f"(Wilson 95% {m['precision.ci_lo']:.3f}–{m['precision.ci_hi']:.3f}) {verdict} the "
        f"{PRECISION_TARGET:.2f} target; recall {m['recall']:.3f} of {m['positives']:.0f} "
        f"questions memory answers (trigger echoes {m['recall.trigger']:.3f}, body echoes "
        f"{m['recall.body']:.3f})."
    )


def boost_line(m: dict[str, float], threshold: float) -> str:
    """The boost topic check at its threshold on the test part, in words."""
    if not m["taken"]:
        return f"On the test part no question reaches the boost threshold {threshold:.4f}."
    return (
        f"A boost note takes part from similarity {threshold:.4f}: on the test part it does so "
        f"for {m['taken']:.0f} questions, precision {m['precision']:.3f} (Wilson 95% "
        f"{m['precision.ci_lo']:.3f}–{m['precision.ci_hi']:.3f}), recall {m['recall']:.3f} of "
        f"{m['positives']:.0f} questions on a boost note's topic."
    )


def conclusion(
    pre_test: dict[str, float], threshold: float, paths: dict[str, float], cited: int,
    boost: float, boost_gain: float,
) -> str:  # fmt: skip
    """The conclusion, each fact computed from the values passed."""
    lines = ["**Conclusion.** " + precheck_line(pre_test, threshold, "test")]
    if paths["questions"]:
        faster = "meets" if paths["p50_ratio"] <= 0.6 else "misses"
        lower = paths["recall_diff.hi"] < 0
        lines.append(
            f"On the {paths['questions']:.0f} questions taken lean, the lean path's p50 retrieve "
            f"is {paths['p50_ratio']:.2f}× the wide path's ({faster} the 0.6× goal); its "
            f"final-notes recall differs by {paths['recall_diff']:+.3f} (clustered 95% "
            f"{paths['recall_diff.lo']:+.3f} to {paths['recall_diff.hi']:+.3f}): "
            + ("lower beyond its interval." if lower else "not lower beyond its interval.")
            + f" {paths['decisions_changed']:.0f} gate decisions differ."
        )
    lines.append(
        f"Memory and boost notes among final notes or citations: {cited} "
        + ("(none, as required)." if cited == 0 else "(must be 0: a defect).")
    )
    lines.append(
        f"Boost strength recommended: {boost:g} (recall on boost topics "
        f"{boost_gain:+.3f} against no boost, other questions within 0.01)."
    )
    return "\n\n".join(lines)


__all__ = ["boost_line", "conclusion", "plot_boost", "plot_paths", "plot_sweep", "precheck_line"]
