"""`citegate promote RUN_ID | --rollback`."""

from __future__ import annotations

import argparse

from citegate.core.errors import ConfigError
from citegate.tracking import promote as P
from citegate.tracking.promote import production_file


def cmd_promote(args: argparse.Namespace) -> int:
    """Promote a run's recommended config (exit 1 when refused), or roll back."""
    if args.rollback:
        restored, replaced = P.rollback()
        print(
            f"rolled back: registry version {restored} is production again (was {replaced}); "
            f"{production_file.PRODUCTION} restored byte for byte"
        )
        return 0
    if args.latest:
        if args.run_id:
            raise ConfigError("give a RUN_ID or --latest EXPERIMENT, not both")
        args.run_id = P.latest_run(args.latest)
        print(f"newest finished run of {args.latest}: {args.run_id}")
    if not args.run_id:
        raise ConfigError(
            "give a RUN_ID (an MLflow run of notebook 03 or 05), --latest or --rollback"
        )
    decision = P.promote(
        args.run_id, force=args.force, reason=args.reason or "", dry_run=args.dry_run
    )
    print(P.as_json(decision) if args.json else P.summary(decision))
    if args.dry_run:
        print("(dry run: nothing written)")
    return 0 if decision.accepted else 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate promote`."""
    p = sub.add_parser("promote", help="promote a run's recommended config to production (gated)")
    p.add_argument(
        "run_id", nargs="?", help="MLflow run id whose recommended_config.yaml to promote"
    )
    p.add_argument("--force", action="store_true", help="promote even if a guard metric is worse")
    p.add_argument("--reason", help="why (mandatory with --force; recorded)")
    p.add_argument(
        "--dry-run", action="store_true", help="evaluate and show the diff; write nothing"
    )
    p.add_argument(
        "--latest",
        metavar="EXPERIMENT",
        help="the newest finished run of EXPERIMENT (e.g. 05_gate_signals)",
    )
    p.add_argument("--rollback", action="store_true", help="restore the previous production config")
    p.add_argument("--json", action="store_true", help="machine-readable decision")
    p.set_defaults(func=cmd_promote)
