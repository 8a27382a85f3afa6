"""Subcommands of later stages register themselves here (keeps `cli` imports light)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from citegate.cli import ask, ltr
from citegate.cli import promote as promote_cli
from citegate.cli import run as run_cli
from citegate.corpus import datacheck

REGISTER: list[Callable[[argparse._SubParsersAction], None]] = [
    ask.register,
    datacheck.register,
    run_cli.register,
    promote_cli.register,
    ltr.register,
]
