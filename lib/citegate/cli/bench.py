"""`citegate bench` (ratios measured in one run on a throwaway database) and `citegate
rerank-eval` (rerankers compared on the same candidate pools)."""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.research import bench, rerank_eval
from citegate.research.ltr_training import DEFAULT_SETS


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks, print the table, write the JSON."""
    res = bench.run(bench.QUICK if args.quick else bench.FULL)
    out = args.out or bench.default_out()
    print(bench.render(res))
    bench.write_json(res, out)
    print(f"wrote {out}")
    return 0


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
