"""The follow-up study's conclusion: every number from the run, every verdict chosen by it (an
exact McNemar test decides whether an arm differs from raw).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from citegate.core.errors import MODEL_ERROR
from citegate.studies.prefloor_recall.followup.compute import paired_vs_raw


def conclusion(
    table: pd.DataFrame,
    rejections: pd.DataFrame,
    yields: pd.DataFrame,
    models: pd.DataFrame,
    results: pd.DataFrame,
    rewrites: pd.DataFrame,
) -> str:
    """Markdown conclusion of the follow-up section: every number from this run, and every
    verdict chosen by it (the paired comparison decides whether an arm differs from raw)."""
    paired = paired_vs_raw(results) if len(results) else pd.DataFrame()
    lines = ["### Follow-up rewriting: conclusion", ""]
    made = ", ".join(
        f"{r['language']} {r['conversations available']}" for r in yields.to_dict("records")
    )
    lines.append(f"- Conversations the data yields (one per verse): {made}.")
    for r in yields.to_dict("records"):
        if not r["conversations available"]:
            lines.append(
                f"- No conversation in {r['language']}: no verse has both a question naming it "
                f"and an elliptical follow-up ({r['turn-1 candidates']} turn-1 and "
                f"{r['follow-up candidates']} follow-up candidates among "
                f"{r['answerable questions']} answerable questions)."
            )
    lines += _error_lines(rewrites)
    if table.empty:
        lines.append("- Nothing was searched: no conversation was sampled.")
        return "\n".join(lines)
    for lang, g in table.groupby("language", sort=False):
        lines.append(f"- **{lang}** (n={int(g['conversations'].max())}): " + _arm_line(g) + ".")
    for r in paired.to_dict("records"):
        name = r["arm"] + (f" ({r['model']})" if r["model"] else "")
        lines.append(
            f"- {name} / {r['language']} against raw on the same conversations: "
            f"{r['gains']} found that raw misses, {r['losses']} missed that raw finds; "
            f"{_paired_verdict(r['gains'], r['losses'])}."
        )
    raw = table[table["arm"] == "raw"].set_index("language")["recall"]
    for r in table[table["arm"] == "rewrite"].to_dict("records"):
        gain = r["recall"] - raw.get(r["language"], np.nan)
        accepted = (
            "no rewrite written"
            if not np.isfinite(r["accepted"])
            else f"{r['accepted']:.0%} of rewrites accepted"
        )
        lines.append(
            f"- {r['model']} / {r['language']}: {accepted}; "
            f"recall {_signed(gain)} against the raw follow-up; the searched query names the "
            f"verse in {r['query names the verse']:.0%} of conversations."
        )
    for model, g in rewrites[rewrites["accepted"].astype(bool)].groupby("model"):
        echo = int(g["echoes_prompt"].astype(bool).sum())
        if echo:
            lines.append(
                f"- {model}: {echo} of its {len(g)} accepted rewrites echo the prompt's data block "
                "(a JSON turn or its tags) instead of a query, yet passed the validator."
            )
    for model, g in rejections.groupby("model"):
        top = g.sort_values("rejections", ascending=False).iloc[0]
        lines.append(
            f"- {model}: most rejections by `{top['rule']}` ({int(top['rejections'])}, "
            f"{top['share of rewrites']:.0%} of its rewrites)."
        )
    skipped = models[~models["used"].astype(bool)] if len(models) else models
    for r in skipped.to_dict("records"):
        lines.append(f"- {r['model']} skipped: {r['why']}.")
    return "\n".join(lines)


def _error_lines(rewrites: pd.DataFrame) -> list[str]:
    """Failed rewrite calls per model (left out of the rewrite arm and its shares)."""
    lines = []
    for model, g in rewrites.groupby("model") if len(rewrites) else []:
        bad = g[g["rule"] == MODEL_ERROR]
        if len(bad):
            lines.append(
                f"- {model}: {len(bad)} of {len(g)} rewrite calls failed "
                f"({str(bad['reason'].iloc[0])[:160]}); they are left out of the rewrite arm."
            )
    return lines


def _paired_verdict(gains: int, losses: int, alpha: float = 0.05) -> str:
    """Whether the discordant conversations tell an arm from raw: the exact McNemar test (a
    two-sided binomial test of gains among gains + losses)."""
    n = gains + losses
    if not n:
        return "no conversation differs, so the arms are not told apart"
    p = binomtest(gains, n, 0.5).pvalue
    if p < alpha:
        better = "better" if gains > losses else "worse"
        return f"{better} than raw at the {alpha:.0%} level (exact McNemar p = {p:.3f})"
    return f"not told apart from raw (exact McNemar p = {p:.2f})"


def _arm_line(g: pd.DataFrame) -> str:
    parts = []
    for r in g.to_dict("records"):
        name = r["arm"] + (f" ({r['model']})" if r["model"] else "")
        parts.append(f"{name} {r['recall']:.0%} (95% CI {r['recall lo']:.0%}–{r['recall hi']:.0%})")
    return "; ".join(parts)


def _signed(x: float) -> str:
    if not np.isfinite(x):
        return "not comparable"
    return f"{'+' if x >= 0 else '−'}{abs(x) * 100:.0f} points"
