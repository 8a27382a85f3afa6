"""The scale bench's lexical measurements (`scale_bench.run` calls them at each size): the text
lanes' latency, the PostgreSQL lexical lane without a budget as the reference top K, each
`lexical_budget` and the BM25 backend beside it (p50/p95, overlap@K with the reference, postings
ranked, the BM25 index's build time and size)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
import psycopg

from citegate.pipeline import lanes
from citegate.store import bm25

K = 16
CORPUS = "scale"  # the synthetic corpus's name in its private database


def pct(seconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of durations in seconds, in ms (NaN when there are none)."""
    ms = np.asarray(seconds, dtype=float) * 1000.0
    p50, p95 = np.percentile(ms, [50, 95]) if len(ms) else (math.nan, math.nan)
    return {"p50_ms": float(p50), "p95_ms": float(p95)}


def measure_text_lanes(
    conn: psycopg.Connection, questions: Sequence[str], eid: str
) -> tuple[dict[str, dict[str, float]], dict[str, set[int]]]:
    """p50/p95 of the lexical and address lanes, one call each per question at depth K; and each
    question's top K of the lexical lane (the PostgreSQL lane without a budget: the reference
    the budgets and BM25 are compared with, kept from the same calls, which at 1M take seconds
    each)."""
    calls = {
        "lexical": lambda q: lanes.lexical(conn, q, eid, [CORPUS], K),
        "address": lambda q: lanes.address(conn, q, eid, [CORPUS], K),
    }
    out, top = {}, {}
    for name, fn in calls.items():
        fn(questions[0])  # warm-up
        seconds = []
        for q in questions:
            clock = time.perf_counter()
            hits = fn(q)
            seconds.append(time.perf_counter() - clock)
            if name == "lexical":
                top[q] = {h.fragment_id for h in hits}
        out[name] = pct(seconds)
    return out, top


def _overlap(full: set[int], got: Sequence[lanes.LaneHit]) -> float | None:
    """The share of the reference top K that a ranker also returns (None: no reference hits)."""
    return len(full & {h.fragment_id for h in got}) / len(full) if full else None


def measure_lexical_tiers(
    conn: psycopg.Connection,
    questions: Sequence[str],
    eid: str,
    budgets: Sequence[int],
    full: dict[str, set[int]],
) -> dict[str, dict[str, float]]:
    """Per budget: the lexical lane's p50/p95 at depth K, its overlap@K with the lane without a
    budget (`full`: the share of that lane's top K it also returns) and the postings its tiers
    rank."""
    out = {}
    for budget in budgets:
        lanes.lexical(conn, questions[0], eid, [CORPUS], K, budget)  # warm-up
        seconds, overlap, postings = [], [], []
        for q in questions:
            clock = time.perf_counter()
            got = lanes.lexical(conn, q, eid, [CORPUS], K, budget)
            seconds.append(time.perf_counter() - clock)
            if (o := _overlap(full[q], got)) is not None:
                overlap.append(o)
            (tier,) = lanes.lexical_tiers(conn, [q], [K], eid, [CORPUS], budget)
            postings.append(tier.postings)
        out[str(budget)] = {
            **pct(seconds),
            "overlap_at_16": float(np.mean(overlap)) if overlap else math.nan,
            "postings_mean": float(np.mean(postings)),
        }
    return out


def measure_bm25(
    conn: psycopg.Connection, questions: Sequence[str], eid: str, full: dict[str, set[int]]
) -> dict[str, float]:
    """The BM25 backend: its index build (what an ingest would add), the lane's p50/p95 at depth
    K and its overlap@K with the PostgreSQL lane without a budget (`full`)."""
    built = bm25.build(conn, eid, [CORPUS])
    lanes.lexical(conn, questions[0], eid, [CORPUS], K, backend="bm25")  # warm-up
    seconds, overlap = [], []
    for q in questions:
        clock = time.perf_counter()
        got = lanes.lexical(conn, q, eid, [CORPUS], K, backend="bm25")
        seconds.append(time.perf_counter() - clock)
        if (o := _overlap(full[q], got)) is not None:
            overlap.append(o)
    size = sum(f.stat().st_size for f in (bm25.index_root() / built.key).rglob("*") if f.is_file())
    return {
        **pct(seconds),
        "build_s": built.seconds,
        "index_mb": size / 1e6,
        "overlap_at_16": float(np.mean(overlap)) if overlap else math.nan,
        "key": built.key,
    }
