"""`citegate models`: which model each role of a config runs, whether it can be reached, and
whether it has passed the bar that measures it.

One row per role (planner, rewrite, outline, composer, fallback): whether the config's turn runs it
(`pipeline.roles.runnable_roles`), its model (the bundled model's id, or the remote id the
config names: never one the environment's keys pick), reachable (the bundled model: the `llm`
extra is installed; a remote model: its key is set and its API lists it, one `GET /models`
through the SDK with a short timeout, skipped by `--no-check`), its verdict and the run that
gave it (the fallback's `fallback_bar`, notebook 04; the query planner's `planner_bar` and the
follow-up rewrite's `rewrite_bar`, notebook 01; the composer's and the outline planner's
`composer_bar`, notebook 06). It reads the config only: no database, no model
started.

`citegate models adopt RUN --role ROLE` copies the passing verdict a notebook wrote into its run
folder into production's models/ folder and prints the bar line to set (`tracking.promote.verdicts`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.cli.ask import config_name
from citegate.core.config_files import PRODUCTION, named
from citegate.core.terminal import visible
from citegate.core.verdicts import VERDICT_ROLES
from citegate.pipeline.render import dumps
from citegate.pipeline.roles import RoleStatus, role_statuses
from citegate.pipeline.service import model_folders
from citegate.store.production import MODELS_DIR
from citegate.tracking.promote.verdicts import adopt

CHECK_TIMEOUT_S = 5.0
COLUMNS = ("role", "runs", "model", "reachable", "verdict", "run")


def reachable_cell(row: RoleStatus) -> str:
    """ "yes", "no (why)" or "not checked (why)" for one row."""
    if row.reachable is None:
        return f"not checked ({row.detail})"
    return "yes" if row.reachable else f"no ({row.detail})"


def table(rows: list[RoleStatus]) -> str:
    """The rows as a plain text table, one role a line, columns padded to their widths."""
    cells = [
        [r.role, "yes" if r.runs else "no", r.model, reachable_cell(r), r.verdict, r.run or "-"]
        for r in rows
    ]
    lines = [list(COLUMNS), *([visible(c, keep="") for c in row] for row in cells)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def cmd_models(args: argparse.Namespace) -> int:
    """Print each role's model, reachability and verdict under the chosen config."""
    choice = named(config_name(args))
    folder, root = model_folders(choice)
    rows = role_statuses(
        choice.config, check=not args.no_check, timeout=CHECK_TIMEOUT_S, base=folder, root=root
    )
    if args.json:
        print(dumps({"config": choice.describe(), "roles": [r.as_dict() for r in rows]}))
    else:
        print(f"config: {visible(choice.label(), keep='')}\n{table(rows)}")
    return 0


def cmd_adopt(args: argparse.Namespace) -> int:
    """Adopt a passing verdict (`tracking.promote.verdicts.adopt`) and say which bar to set."""
    into = Path(args.into) if args.into else PRODUCTION.parent / MODELS_DIR
    done = adopt(Path(args.source), args.role, into, args.model)
    v = done.verdict
    print(f"adopted: {visible(str(done.path), keep='')}")
    print(f"{visible(v.model, keep='')} passed the {v.role} bar in run {visible(v.run, keep='')}")
    print(f"name it in the config: {visible(done.config_line, keep='')}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate models` to the CLI."""
    p = sub.add_parser(
        "models",
        help="list the model each role runs, whether it is reachable and its verdict",
        description="Read the production config (experiments/production.yaml) unless --config "
        "or --design says otherwise, and list one row per model role.",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--config",
        metavar="PATH",
        help="this config YAML (a production document or a PipelineConfig mapping) instead of "
        "experiments/production.yaml",
    )
    which.add_argument(
        "--design",
        action="store_true",
        help="the design numbers (core.config.DESIGN) instead of production",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--no-check",
        action="store_true",
        help="do not ask a remote API whether it lists the model (GET /models); a set key "
        "is then shown as not checked",
    )
    p.set_defaults(func=cmd_models)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    a = actions.add_parser(
        "adopt",
        help="copy a passing role verdict from a run folder into production's models/ folder",
        description="Copy the passing verdict a notebook wrote on ROLE (its run folder's "
        "verdicts/) into experiments/models/ by content digest and print the bar line the "
        "config needs. A failed verdict, or one from a run that did not finish or failed its "
        "expected-metric check, is refused.",
    )
    a.add_argument("source", metavar="RUN", help="a run folder (var/runs/<experiment>/<run>) "
                   "or one verdict file")  # fmt: skip
    a.add_argument("--role", required=True, choices=VERDICT_ROLES, help="the role it vouches for")
    a.add_argument("--model", help="the model, when the run measured several on that role")
    a.add_argument(
        "--into",
        metavar="FOLDER",
        help="the models/ folder of the config that will name it (default: production's, "
        "experiments/models/)",
    )
    a.set_defaults(func=cmd_adopt)
