"""Subcommands of later stages register themselves here (keeps `cli` imports light)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from citegate import ask, datacheck, ltr, promote_cli, run_cli

REGISTER: list[Callable[[argparse._SubParsersAction], None]] = [
    ask.register,
    datacheck.register,
    run_cli.register,
    promote_cli.register,
    ltr.register,
]
