"""Parts 2 and 3 of the bench, on a loaded database: HNSW recall@16 against exact search per kind
group with dense-lane latency (ANN vs exact) and an ef_search sweep; then retrieval latency per
question by stage, and every lane's own latency."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from tqdm.auto import tqdm

from citegate.core.config import PipelineConfig
from citegate.core.fragments import Fragment
from citegate.core.types import KIND_GROUPS
from citegate.models.embed import Embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import lane_batch, lanes
from citegate.pipeline.plan import keywords
from citegate.pipeline.retrieve import RetrievalTrace, retrieve
from citegate.research.bench.common import CORPUS, STAGES, K, pcts, ratio, timed
from citegate.research.bench.server import create_database
from citegate.store import db
from citegate.store.ingest import ingest


def load_corpus(server_url: str, frags: Sequence[Fragment], embedder: Embedder) -> str:
    """A fresh database holding `frags` as corpus `gita`, analyzed but not vacuumed (as ingest
    leaves it); returns its connection string."""
    url = create_database(server_url, "bench_search")
    with db.connect(url) as conn:
        # The bench decides when the table is vacuumed, so no background vacuum (which flushes the
        # GIN pending lists and changes lane latency severalfold) lands inside a measurement.
        conn.execute("ALTER TABLE fragments SET (autovacuum_enabled = false)")
        ingest(conn, frags, CORPUS, embedder)
        conn.execute("ANALYZE fragments")
    return url


def hnsw_scans(conn: psycopg.Connection, embedder_id: str) -> int:
    """How many scans the embedder's HNSW indexes (one per kind group) have served so far (from
    pg_stat_user_indexes)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = ANY(%s)",
        (db.hnsw_index_names(embedder_id),),
    ).fetchone()
    return int(row[0])


def _recall(ann: Sequence[lanes.LaneHit], exact: Sequence[lanes.LaneHit]) -> tuple[float, float]:
    """(id recall, tie-aware recall): the latter counts an ANN hit as found when its cosine is at
    least the exact k-th cosine, so equal-cosine duplicates at the boundary are not misses."""
    truth = {h.fragment_id for h in exact}
    strict = len(truth & {h.fragment_id for h in ann}) / len(truth)
    floor = exact[-1].lane_score - 1e-6
    ties = min(sum(h.lane_score >= floor for h in ann), len(truth)) / len(truth)
    return strict, ties


@dataclass
class _GroupRun:
    """Raw measurements of one kind group: exact hits per question, recalls and latencies."""

    exact: list[list[lanes.LaneHit]]
    recalls: list[tuple[float, float]]
    ann_s: list[float]
    exact_s: list[float]
    index_scans: int


def _run_group(
    conn: psycopg.Connection, qvecs: np.ndarray, embedder_id: str, group: str
) -> _GroupRun:
    """ANN and exact top-k for every question in one group, alternating, timed one by one."""

    def top(vec: np.ndarray, exact: bool) -> list[lanes.LaneHit]:
        return lanes.dense(conn, vec, embedder_id, [CORPUS], group, K, exact=exact)

    top(qvecs[0], False), top(qvecs[0], True)  # warm-up: buffers and plans
    before = hnsw_scans(conn, embedder_id)
    run = _GroupRun([], [], [], [], 0)
    for vec in tqdm(qvecs, desc=f"recall@{K} {group}", unit="q"):
        ann, ann_s = timed(lambda v=vec: top(v, False))
        ex, ex_s = timed(lambda v=vec: top(v, True))
        run.exact.append(ex)
        run.ann_s.append(ann_s)
        run.exact_s.append(ex_s)
        if ex:
            run.recalls.append(_recall(ann, ex))
    run.index_scans = hnsw_scans(conn, embedder_id) - before
    return run


# Planner settings under which the only way to order by distance is the HNSW index.
FORCE_HNSW = {"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_sort": "off"}


