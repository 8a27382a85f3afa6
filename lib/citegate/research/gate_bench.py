"""`make bench`'s gate row: what the learned gate costs a question, against the coverage gate.

Both configs are production's (its corpora, its LTR reranker from `experiments/models/`), one with
the learned gate it ships, one with `gate: coverage`; each question runs through `retrieve` under
both, interleaved (learned, coverage, learned, ...) after a warm-up of each, so machine noise falls
on both alike. The ratio of the medians is the figure; per-question ratios show the spread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.config_files import production
from citegate.models.embed import Embedder
from citegate.pipeline.retrieve import retrieve
from citegate.store.production import load_reranker


def gate_configs(embedder_id: str, corpus: str) -> tuple[PipelineConfig, PipelineConfig] | None:
    """(learned, coverage): production on `corpus` with this embedder, and the same with the
    coverage gate; None when production does not run the learned gate (nothing to compare)."""
    prod = production()
    if prod.gate != "learned":
        return None
    learned = prod.replace(corpora=[corpus], embedder=embedder_id)
    return learned, learned.replace(gate="coverage", gate_model="", gate_model_digest="")


def bench_gate(
    conn: psycopg.Connection, questions: Sequence[str], embedder: Embedder, corpus: str
) -> dict[str, Any]:
    """Warm `retrieve` latency per question under each gate (ms: p50 of each, ratio of the p50s,
    median and IQR of per-question ratios); {"skipped": why} when production has no learned gate."""
    pair = gate_configs(embedder.id, corpus)
    if pair is None or not questions:
        return {"skipped": "production does not run the learned gate"}
    learned, coverage = pair
    reranker = load_reranker(learned)
    for cfg in pair:  # warm-up: query embeddings cached, index facts and models loaded
        retrieve(conn, questions[0], cfg, embedder, reranker)
    times: dict[str, list[float]] = {"learned": [], "coverage": []}
    for q in questions:
        for name, cfg in (("learned", learned), ("coverage", coverage)):
            start = time.perf_counter()
            retrieve(conn, q, cfg, embedder, reranker)
            times[name].append(time.perf_counter() - start)
    lt, ct = np.asarray(times["learned"]), np.asarray(times["coverage"])
    per_q = lt / ct
    return {
        "questions": len(questions),
        "reranker": learned.reranker,
        "learned_p50_ms": float(np.median(lt) * 1000),
        "coverage_p50_ms": float(np.median(ct) * 1000),
        "learned_over_coverage": float(np.median(lt) / np.median(ct)),
        "per_question_ratio_p50": float(np.median(per_q)),
        "per_question_ratio_iqr": [
            float(np.percentile(per_q, 25)),
            float(np.percentile(per_q, 75)),
        ],
    }


def gate_rows(res: dict[str, Any]) -> list[list[Any]]:
    """The report table's rows."""
    g = res.get("gate", {})
    if "skipped" in g:
        return [["skipped", g["skipped"]]]
    lo, hi = g["per_question_ratio_iqr"]
    return [
        ["questions (interleaved, warm)", g["questions"]],
        ["reranker (both)", g["reranker"]],
        ["learned gate p50, ms", f"{g['learned_p50_ms']:.1f}"],
        ["coverage gate p50, ms", f"{g['coverage_p50_ms']:.1f}"],
        ["learned / coverage (p50s)", f"{g['learned_over_coverage']:.3f}"],
        [
            "per-question ratio, median [IQR]",
            f"{g['per_question_ratio_p50']:.3f} [{lo:.3f}, {hi:.3f}]",
        ],
    ]


__all__ = ["bench_gate", "gate_configs", "gate_rows"]
