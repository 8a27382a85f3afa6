"""Notebook 02's conclusion: which raw score carries one threshold, from the losses measured."""

from __future__ import annotations

import pandas as pd

from citegate.studies.calibration.compute import TIE


def conclusion(table: pd.DataFrame, reranker_id: str) -> str:
    """Markdown conclusion computed from the table: which raw score can carry one threshold."""
    t = table.set_index("score")
    raw = t.loc[["cosine", "rerank"]]
    winner = str(raw["loss vs oracle"].idxmin())
    lines = [
        "## Conclusion",
        "",
        f"Scores compared: cosine (embedder) and the rerank score of `{reranker_id}`.",
    ]
    for s in ("cosine", "rerank"):
        r = t.loc[s]
        lines.append(
            f"- **{s}**: one global threshold ({r['global threshold']:.3f}) reaches "
            f"balanced accuracy {r['global bal. acc.']:.3f} against {r['oracle bal. acc.']:.3f} "
            f"for per-question oracles (loss {r['loss vs oracle']:.3f}); per-question best "
            f"thresholds have IQR {r['best-threshold IQR']:.3f}; pooled AUROC "
            f"{r['pooled AUROC']:.3f} vs mean per-question AUROC "
            f"{r['mean per-question AUROC']:.3f}; ECE {r['ECE']:.3f}."
        )
    lines.append(_carrier_line(raw, winner))
    if reranker_id == "none":
        lines.append(
            "- The reranker is `none`, so the rerank score *is* the cosine: rerun with a "
            "real reranker (LTR, LLM or Voyage) for a meaningful comparison."
        )
    return "\n".join(lines)


def _carrier_line(raw: pd.DataFrame, winner: str) -> str:
    """Which raw score loses less to per-question oracles, or that neither does (a tie)."""
    gap = abs(float(raw["loss vs oracle"].diff().iloc[-1]))
    if gap < TIE:
        return (
            f"- On this data cosine and rerank lose the same to per-question oracles (gap "
            f"{gap:.3f} balanced-accuracy points, under {TIE}): neither carries an absolute "
            "threshold better."
        )
    return (
        f"- On this data **{winner}** loses less to per-question oracles, so it is the "
        f"better carrier of an absolute threshold; the gap to the other is "
        f"{gap:.3f} balanced-accuracy points."
    )