@contextmanager
def session_settings(conn: psycopg.Connection, values: dict[str, str]) -> Iterator[None]:
    """Change session settings for a block, then put back the values they had (not RESET, which
    would also drop what `db.connect` set, such as its hnsw.ef_search)."""
    old = {k: conn.execute("SELECT current_setting(%s)", (k,)).fetchone()[0] for k in values}
    try:
        for k, v in values.items():
            conn.execute("SELECT set_config(%s, %s, false)", (k, str(v)))
        yield
    finally:
        for k, v in old.items():
            conn.execute("SELECT set_config(%s, %s, false)", (k, v))


def _ann_pass(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    embedder_id: str,
    exact: dict[str, list[list[lanes.LaneHit]]],
) -> dict[str, float]:
    """Overall recall@k, share of queries the HNSW index served, and p50 latency of one pass."""
    before = hnsw_scans(conn, embedder_id)
    recalls, seconds = [], []
    for g, per_q in exact.items():
        for v, ex in zip(qvecs, per_q, strict=True):
            hits, s = timed(lambda v=v, g=g: lanes.dense(conn, v, embedder_id, [CORPUS], g, K))
            seconds.append(s)
            if ex:
                recalls.append(_recall(hits, ex)[0])
    return {
        "recall_at_16": float(np.mean(recalls)) if recalls else math.nan,
        "via_hnsw": ratio(hnsw_scans(conn, embedder_id) - before, len(seconds)),
        "p50_ms": pcts(seconds)["p50_ms"],
    }


