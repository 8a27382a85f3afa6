"""`citegate screenshot`: the newest report of each experiment in headless Chromium."""

from __future__ import annotations

import argparse

from citegate.core import paths
from citegate.tracking.reports import check_latest_reports


def cmd_screenshot(args: argparse.Namespace) -> int:
    """Check every experiment's newest report (figures loaded, no overflow) and save screenshots;
    exit 1 when any report fails."""
    bad = 0
    for check in check_latest_reports(paths.runs_dir()):
        seen = check.seen
        bad += not check.ok
        print(
            f"{'OK  ' if check.ok else 'FAIL'} {check.experiment}: {seen['images']} figures, "
            f"{seen['broken']} broken, overflow={seen['overflow']}  screenshot {check.screenshot}"
        )
    return 1 if bad else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate screenshot`."""
    p = sub.add_parser(
        "screenshot",
        help="open the newest report of each experiment in headless Chromium; check figures "
        "and overflow, save a screenshot beside it",
    )
    p.set_defaults(func=cmd_screenshot)
