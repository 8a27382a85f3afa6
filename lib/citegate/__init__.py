"""citegate: a cite-or-abstain retrieval pipeline and the research suite that tunes its thresholds."""

from __future__ import annotations

__version__ = "0.1.0"
