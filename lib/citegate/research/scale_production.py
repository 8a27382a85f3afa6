"""The scale bench's production row: a full `retrieve` under production's own config
(`experiments/production.yaml`, as `store.production.load_production_config` reads it) on the
synthetic corpus. Its lanes (lexical backend, lane_k, cap, fanout...), its reranker (the LTR
model file the config names, digest checked: `load_reranker`), its learned gate (`load_gate`,
passed to `retrieve` so the decision is timed in its `gate` stage) and its memory setting are
kept; only `corpora` (the synthetic corpus) and `embedder` (the bench's query-vector id) are
replaced. Memory stays as production has it: the synthetic database holds no notes, so the
curated-note lane finds nothing and the policy is the wide one (its query is still timed)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from citegate.core import config_files
from citegate.core.config import PipelineConfig
from citegate.models.embed import Embedder
from citegate.models.gate_model import LearnedGate
from citegate.models.protocols import Reranker
from citegate.pipeline.retrieve import retrieve
from citegate.research.scale_lexical import CORPUS, pct
from citegate.store import bm25
from citegate.store.production import load_gate, load_reranker

# the stages of a production retrieve the bench reports (`RetrievalTrace.timings`), and the call
STAGES = ("memory", "lanes", "fetch", "rerank", "cut", "gate", "total")


@dataclass(frozen=True)
class ProductionSetup:
    """Production's config with its reranker and gate loaded, and the facts the report names."""

    config: PipelineConfig
    reranker: Reranker
    gate: LearnedGate | None
    facts: dict[str, Any]


def load_setup(path: Path | None = None) -> ProductionSetup | None:
    """Production's config (`path`, default `experiments/production.yaml`), its reranker and its
    gate, each model file resolved against the config's folder and digest checked as a service
    loads them; None when the file does not exist (a checkout that never promoted a config).
    Loaded before any size is run, so a missing or altered model file stops the bench at once."""
    path = Path(path or config_files.PRODUCTION)
    if not path.exists():
        return None
    named = config_files.named("production" if path == config_files.PRODUCTION else str(path))
    cfg = named.config
    reranker = load_reranker(cfg, path.parent)
    gate = load_gate(cfg, path.parent) if cfg.gate == "learned" else None
    return ProductionSetup(cfg, reranker, gate, describe(cfg, named.version, reranker))


def describe(cfg: PipelineConfig, version: int | None, reranker: Reranker) -> dict[str, Any]:
    """What the report says it measured: the config's version, reranker (with its model
    digest), lexical backend, lanes, gate and memory setting."""
    return {
        "version": version,
        "reranker": getattr(reranker, "cache_id", reranker.id),
        "lexical_backend": cfg.lexical_backend,
        "lexical_budget": cfg.lexical_budget,
        "lane_k": cfg.lane_k,
        "cap": cfg.cap,
        "rerank_top_k": cfg.rerank_top_k,
        "gate": f"learned ({cfg.gate_model})" if cfg.gate == "learned" else cfg.gate,
        "memory": cfg.memory,
    }


def bench_config(cfg: PipelineConfig, embedder_id: str) -> PipelineConfig:
    """Production's config on the synthetic corpus: only `corpora` and `embedder` replaced."""
    return cfg.replace(corpora=(CORPUS,), embedder=embedder_id)


@contextmanager
def lexical_index(conn: psycopg.Connection, cfg: PipelineConfig, built: bool) -> Iterator[None]:
    """The BM25 index the config's lexical lane needs: none for the PostgreSQL backend; for
    BM25 the one the bench already built (`built`), else one built here (not timed: an ingest
    builds it) and deleted afterwards, as the bench deletes its own."""
    if cfg.lexical_backend != "bm25" or built:
        yield
        return
    key = bm25.build(conn, cfg.embedder, list(cfg.corpora)).key
    try:
        yield
    finally:
        shutil.rmtree(bm25.index_root() / key, ignore_errors=True)


def measure(
    conn: psycopg.Connection,
    questions: Sequence[str],
    emb: Embedder,
    setup: ProductionSetup,
    bm25_built: bool = False,
) -> dict[str, dict[str, float]]:
    """A full `retrieve` per question under production's config (`bench_config`) with its
    reranker and gate: p50/p95 (ms) of each of `STAGES` and of the whole call. `bm25_built`: the
    bench's BM25 index for the synthetic corpus exists (reused when the config runs BM25)."""
    cfg = bench_config(setup.config, emb.id)
    per: dict[str, list[float]] = {k: [] for k in STAGES}
    with lexical_index(conn, cfg, bm25_built):
        retrieve(conn, questions[0], cfg, emb, setup.reranker, gate=setup.gate)  # warm-up
        for q in questions:
            clock = time.perf_counter()
            res = retrieve(conn, q, cfg, emb, setup.reranker, gate=setup.gate)
            per["total"].append(time.perf_counter() - clock)
            for k in STAGES[:-1]:
                per[k].append(res.trace.timings.get(k, 0.0))
    return {k: pct(v) for k, v in per.items()}


__all__ = ["STAGES", "ProductionSetup", "bench_config", "describe", "load_setup", "measure"]
