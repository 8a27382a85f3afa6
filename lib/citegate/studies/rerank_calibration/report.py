"""Notebook 02's conclusion: which raw score carries one threshold, from the losses measured."""

from __future__ import annotations

import pandas as pd

from citegate.studies.rerank_calibration.compute import TIE

# Measured on the demo data (every build ingested, the default profile): the largest
# move of any of this notebook's metrics between fresh databases built from the same data with
# HNSW dense lanes: two `make run`-style builds, each training its own LTR model on HNSW pools
# (the rerank metrics moved; the cosine ones by at most 1.8e-6), and four builds sharing one LTR
# model file. With exact lanes (and LTR pools) two fresh builds gave identical metrics.
HNSW_BUILD_SPREAD = 4.4e-4
HNSW_BUILD_SPREAD_ONE_MODEL = 4.2e-5


def dense_search_line(exact_dense: bool) -> str:
    """What the dense search of this run means for reproducing its numbers: exact
    lanes depend on the stored rows alone; HNSW lanes on the graph pgvector drew for this build."""
    spread = (
        f"up to {HNSW_BUILD_SPREAD:.1e} between two fresh builds of the demo data, each "
        f"training its own LTR model ({HNSW_BUILD_SPREAD_ONE_MODEL:.1e} with one model file)"
    )
    if exact_dense:
        return (
            "- Dense lanes were searched exactly (`exact_dense`), so these numbers depend on the "
            "stored rows alone: a fresh database built from the same data gives the same numbers. "
            "Production searches the HNSW index, whose graph pgvector draws at random per build; "
            f"searched that way, these metrics moved by {spread}."
        )
    return (
        "- Dense lanes searched the HNSW index (production). pgvector draws its graph at random "
        f"per build, so a fresh database of the same data moves these numbers: by {spread}. "
        "Set `exact_dense: true` for numbers that depend on the stored rows alone."
    )


def conclusion(table: pd.DataFrame, reranker_id: str, exact_dense: bool | None = None) -> str:
    """Markdown conclusion computed from the table: which raw score can carry one threshold;
    with `exact_dense` given (the run's config), what its dense search means for reproducing
    the numbers (`dense_search_line`)."""
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
    if exact_dense is not None:
        lines.append(dense_search_line(exact_dense))
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
