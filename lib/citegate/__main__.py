"""`python -m citegate` runs the CLI."""

from __future__ import annotations

import sys

from citegate.cli import main

sys.exit(main())
