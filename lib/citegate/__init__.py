"""citegate: a cite-or-abstain retrieval pipeline and the research suite that tunes its thresholds.

A service calls one object, `citegate.pipeline.service.Service`: `Service.open()` wires the promoted
production config (`experiments/production.yaml`) once, every model file it names checked against
its digest, and `answer`, `retrieve` and `stream` take questions from any number of threads (a
corpus holding no fragments for the config's embedder is refused at the first). The design numbers
are `citegate.core.config.DESIGN`. The command line is `citegate` (`python -m citegate`), built on
the same `Service`.
The root package imports nothing: Python runs it before every subpackage, so whatever it imported
would sit below `core`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
