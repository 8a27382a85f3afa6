"""citegate: a cite-or-abstain retrieval pipeline and the research suite that tunes its thresholds.

`citegate.store.load_production_config()` is what a service calls: the promoted production config
(`experiments/production.yaml`), refused when its embedder is not its corpora's. The design
numbers are `citegate.core.config.DESIGN`. The command line is `citegate` (`python -m citegate`).
The root package imports nothing: Python runs it before every subpackage, so whatever it imported
would sit below `core`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
