"""`citegate run experiments/NAME.yaml ...`: execute experiments and check their expected metrics."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.core.yamlfile import loads_yaml
from citegate.models.embed import default_embedder_id
from citegate.tracking.runner import RunOutcome, format_checks, run_experiment, tracking_uri
from citegate.tracking.schedule import Finished, run_scheduled, summary
from citegate.tracking.spec import ExperimentSpec, corpus_facts, load_spec, with_corpus
from citegate.tracking.store import check_store


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs; values parsed as YAML (so numbers, lists and dicts work)."""
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--set expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key.strip()] = loads_yaml(value, f"--set {key.strip()}")
    return out


def dry_run(
    spec: ExperimentSpec,
    profile: str | None,
    overrides: dict[str, Any],
    corpus: str | None = None,
) -> str:
    """What would run: notebook, effective parameters (the notebook's defaults under the spec's,
    the profile's and the overrides), pipeline config, expectations. The spec's parameters were
    checked against the notebook when it was loaded; the overrides are checked here."""
    params = spec.resolved(profile, with_corpus(spec, corpus, overrides))
    cfg = spec.config(default_embedder_id(), params)
    lines = [
        f"experiment {spec.name}  ({spec.path})",
        f"  notebook  {spec.notebook}",
        f"  output    {paths.runs_dir() / spec.name}/<timestamp>-<run id>/",
        f"  profile   {profile or 'default'}",
        *(_corpus_lines(corpus) if corpus else []),
        f"  timeout   {spec.timeout_s:g} s per notebook cell",
        "  parameters:",
    ]
    lines += [f"    {k} = {v!r}" for k, v in spec.effective(params).items()]
    lines.append(
        f"  pipeline config (overrides of the {spec.config_name(params)} config): "
        + (", ".join(f"{k}={v}" for k, v in spec.pipeline.items()) or "none")
    )
    lines.append(f"  config    {cfg.to_dict()}")
    for k, v in spec.sweep.items():
        lines.append(f"  sweep     {k} over {v} (nested runs)")
    if corpus:
        lines.append("  expected metrics: not checked (measured on the demo corpora)")
        return "\n".join(lines)
    lines.append("  expected metrics:" if spec.expected else "  expected metrics: none declared")
    lines += [f"    {k} = {e.value} ± {e.tolerance}" for k, e in spec.expected.items()]
    return "\n".join(lines)


def _corpus_lines(corpus: str) -> list[str]:
    facts = corpus_facts(corpus)
    return [
        f"  corpus    {corpus} (imported): set {facts['imported_set']} sha256 "
        f"{facts['imported_set_digest'][:16]}…, build {facts['imported_build']}"
    ]


def cmd_run(args: argparse.Namespace) -> int:
    """Run (or dry-run) the experiments, lanes side by side unless `--serial`; print each result
    as it finishes, then a one-screen summary; exit 1 if any run failed or missed an expectation."""
    overrides = parse_sets(args.set or [])
    specs = [load_spec(Path(p)) for p in args.specs]
    if args.dry_run:
        for spec in specs:
            print(dry_run(spec, args.profile, overrides, args.corpus))
        return 0
    for spec in specs:  # every parameter mistake before anything runs
        spec.resolved(args.profile, with_corpus(spec, args.corpus, overrides))
    check_store(tracking_uri())  # an unreachable server or a damaged file, before any notebook
    on = f" on imported corpus {args.corpus}" if args.corpus else ""
    print(f"== {len(specs)} experiment(s), {args.profile or 'default'} profile{on}", flush=True)

    def run(spec: ExperimentSpec, on_start: Callable[[Path], None]) -> RunOutcome:
        return run_experiment(
            spec, profile=args.profile, overrides=overrides, corpus=args.corpus, on_start=on_start
        )

    clock = time.perf_counter()
    done = run_scheduled(specs, run, parallel=not args.serial, announce=announce)
    if len(done) > 1:
        print("\n" + summary(done, time.perf_counter() - clock))
    return 0 if all(f.outcome.ok for f in done) else 1


def announce(f: Finished) -> None:
    """Print a finished experiment above the display: status, time, run, report, each check; its
    error in full on stderr."""
    out = f.outcome
    tqdm.write(
        f"== {f.spec.name}: {out.status} in {f.seconds:.0f} s  run {out.run_id}  "
        f"report {out.run_dir / 'report.html'}",
        file=sys.stdout,
    )
    if out.error:  # in full: the notebook's exception class and message, each failed child
        tqdm.write(f"   error: {out.error}", file=sys.stderr)
    checks = format_checks(out) if out.checks else ""
    tqdm.write(checks or "   (expected metrics not checked for this profile or corpus)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate run`."""
    p = sub.add_parser("run", help="execute experiments (papermill + MLflow + report + checks)")
    p.add_argument("specs", nargs="+", help="experiments/*.yaml")
    p.add_argument("--profile", help="a named parameter profile of the spec (e.g. tiny, full)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a parameter")
    p.add_argument(
        "--corpus",
        metavar="NAME",
        help="run on an imported corpus (`citegate data import-beir`): its split set and build, "
        "and its out-of-scope set, replace the notebook's question sets",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would run, run nothing")
    p.add_argument(
        "--serial",
        action="store_true",
        help="one experiment at a time, in the order given (default: each spec's lane runs side "
        "by side with the others, e.g. the LLM-bound 04 beside the retrieval passes)",
    )
    p.set_defaults(func=cmd_run)
