"""citegate: a cite-or-abstain retrieval pipeline and the research suite that tunes its thresholds."""

from __future__ import annotations

__version__ = "0.1.0"


def load_production_config(*args: object, **kwargs: object) -> object:
    """The validated production `PipelineConfig` (see `citegate.tracking.promote.load_production_config`)."""
    from citegate.tracking.promote import load_production_config as load

    return load(*args, **kwargs)  # type: ignore[arg-type]
