"""The citation study's conclusion: the control and AUROC sentences chosen by the numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from citegate.studies.fallback_disclaimer.citation.compute import headline


def conclusion(
    table: pd.DataFrame, audit: pd.DataFrame, threshold: float, sweep: pd.DataFrame | None = None
) -> str:
    """Markdown conclusion from this run's numbers: every sentence that states a fact is chosen
    by the measured value it reports."""
    lines = ["## Conclusion: citations", ""]
    pooled = headline(table, audit)
    lines += _error_lines(table)
    for (model, fmt), g in table.groupby(["model", "format"]):
        judged = int(g["claims judged"].sum())
        real = pooled.get(f"supported_claim_share.{model}.{fmt}")
        fake = pooled.get(f"shuffled_supported_share.{model}.{fmt}")
        fab = pooled.get(f"fabricated_markers_per_answer.{model}.{fmt}", float("nan"))
        if real is None:
            lines.append(
                f"- {model} / {fmt}: no claim could be judged ({int(g['with text'].sum())} answers with text)."
            )
            continue
        lines.append(
            f"- {model} / {fmt}: {real:.0%} of {judged} judged claims reach cosine {threshold:.2f} "
            f"with a chunk they cite; with the citations shuffled to another question's sources "
            f"{fake:.0%} still do. Fabricated markers per answer: {fab:.2f}."
        )
    for r in audit.to_dict("records"):
        untagged = (
            "no claim to tag"
            if not np.isfinite(r["untagged share"])
            else f"{r['untagged share']:.0%} of claims carried no tag"
        )
        lines.append(
            f"- Audit, {r['model']} / {r['language']}: {r['downgraded']} of {r['tagged SOURCED']} "
            f"[SOURCED] claims cited nothing retrieved and were downgraded to [INFERRED]; "
            f"{untagged}."
        )
    lines += _control_lines(pooled, threshold)
    for fmt, g in sweep.groupby("format") if sweep is not None and len(sweep) else []:
        lines.append(_sweep_line(str(fmt), g.sort_values("threshold").iloc[-1]))
    return "\n".join(lines)


def _error_lines(table: pd.DataFrame) -> list[str]:
    """Failed grounded calls per model and format (left out of every number here)."""
    if "model errors" not in table or not len(table):
        return []
    lines = []
    for (model, fmt), g in table.groupby(["model", "format"]):
        failed, made = (
            int(g["model errors"].sum()),
            int(g["model errors"].sum() + g["answers"].sum()),
        )
        if failed:
            lines.append(
                f"- {model} / {fmt}: {failed} of {made} model calls failed; they are left out of "
                "every number below."
            )
    return lines


def _control_lines(pooled: dict[str, float], threshold: float) -> list[str]:
    """Real against shuffled citations, per (model, format) cell: the largest difference, which
    way it goes, and whether either passes the threshold at all."""
    cells = {
        k.removeprefix("supported_claim_share."): (
            v,
            pooled[k.replace("supported_claim", "shuffled_supported")],
        )
        for k, v in pooled.items()
        if k.startswith("supported_claim_share.")
    }
    if not cells:
        return []
    name, (real, fake) = max(cells.items(), key=lambda kv: abs(kv[1][0] - kv[1][1]))
    gap = real - fake
    if abs(gap) >= 0.15:
        better = (
            "Real citations beat shuffled ones" if gap > 0 else "Shuffled citations beat real ones"
        )
        return [
            f"- {better} by {abs(gap):.0%} in {name} ({real:.0%} vs {fake:.0%} of judged claims "
            f"at {threshold:.2f}), the largest difference of any cell."
        ]
    fakes = [f for _, f in cells.values()]
    head = (
        f"- Real and shuffled citations differ by at most {abs(gap):.0%} in every cell "
        f"(largest: {name}, {real:.0%} vs {fake:.0%})"
    )
    if min(fakes) >= 0.5:
        return [
            head + f": claims clear {threshold:.2f} against another question's sources too, so "
            "the test is a floor against off-topic citations, not evidence that a source states "
            "the claim."
        ]
    if max(fakes) < 0.5 and max(r for r, _ in cells.values()) < 0.5:
        return [
            head + f": few claims clear {threshold:.2f} with either, so the test tells "
            "neither apart at this threshold."
        ]
    return [head + ": at this threshold the test does not tell real citations from shuffled ones."]


def _sweep_line(fmt: str, top: pd.Series) -> str:
    """The AUROC of cited against shuffled cosines, worded by where its interval lies."""
    auc, lo, hi = top["AUROC cited vs shuffled"], top["AUROC lo"], top["AUROC hi"]
    at = (
        f"at {top['threshold']:.2f}, {top['supported (cited)']:.0%} of cited and "
        f"{top['supported (shuffled)']:.0%} of shuffled claims pass"
    )
    if not np.isfinite(auc):
        return f"- {fmt}: no AUROC of cited against shuffled citations (one side empty); {at}."
    ci = f"AUROC {auc:.2f}, 95% CI {lo:.2f}–{hi:.2f}, {int(top['claims'])} claims"
    if lo > 0.5:
        verdict = "tells real from shuffled citations apart better than chance"
    elif hi < 0.5:
        verdict = "ranks shuffled citations ABOVE real ones"
    else:
        verdict = "does not tell real from shuffled citations apart (the interval includes 0.5)"
    return f"- {fmt}: the cited cosine {verdict} ({ci}); {at}."
