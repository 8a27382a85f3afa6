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
   then (4d) load: production's `Service` shared by 8 threads, and one per process in 8
   processes, each caller answering 50 questions, against one client alone (errors, p50/p95,
   calls/s), and 8 `Service.open` calls at once on a server none has started; and (4e)
   streaming: the time to a streamed turn's first event and first claim, and the whole
   streamed turn against the same turn answered whole;
5. the environment the numbers were measured in.

A table goes to stdout; the numbers go to `var/bench/bench.json` (or `--out`); the goals the
headline ratios are held against live in `experiments/bench.yaml`. Each step is announced on
stderr as it starts; interrupted (Ctrl-C, or SIGTERM), the run stops its server and removes its
temp dir on the way out.

Modules: `common` (corpus, sizes, timing helpers), `server` (the private PostgreSQL and the temp
dir its servers stop with), `ingest` (part 1), `search` (parts 2 and 3), `replay` (part 4),
`load` (part 4d), `stream` (part 4e), `run` (the run and part 5), `goals` (the goal file and
the verdicts), `report` (tables and JSON).
"""

from __future__ import annotations

from citegate.research.bench.common import (
    FULL,
    QUICK,
    STAGES,
    Sizes,
    gita_fragments,
    read_questions,
)
from citegate.research.bench.goals import load_goals, score_goals
from citegate.research.bench.ingest import ingest_verdict
from citegate.research.bench.replay import replay_grid
from citegate.research.bench.report import default_out, render, write_json
from citegate.research.bench.run import run
from citegate.research.bench.search import (
    FORCE_HNSW,
    hnsw_scans,
    session_settings,
)
from citegate.research.bench.server import bench_server, create_database

__all__ = [
    "FORCE_HNSW",
    "FULL",
    "QUICK",
    "STAGES",
    "Sizes",
    "bench_server",
    "create_database",
    "default_out",
    "gita_fragments",
    "hnsw_scans",
    "ingest_verdict",
    "load_goals",
    "read_questions",
    "render",
    "replay_grid",
    "run",
    "score_goals",
    "session_settings",
    "write_json",
]
