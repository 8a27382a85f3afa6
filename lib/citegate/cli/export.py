"""`citegate export-run RUN_ID | --set NAME`: a retrieval pass as a TREC run file and qrels."""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.core import paths
from citegate.core.config_files import resolve
from citegate.core.errors import ConfigError
from citegate.core.inputs import check_name, inside
from citegate.models.embed import default_embedder
from citegate.research.export import KS, ExportedRun, export_experiment_run, export_set
from citegate.store.db import connect


def cmd_export_run(args: argparse.Namespace) -> int:
    """Write the files, then print where they are and citegate's metrics on them."""
    if bool(args.run_id) == bool(args.set):
        raise ConfigError("give an experiment RUN_ID or --set NAME (one of the two)")
    check_name("--set" if args.set else "RUN_ID", args.set or args.run_id)
    emb = default_embedder()
    exports = paths.var_dir() / "exports"
    folder = Path(args.out) if args.out else inside(exports, args.run_id or args.set)
    with connect() as conn:
        if args.set:
            cfg = resolve(args.config).replace(
                **({"reranker": args.reranker} if args.reranker else {})
            )
            done = [export_set(conn, args.set, cfg, emb, folder)]
        else:
            done = export_experiment_run(conn, args.run_id, emb, folder)
    for e in done:
        print(format_export(e))
    return 0


def format_export(e: ExportedRun) -> str:
    """The files of one set and citegate's metrics on them, one line per k."""
    run = e.run
    lines = [
        f"{run.set_name} (searched {run.corpus}): {len(run.rankings)} questions, "
        f"{len(run.qrels)} with relevant documents",
        f"  run    {e.run_file}",
        f"  qrels  {e.qrels_file}",
    ]
    for k in KS:
        m = {name: e.metrics[f"{name}@{k}"] for name in ("recall", "success", "mrr", "ndcg")}
        lines.append("  @" + f"{k:<3}" + "  ".join(f"{n} {v:.4f}" for n, v in m.items()))
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate export-run`."""
    p = sub.add_parser(
        "export-run",
        help="write a retrieval pass as a TREC run file and the set's qrels",
        description="The final notes of every question, as document ids in rank order "
        "(`qid Q0 docid rank score tag`), and the set's gold as qrels (`qid 0 docid 1`), for "
        "trec_eval, ir_measures, ranx or pytrec_eval; prints citegate's own recall, success, "
        "MRR and nDCG at 1, 5 and 10 on the same files.",
    )
    p.add_argument("run_id", nargs="?", help="an experiment run id (or a unique prefix)")
    p.add_argument("--set", help="a question set, retrieved against the build it is labeled on")
    p.add_argument(
        "--config",
        default="production",
        help="with --set: production (default), design, or a config YAML",
    )
    p.add_argument("--reranker", help="with --set: override the config's reranker (e.g. none)")
    p.add_argument("--out", help="folder for the files (default var/exports/<id or set>)")
    p.set_defaults(func=cmd_export_run)
