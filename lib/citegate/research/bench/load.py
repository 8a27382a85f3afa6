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

Each also reports the CPU time a call took, client and database server together (this process
and its reaped workers, the postmaster and its backends, read by psutil before and after), and
from it the least mean latency `callers` callers asking without pause can have on the cores
there are: every call's CPU time is spent on one of them, so a call takes, on average, at least
callers × CPU per call ÷ cores (work conservation). A shared service's p95 over the single
client's cannot fall below that bound over the single client's p95, whatever the service does.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import psycopg

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


def summary(calls: Sequence[Call], wall_s: float, cpu_s: float | None = None) -> dict[str, Any]:
    """Calls made, calls that raised (and their kinds), per-call p50/p95, calls per second, and
    (given the CPU seconds the calls took) the CPU milliseconds per call."""
    kinds = Counter(k for _, k in calls if k)
    out = {
        "calls": len(calls),
        "errors": sum(kinds.values()),
        "error_kinds": dict(kinds),
        **pcts([s for s, _ in calls]),
        "calls_per_s": ratio(len(calls), wall_s),
    }
    if cpu_s is not None:
        out["cpu_ms_per_call"] = ratio(cpu_s * 1000.0, len(calls))
    return out


def cpu_seconds(pid: int | None) -> float:
    """CPU seconds spent so far by this process (its reaped children included) and by the
    database server whose postmaster is `pid` (its own, its reaped backends', its live
    children's); the server's part is left out when its processes cannot be read."""
    total = _process_cpu(psutil.Process())
    if pid is None:
        return total
    try:
        server = psutil.Process(pid)
        total += _process_cpu(server)
        for child in server.children(recursive=True):
            try:
                total += _process_cpu(child, reaped=False)
            except psutil.Error:  # a backend that ended between the listing and the read
                continue
    except psutil.Error:
        pass
    return total


def _process_cpu(proc: psutil.Process, reaped: bool = True) -> float:
    """User and system CPU seconds of a process, and of its reaped children when `reaped`."""
    t = proc.cpu_times()
    own = t.user + t.system
    return own + (t.children_user + t.children_system if reaped else 0.0)


def server_pid(url: str) -> int | None:
    """The postmaster's PID of the server at `url` (postmaster.pid in its data directory), or
    None when it cannot be read (a server on another machine)."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        return int((Path(row[0]) / "postmaster.pid").read_text().split()[0])
    except (psycopg.Error, OSError, ValueError, IndexError, TypeError):
        return None


def cpu_bound_ms(callers: int, cpu_ms_per_call: float) -> float:
    """The least mean latency, ms, of `callers` callers asking without pause on this machine's
    cores when each call takes `cpu_ms_per_call` of CPU (work conservation)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return callers * cpu_ms_per_call / cores


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
    pid = server_pid(url)
    with Service.open(
        config, corpora=corpora, url=url, embedder=embedder, pool_size=threads
    ) as svc:
        answer_calls(svc, list(dict.fromkeys(qs)))  # warm-up: every question once
        clock, cpu = time.perf_counter(), cpu_seconds(pid)
        calls = answer_calls(svc, qs)
        out["single"] = summary(calls, time.perf_counter() - clock, cpu_seconds(pid) - cpu)
        clock, cpu = time.perf_counter(), cpu_seconds(pid)
        with ThreadPoolExecutor(threads) as pool:
            runs = list(pool.map(lambda i: answer_calls(svc, qs, i), range(threads)))
        calls = [c for run in runs for c in run]
        wall = time.perf_counter() - clock
        out["threads_shared"] = summary(calls, wall, cpu_seconds(pid) - cpu)
    cpu = cpu_seconds(pid)
    out["processes"] = bench_processes(config, corpora, url, qs, threads)
    out["processes"]["cpu_ms_per_call"] = ratio(
        (cpu_seconds(pid) - cpu) * 1000.0, out["processes"]["calls"]
    )  # start-up included: each process loads its models
    out["opens"] = bench_opens(tmp, threads, embedder)
    out["shared_p95_over_single"] = ratio(out["threads_shared"]["p95_ms"], out["single"]["p95_ms"])
    out["processes_p95_over_single"] = ratio(out["processes"]["p95_ms"], out["single"]["p95_ms"])
    bound = cpu_bound_ms(threads, out["single"]["cpu_ms_per_call"])
    out["cpu_bound_mean_ms"] = bound
    out["cpu_bound_over_single_p95"] = ratio(bound, out["single"]["p95_ms"])
    return out


def load_rows(res: dict[str, Any]) -> list[list[Any]]:
    """The load part as report rows: callers, calls, errors, p50, p95, calls/s, CPU ms per call;
    then the least mean latency the CPU allows the callers."""
    load = res["load"]
    rows = []
    for name, key in (
        ("one client", "single"),
        (f"{load['threads']} threads, one Service", "threads_shared"),
        (f"{load['threads']} processes, a Service each", "processes"),
    ):
        s = load[key]
        cells = [s["calls"], s["errors"], s["p50_ms"], s["p95_ms"], s["calls_per_s"]]
        rows.append([name, *cells, s.get("cpu_ms_per_call", "")])
    o = load["opens"]
    rows.append([f"{o['opens']} Service.open at once", o["opens"], o["errors"], "", "", "", ""])
    if "cpu_bound_mean_ms" in load:
        least = f"least mean for {load['threads']} callers (CPU bound)"
        rows.append([least, "", "", load["cpu_bound_mean_ms"], "", "", ""])
    return rows


__all__ = ["bench_load", "load_rows"]
