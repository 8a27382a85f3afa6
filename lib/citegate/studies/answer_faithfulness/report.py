"""Notebook 06's prose and figures for the answer part: every sentence that states a fact is
chosen by the value it reports (a composer "passes" only when its measured share does)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from citegate.studies.answer_faithfulness.answers import passes_bar
from citegate.studies.answer_faithfulness.bars import SUPPORTED_LOW


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
            f"unflagged; {r['model_errors']} model error(s){abst}. It {verdict} the composer's "
            f"bar: the interval's low end above {SUPPORTED_LOW:.0%} supported, nothing "
            "fabricated shown unflagged, no failed call."
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


def mode_line(rows: Sequence[Any], mode: str, named: str) -> str:
    """Which support mode is certified and why: named by the run (with the best mode's tune
    AUROC beside it, so the price of the choice is on the page) or the best one."""
    pooled = {r.mode: r.row.auroc for r in rows if r.row.slice.name == "all"}
    best = max(pooled, key=pooled.__getitem__) if pooled else mode
    if not named or named == best:
        return f"Support mode certified: **`{mode}`**, the highest tune AUROC over all pairs."
    return (
        f"Support mode certified: **`{mode}`** (tune AUROC over all pairs "
        f"{pooled.get(mode, float('nan')):.3f}), named by `SUPPORT_MODE`: with the extractive "
        "composer it embeds nothing new, since the claims and the note sentences were embedded "
        f"as passages when the answer was composed. The best tune AUROC is `{best}`'s, "
        f"{pooled[best]:.3f}."
    )


def plot_composers(table: pd.DataFrame) -> Any:
    """Supported share per composer and language, with its clustered interval and the bar
    its interval's low end must clear."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.2))
    parts = table[table["claims"] > 0]
    labels = [f"{r.composer}\n{r.language}" for r in parts.itertuples()]
    y = parts["supported_share"].to_numpy()
    err = [y - parts["supported_lo"].to_numpy(), parts["supported_hi"].to_numpy() - y]
    ax.bar(range(len(y)), y, yerr=err, capsize=3, color="#4c72b0")
    ax.axhline(SUPPORTED_LOW, color="#c44e52", ls="--", lw=1, label=f"bar {SUPPORTED_LOW:.0%}")
    ax.set_xticks(range(len(y)), labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("claims supported")
    ax.set_title("Share of claims a cited note supports, per composer and language")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_scores(pairs: Sequence[Any], scores: Any, threshold: float) -> Any:
    """Support scores of supported and unsupported pairs of the test part, per corpus, with the
    certified threshold."""
    import matplotlib.pyplot as plt

    corpora = sorted({p.corpus for p in pairs})
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.2 * len(corpora), 3.2), squeeze=False)
    for ax, corpus in zip(axes[0], corpora, strict=True):
        for label, colour, name in ((1, "#4c72b0", "supported"), (0, "#c44e52", "unsupported")):
            s = [float(x) for p, x in zip(pairs, scores, strict=True)
                 if p.corpus == corpus and p.split == "test" and p.label == label]  # fmt: skip
            ax.hist(s, bins=30, alpha=0.6, color=colour, label=f"{name} ({len(s)})")
        if math.isfinite(threshold):
            ax.axvline(threshold, color="black", ls="--", lw=1, label=f"certified {threshold:.3f}")
        ax.set_title(f"{corpus}: test pairs")
        ax.set_xlabel("support score")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def examples(rows: Sequence[Any], per_composer: int = 2) -> pd.DataFrame:
    """A few answers of each composer as the user reads them, with their claim verdicts."""
    out, seen = [], {}
    for r in rows:
        if r.outcome != "answered" or seen.get(r.composer, 0) >= per_composer:
            continue
        seen[r.composer] = seen.get(r.composer, 0) + 1
        verdicts = ", ".join(c["status"] for c in r.claims)
        out.append(
            {
                "composer": r.composer,
                "question": r.question,
                "answer": r.shown,
                "verdicts": verdicts,
            }
        )
    return pd.DataFrame(out)


def judge_line(summary: Any, agreement: float, judge: str, skipped: str) -> str:
    """One paragraph on the judge: skipped, unusable (its bias), or usable with its agreement."""
    if skipped:
        return f"The judge `{judge}` did not run: {skipped}."
    lo, hi = summary.flip_ci
    bias = (
        f"its preferred answer flipped with the order in {summary.flips} of {summary.n_decided} "
        f"decided pairs ({_pct(summary.flip_rate)}, 95% CI {_pct(lo)}–{_pct(hi)}; slot A's mean "
        f"advantage {summary.a_advantage:+.2f} points)"
    )
    if not summary.usable:
        return (
            f"The judge `{judge}` is **{summary.verdict}**: {bias}. Its scores measure the slot, "
            "not the answer, so none is averaged or compared here."
        )
    agree = "not measurable" if not math.isfinite(agreement) else f"Spearman ρ = {agreement:.2f}"
    return (
        f"The judge `{judge}` is {summary.verdict}: {bias}. Its faithfulness scores against the "
        f"claim check's supported share per answer: {agree}."
    )


def config_table(cfg: Any, recommended: Any, params: dict[str, Any]) -> pd.DataFrame:
    """The config the answers were checked with, what the run recommends, and its parameters."""
    rows = {
        **{k: v for k, v in cfg.to_dict().items()},
        **{f"param {k}": v for k, v in params.items()},
    }
    for k in ("composer", "support_mode", "support_threshold"):
        rows[f"recommended {k}"] = getattr(recommended, k)
    return pd.DataFrame({"key": list(rows), "value": [str(v) for v in rows.values()]})


__all__ = [
    "composer_lines",
    "config_table",
    "examples",
    "judge_line",
    "plot_composers",
    "plot_scores",
]
