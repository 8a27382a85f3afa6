"""citegate: a cite-or-abstain retrieval pipeline and the research suite that tunes its thresholds.

`citegate.load_production_config()` is what a service calls: the promoted production config
(`experiments/production.yaml`), refused when its embedder is not its corpora's. The design
numbers are `citegate.core.config.DESIGN`. The command line is `citegate` (`python -m citegate`).
"""

from __future__ import annotations

__version__ = "0.1.0"

from citegate.store.production import load_production_config  # noqa: E402 - after __version__

__all__ = ["__version__", "load_production_config"]
