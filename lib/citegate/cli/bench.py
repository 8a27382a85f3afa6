"""`citegate bench` (ratios measured in one run on a throwaway database) and `citegate
rerank-eval` (rerankers compared on the same candidate pools)."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from citegate.research import bench, rerank_eval
from citegate.research.ltr_training import DEFAULT_SETS


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks, print the table, write the JSON. Each step is announced on stderr as
    it starts (a run takes minutes); SIGTERM stops the run as Ctrl-C does, so its private
    PostgreSQL is stopped and its temp dir removed on the way out."""
    clock = time.perf_counter()

    def progress(step: str) -> None:
        print(f"bench [{time.perf_counter() - clock:4.0f} s] {step}", file=sys.stderr, flush=True)

    with sigterm_interrupts():
        res = bench.run(bench.QUICK if args.quick else bench.FULL, progress=progress)
    out = args.out or bench.default_out()
    print(bench.render(res))
    bench.write_json(res, out)
    print(f"wrote {out}")
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program stands, so that every `finally` on the way out runs
    (the default action ends the process at once, leaving a bench's PostgreSQL running)."""

    exit_status = 128 + signal.SIGTERM  # what a shell reports for a program SIGTERM ended


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While inside, SIGTERM raises `Terminated` (once: a second SIGTERM during the clean-up
    is ignored, so the clean-up finishes); the handler before is restored on the way out."""

    def handler(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    before = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def cmd_rerank_eval(args: argparse.Namespace) -> int:
    """Run the comparison on the project database and print it as a Markdown table."""
    print(rerank_eval.report(args.sets, args.splits, args.limit, args.rerankers))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate bench` and `citegate rerank-eval`."""
    p = sub.add_parser(
        "bench",
        help="benchmarks, reported as ratios measured in one run (own embedded PostgreSQL)",
        description=(bench.__doc__ or "").splitlines()[0],
    )
    p.add_argument("--quick", action="store_true", help=f"smaller sizes ({bench.QUICK})")
    p.add_argument(
        "--out", type=Path, default=None, help="JSON output (default var/bench/bench.json)"
    )
    p.set_defaults(func=cmd_bench)
    r = sub.add_parser(
        "rerank-eval",
        help="compare rerankers on the same candidate pools (nDCG@10, MRR, pairs/s)",
        description=rerank_eval.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("--sets", nargs="+", default=list(DEFAULT_SETS))
    r.add_argument(
        "--splits", nargs="+", default=list(rerank_eval.SPLITS), choices=list(rerank_eval.SPLITS)
    )
    r.add_argument(
        "--limit", type=int, default=rerank_eval.DEFAULT_LIMIT, help="questions per set and split"
    )
    r.add_argument(
        "--rerankers", nargs="+", default=list(rerank_eval.DEFAULT_RERANKERS), help="names"
    )
    r.set_defaults(func=cmd_rerank_eval)
