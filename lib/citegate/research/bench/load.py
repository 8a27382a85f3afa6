"""The bench's load part: production's `Service` under concurrent callers, against one client.

What a web service does with the library: one `Service` opened once and shared by its request
threads, or one per worker process. On the bench's database (the `gita` corpus) and production's
config searching it, every caller answers the same `per_caller` questions (fallback off: no
chat model runs), each thread or process starting at its own offset in the list:

- `single`: one client alone, the questions in order (after one warm-up pass of every question,
  so every cache the callers share is warm for all of them);
- `threads`: `threads` threads sharing that one `Service`;
- `processes`: `processes` processes at once, each opening its own `Service`;
- `opens`: `threads` threads calling `Service.open` at the same moment on an embedded server
  none of them has started yet (the race a service's workers run at start).

Each reports the calls made, the calls that raised (with the kinds of error), p50/p95 per call,
and calls per second; the headline is the shared service's p95 over the single client's.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from citegate.models.embed import Embedder
from citegate.pipeline.service import Service
from citegate.research.bench.common import CORPUS, pcts, ratio
from citegate.store import db

THREADS = 8
PER_CALLER = 50
CONFIG = "production"

Call = tuple[float, str]  # (seconds, "" or the kind of error it raised)


def answer_calls(svc: Service, questions: Sequence[str], offset: int = 0) -> list[Call]:
    """Answer `questions` in order from `offset` (wrapping), timing each call; an exception is
    recorded by its kind, never raised: the bench counts errors, it does not stop at one."""
    calls: list[Call] = []
    for i in range(len(questions)):
        q = questions[(offset + i) % len(questions)]
        clock = time.perf_counter()
        try:
            svc.answer(q, fallback=False)
            kind = ""
        except Exception as exc:  # counted and reported by kind
            kind = type(exc).__name__
        calls.append((time.perf_counter() - clock, kind))
    return calls


def summary(calls: Sequence[Call], wall_s: float) -> dict[str, Any]:
    """Calls made, calls that raised (and their kinds), per-call p50/p95, calls per second."""
    kinds = Counter(k for _, k in calls if k)
    return {
        "calls": len(calls),
        "errors": sum(kinds.values()),
        "error_kinds": dict(kinds),
        **pcts([s for s, _ in calls]),
        "calls_per_s": ratio(len(calls), wall_s),
    }


def _process_caller(
    config: str, corpora: Sequence[str], url: str, questions: Sequence[str], offset: int
) -> list[Call]:
    """One worker process: its own `Service`, then the questions from its offset."""
    try:
        with Service.open(config, corpora=corpora, url=url, pool_size=1) as svc:
            return answer_calls(svc, questions, offset)
    except Exception as exc:  # the open itself failed: every call this process owed fails
        return [(0.0, type(exc).__name__)] * len(questions)


def bench_processes(
    config: str, corpora: Sequence[str], url: str, questions: Sequence[str], processes: int
) -> dict[str, Any]:
    """`processes` processes at once (spawned: a fresh interpreter each, as a worker pool's)."""
    ctx = multiprocessing.get_context("spawn")
    clock = time.perf_counter()
    with ProcessPoolExecutor(processes, mp_context=ctx) as pool:
        jobs = [
            pool.submit(_process_caller, config, corpora, url, questions, i)
            for i in range(processes)
        ]
        calls = [c for job in jobs for c in job.result()]
    return {"processes": processes, **summary(calls, time.perf_counter() - clock)}


def bench_opens(tmp: Path, threads: int, embedder: Embedder) -> dict[str, Any]:
    """`threads` threads each starting (or attaching to) one new embedded server and opening a
    `Service` on it, released at the same moment."""
    pgdata = tmp / "open-race" / "pgdata"
    start = threading.Barrier(threads)

    def one(_: int) -> str:
        start.wait()
        try:
            url = db.start_embedded(pgdata)
            opened = Service.open("design", url=url, embedder=embedder, pool_size=1)
            with opened as svc, svc.connection() as conn:
                conn.execute("SELECT 1")
            return ""
        except Exception as exc:  # counted by kind
            return type(exc).__name__

    try:
        with ThreadPoolExecutor(threads) as pool:
            kinds = Counter(k for k in pool.map(one, range(threads)) if k)
    finally:
        db.stop_embedded(pgdata)
    return {"opens": threads, "errors": sum(kinds.values()), "error_kinds": dict(kinds)}


def bench_load(
    url: str,
    questions: Sequence[str],
    embedder: Embedder,
    tmp: Path,
    *,
    threads: int = THREADS,
    per_caller: int = PER_CALLER,
    config: str = CONFIG,
    corpora: Sequence[str] = (CORPUS,),
) -> dict[str, Any]:
    """The load part (see the module docstring) on the database at `url`."""
    qs = [questions[i % len(questions)] for i in range(per_caller)]
    out: dict[str, Any] = {"config": config, "threads": threads, "per_caller": per_caller}
    with Service.open(
        config, corpora=corpora, url=url, embedder=embedder, pool_size=threads
    ) as svc:
        answer_calls(svc, list(dict.fromkeys(qs)))  # warm-up: every question once
        clock = time.perf_counter()
        out["single"] = summary(answer_calls(svc, qs), time.perf_counter() - clock)
        clock = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            runs = list(pool.map(lambda i: answer_calls(svc, qs, i), range(threads)))
        calls = [c for run in runs for c in run]
        out["threads_shared"] = summary(calls, time.perf_counter() - clock)
    out["processes"] = bench_processes(config, corpora, url, qs, threads)
    out["opens"] = bench_opens(tmp, threads, embedder)
    out["shared_p95_over_single"] = ratio(out["threads_shared"]["p95_ms"], out["single"]["p95_ms"])
    out["processes_p95_over_single"] = ratio(out["processes"]["p95_ms"], out["single"]["p95_ms"])
    return out


def load_rows(res: dict[str, Any]) -> list[list[Any]]:
    """The load part as report rows: callers, calls, errors, p50, p95, calls/s."""
    load = res["load"]
    rows = []
    for name, key in (
        ("one client", "single"),
        (f"{load['threads']} threads, one Service", "threads_shared"),
        (f"{load['threads']} processes, a Service each", "processes"),
    ):
        s = load[key]
        rows.append([name, s["calls"], s["errors"], s["p50_ms"], s["p95_ms"], s["calls_per_s"]])
    o = load["opens"]
    rows.append([f"{o['opens']} Service.open at once", o["opens"], o["errors"], "", "", ""])
    return rows


__all__ = ["bench_load", "load_rows"]
