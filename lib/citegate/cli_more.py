"""Subcommands of later stages register themselves here (keeps `cli` imports light)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from citegate import ask, datacheck

REGISTER: list[Callable[[argparse._SubParsersAction], None]] = [ask.register, datacheck.register]
