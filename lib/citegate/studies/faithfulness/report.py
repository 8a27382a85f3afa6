"""Notebook 06's prose and figures for the answer part: every sentence that states a fact is
chosen by the value it reports (a composer "passes" only when its measured share does)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from citegate.studies.faithfulness.answers import SUPPORTED_BAR, passes_bar


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.1%}"


def composer_lines(table: pd.DataFrame, threshold: float, chosen: str) -> list[str]:
    """One bullet per composer (all languages): supported share with its interval, what failed
    the bar, fabricated markers and whether any was shown unflagged, exact abstentions."""
    lines = []
    for r in table[table["language"] == "all"].to_dict("records"):
        verdict = "passes" if passes_bar(table, r["composer"]) else "does not pass"
        abst = (
            f"; it abstained on {r['abstained']} question(s), "
            f"{_pct(r['abstention_exact'])} with the exact sentence"
            if r["abstained"]
            else ""
        )
        lines.append(
            f"- **{r['composer']}**: {r['answered']} of {r['questions']} questions answered, "
            f"{r['claims']} claims, {_pct(r['supported_share'])} supported at {threshold:.4f} "
            f"(95% CI {_pct(r['supported_lo'])}–{_pct(r['supported_hi'])}, by question); "
            f"{r['uncited']} uncited, {r['unsupported']} unsupported, "
            f"{r['fabricated_markers']} fabricated marker(s), {r['fabricated_unflagged']} shown "
            f"unflagged; {r['model_errors']} model error(s){abst}. It {verdict} the bar of "
            f"{SUPPORTED_BAR:.0%} supported with nothing fabricated shown unflagged."
        )
    lines.append(
        f"- The composer recommended for production: **{chosen}**"
        + (
            " (faithful by construction: the notes' own sentences)."
            if chosen == "extractive"
            else "."
        )
    )
    return lines


def plot_composers(table: pd.DataFrame) -> Any:
    """Supported share per composer and language, with its clustered interval and the bar."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    parts = table[table["claims"] > 0]
    labels = [f"{r.composer}\n{r.language}" for r in parts.itertuples()]
    y = parts["supported_share"].to_numpy()
    err = [y - parts["supported_lo"].to_numpy(), parts["supported_hi"].to_numpy() - y]
    ax.bar(range(len(y)), y, yerr=err, capsize=3, color="#4c72b0")
    ax.axhline(SUPPORTED_BAR, color="#c44e52", ls="--", lw=1, label=f"bar {SUPPORTED_BAR:.0%}")
    ax.set_xticks(range(len(y)), labels, fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("claims supported")
    ax.set_title("Share of claims a cited note supports, per composer and language")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


__all__ = ["composer_lines", "plot_composers"]