def _ef_sweep(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    embedder_id: str,
    exact: dict[str, list[list[lanes.LaneHit]]],
    values: Sequence[int],
) -> dict[str, dict[str, dict[str, float]]]:
    """At each `hnsw.ef_search`: recall@k as the planner runs the query (it may choose an exact
    scan over the index), and with the HNSW index forced; against the exact hits already found."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for ef in tqdm(values, desc="ef_search sweep", unit="ef"):
        with session_settings(conn, {"hnsw.ef_search": str(ef)}):
            planner = _ann_pass(conn, qvecs, embedder_id, exact)
            with session_settings(conn, FORCE_HNSW):
                forced = _ann_pass(conn, qvecs, embedder_id, exact)
        out[str(ef)] = {"planner": planner, "hnsw_forced": forced}
    return out


def bench_recall(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    embedder_id: str,
    ef_values: Sequence[int] = (40, 64, 100, 200),
) -> dict[str, Any]:
    """Recall@16 of the dense lane against exact search at the session's ef_search, per kind group,
    with latencies and index use; then a sweep over ef_search values."""
    runs = {g: _run_group(conn, qvecs, embedder_id, g) for g in KIND_GROUPS}
    groups = {g: _group_stats([r]) for g, r in runs.items()}
    return {
        "ef_search": conn.execute("SHOW hnsw.ef_search").fetchone()[0],
        "iterative_scan": conn.execute("SHOW hnsw.iterative_scan").fetchone()[0],
        "k": K,
        "questions": len(qvecs),
        "groups": groups,
        "overall": _group_stats(list(runs.values())),
        "ef_sweep": _ef_sweep(
            conn, qvecs, embedder_id, {g: r.exact for g, r in runs.items()}, ef_values
        ),
    }


def _group_stats(runs: Sequence[_GroupRun]) -> dict[str, Any]:
    """Mean recalls, latency percentiles and index use of one group (or all of them)."""
    recalls = [x for r in runs for x in r.recalls]
    ann, ex = pcts([x for r in runs for x in r.ann_s]), pcts([x for r in runs for x in r.exact_s])
    queries = sum(len(r.ann_s) for r in runs)
    return {
        "queries": queries,
        "recall_at_16": float(np.mean([x[0] for x in recalls])) if recalls else math.nan,
        "recall_at_16_tie_aware": float(np.mean([x[1] for x in recalls])) if recalls else math.nan,
        "hnsw_index_scans": sum(r.index_scans for r in runs),
        "ann": ann,
        "exact": ex,
        "exact_over_ann_p50": ratio(ex["p50_ms"], ann["p50_ms"]),
    }


# ---------------------------------------------------------------- 3. retrieval latency by stage


def bench_retrieve(
    conn: psycopg.Connection, questions: Sequence[str], cfg: PipelineConfig, embedder: Embedder
) -> tuple[dict[str, Any], list[RetrievalTrace], list[tuple[int, ...]]]:
    """Run `retrieve` per question; returns (stage latencies, traces, note ids per question)."""
    reranker = CosineReranker()
    per_stage: dict[str, list[float]] = {s: [] for s in (*STAGES, "total")}
    walls: list[float] = []
    traces: list[RetrievalTrace] = []
    notes: list[tuple[int, ...]] = []
    for q in tqdm(questions, desc="retrieve", unit="q"):
        result, wall = timed(lambda q=q: retrieve(conn, q, cfg, embedder, reranker))
        timings = result.trace.timings
        for s in STAGES:
            per_stage[s].append(timings.get(s, 0.0))
        per_stage["total"].append(sum(timings.values()))
        walls.append(wall)
        traces.append(result.trace)
        notes.append(tuple(c.fragment_id for c in result.notes))
    stats = {s: pcts(v) for s, v in per_stage.items()}
    stats["wall"] = pcts(walls)
    stats["questions"] = len(questions)
    stats["wall_s"] = float(sum(walls))
    stats["q_per_s"] = ratio(len(questions), sum(walls))
    stats["missing_stages"] = sorted(set(STAGES) - set(traces[0].timings)) if traces else []
    return stats, traces, notes


def bench_lanes(
    conn: psycopg.Connection, questions: Sequence[str], qvecs: np.ndarray, cfg: PipelineConfig
) -> dict[str, Any]:
    """Per-call latency of every lane at the config's depth: where the `lanes` stage goes; then a
    whole question's lanes both ways, interleaved: `retrieve`'s one batched statement
    (`lane_batch.batch_hits`) and one statement per lane and text. A question's texts are the question
    at lane_k (round 1), then its keywords and the question again at twice the depth (round 2);
    the question's vector stands in for the keywords' (the cost is the same)."""
    eid, corpora, k = cfg.embedder, cfg.corpora, cfg.lane_k
    calls: dict[str, Callable[[str, np.ndarray], object]] = {
        f"dense:{g}": lambda _q, v, g=g: lanes.dense(conn, v, eid, corpora, g, k)
        for g in KIND_GROUPS
    }
    calls["lexical"] = lambda q, _v: lanes.lexical(conn, q, eid, corpora, k)
    calls["address"] = lambda q, _v: lanes.address(conn, q, eid, corpora, k, cfg.address_trgm)
    calls["named"] = lambda q, _v: lanes.named(conn, q, eid, corpora, k)
    calls["question, batched"] = lambda q, v: _question_lanes(conn, q, v, cfg, batched=True)
    calls["question, per lane"] = lambda q, v: _question_lanes(conn, q, v, cfg, batched=False)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for i, (q, v) in enumerate(tqdm(list(zip(questions, qvecs, strict=True)), desc="lanes")):
        names = list(calls)
        if i % 2:  # alternate which of the two whole-question forms runs first
            names[-2:] = names[-1:-3:-1]
        for name in names:
            times[name].append(timed(lambda fn=calls[name], q=q, v=v: fn(q, v))[1])
    return {name: pcts(t) for name, t in times.items()}


def _question_lanes(
    conn: psycopg.Connection, q: str, v: np.ndarray, cfg: PipelineConfig, *, batched: bool
) -> list[list[lanes.LaneHit]]:
    """Every lane of one question's three texts (see `bench_lanes`), batched or one by one."""
    texts, ks = [q, keywords(q), q], [cfg.lane_k, 2 * cfg.lane_k, 2 * cfg.lane_k]
    eid, corpora, trgm = cfg.embedder, cfg.corpora, cfg.address_trgm
    if batched:
        return lane_batch.batch_hits(conn, texts, np.vstack([v, v, v]), ks, eid, corpora, trgm)
    return [
        [h for g in KIND_GROUPS for h in lanes.dense(conn, v, eid, corpora, g, k)]
        + lanes.lexical(conn, t, eid, corpora, k)
        + lanes.address(conn, t, eid, corpora, k, trgm)
        for t, k in zip(texts, ks, strict=True)
    ]
