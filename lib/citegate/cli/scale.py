"""`citegate bench-scale`: the lanes, a full retrieve (the default config and production's own)
and the HNSW index (build, ef_search x iterative_scan) on synthetic corpora of 10k to 1M
fragments (seeded mixtures of real fragments, or noisy copies with `--corpus copies`; own
embedded PostgreSQL)."""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.models.embed import default_embedder
from citegate.research import lexical_recall, scale_bench, scale_corpus, scale_report
from citegate.store.db import HnswGraph, connect


def cmd_bench_scale(args: argparse.Namespace) -> int:
    """Run the scale bench, print the growth table, write JSON and the plot."""
    settings = scale_bench.ScaleSettings(
        sizes=tuple(args.sizes),
        queries=args.queries,
        groups=tuple(args.groups),
        seed=args.seed,
        corpus=args.corpus,
        noise=args.noise,
        time_budget_s=args.budget_min * 60.0,
        extrapolate_to=tuple(args.extrapolate_to),
        sweep_ef=tuple(args.sweep_ef),
        sweep_iterative=tuple(args.sweep_iterative),
        retrieve_queries=args.retrieve_queries,
        lexical_budgets=tuple(args.lexical_budgets),
        bm25=not args.no_bm25,
        production=not args.no_production,
        halfvec=args.halfvec,
        graphs=tuple(args.graphs),
    )
    rep = scale_bench.run(settings)
    print(scale_report.render(rep))
    for path in scale_report.write(rep, args.out or scale_bench.default_out_dir()):
        print(f"wrote {path}")
    return 0


def cmd_lexical_recall(args: argparse.Namespace) -> int:
    """Measure on the project database and print the table."""
    emb = default_embedder()
    with connect() as conn:
        rows = lexical_recall.measure(
            conn, emb.id, args.sets, args.budgets, args.k, bm25=not args.no_bm25
        )
    print(lexical_recall.render(rows, args.k))
    return 0


def _graph(text: str) -> HnswGraph:
    """`M:EF_CONSTRUCTION` as an HNSW graph, or argparse's one-line error."""
    try:
        m, ef = (int(x) for x in text.split(":"))
        return HnswGraph(m, ef)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: want M:EF_CONSTRUCTION ({err})") from err


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate bench-scale`."""
    p = sub.add_parser(
        "bench-scale",
        help="HNSW build, lane and retrieve latency, recall@16 vs corpus size (synthetic)",
        description=(scale_bench.__doc__ or "").splitlines()[0],
    )
    p.add_argument(
        "--sizes", type=int, nargs="+", default=list(scale_bench.DEFAULT_SIZES), help="fragments"
    )
    p.add_argument("--queries", type=int, default=50, help="demo question vectors per size")
    p.add_argument("--groups", nargs="+", default=list(scale_bench.DEFAULT_GROUPS))
    p.add_argument("--seed", type=int, default=16)
    p.add_argument(
        "--corpus",
        choices=list(scale_corpus.CORPUS_KINDS),
        default=scale_bench.ScaleSettings.corpus,
        help="synthetic fragments: mixtures of 2-3 real ones (default) or noisy copies of one",
    )
    p.add_argument(
        "--noise",
        type=float,
        default=None,
        help=(
            "per-dimension noise sigma (default: "
            f"{scale_corpus.MIX_NOISE} for mixtures, {scale_corpus.COPY_NOISE} for copies)"
        ),
    )
    p.add_argument(
        "--budget-min",
        type=float,
        default=45.0,
        help="a size predicted to overrun this many minutes is not run; its build is extrapolated",
    )
    p.add_argument(
        "--extrapolate-to",
        type=int,
        nargs="*",
        default=[1_000_000],
        help="sizes whose HNSW build time is extrapolated from the measured slope when not run",
    )
    p.add_argument("--sweep-ef", type=int, nargs="*", default=list(scale_bench.SWEEP_EF))
    p.add_argument(
        "--sweep-iterative",
        nargs="*",
        default=list(scale_bench.SWEEP_ITERATIVE),
        choices=list(scale_bench.SWEEP_ITERATIVE),
    )
    p.add_argument("--retrieve-queries", type=int, default=30, help="full retrieves per size")
    p.add_argument(
        "--lexical-budgets",
        type=int,
        nargs="*",
        default=list(scale_bench.ScaleSettings.lexical_budgets),
        help="lexical_budget values measured beside the lane without one (none: skip)",
    )
    p.add_argument(
        "--no-bm25", action="store_true", help="skip the BM25 lexical backend (`store.bm25`)"
    )
    p.add_argument(
        "--no-production",
        action="store_true",
        help="skip the retrieve under production's own config, reranker and gate "
        "(`research.scale_production`)",
    )
    p.add_argument(
        "--halfvec",
        action="store_true",
        help="also measure the dense lane over halfvec HNSW indexes (`research.scale_halfvec`)",
    )
    p.add_argument(
        "--graphs",
        type=_graph,
        nargs="*",
        default=[],
        metavar="M:EF_CONSTRUCTION",
        help="larger HNSW graphs built in place of the default at each size and swept (e.g. 32:128)",
    )
    p.add_argument("--out", type=Path, default=None, help="output dir (default var/bench/scale)")
    p.set_defaults(func=cmd_bench_scale)
    lr = sub.add_parser(
        "lexical-recall",
        help="the lexical lane's gold recall on the demo sets, per lexical_budget",
        description=(lexical_recall.__doc__ or "").splitlines()[0],
    )
    lr.add_argument("--sets", nargs="+", default=list(lexical_recall.DEFAULT_SETS))
    lr.add_argument("--budgets", type=int, nargs="+", default=list(lexical_recall.DEFAULT_BUDGETS))
    lr.add_argument("--k", type=int, default=40, help="lane depth (lane_k)")
    lr.add_argument("--no-bm25", action="store_true", help="skip the BM25 lexical backend")
    lr.set_defaults(func=cmd_lexical_recall)
