"""The production config as a service loads it: `experiments/production.yaml`, validated, and
refused when its embedder is not the one its corpora were embedded with (vectors of two embedders
never mix). Reading the file is `core.config.production`; this module adds the database check.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from citegate.core.config import PRODUCTION, PipelineConfig, production
from citegate.core.errors import ConfigError
from citegate.store.db import connect


def corpus_embedders(conn: psycopg.Connection, corpora: tuple[str, ...]) -> set[str]:
    """Embedder ids the given corpora were embedded with."""
    rows = conn.execute(
        "SELECT DISTINCT embedder_id FROM fragments WHERE corpus = ANY(%s)", (list(corpora),)
    ).fetchall()
    return {r[0] for r in rows}


def load_production_config(
    path: Path | None = None, conn: psycopg.Connection | None = None
) -> PipelineConfig:
    """What a production service calls: the validated production config, refused when its embedder
    differs from the one its corpora were embedded with. Without `conn` it opens the project
    database (`DATABASE_URL`); a malformed file is refused before any database is touched."""
    cfg = production(path)
    if conn is None:
        with connect() as c:
            return check_embedder(cfg, corpus_embedders(c, cfg.corpora), path)
    return check_embedder(cfg, corpus_embedders(conn, cfg.corpora), path)


def check_embedder(
    cfg: PipelineConfig, found: set[str], path: Path | None = None
) -> PipelineConfig:
    """`cfg` when its embedder is among the corpus embedders `found`; a ConfigError otherwise."""
    if not found:
        raise ConfigError(f"{path or PRODUCTION}: corpora {list(cfg.corpora)} are not ingested")
    if cfg.embedder not in found:
        raise ConfigError(
            f"{path or PRODUCTION}: config embedder {cfg.embedder!r} differs from the "
            f"corpus embedder(s) {sorted(found)}; re-ingest or fix the config"
        )
    return cfg


__all__ = ["check_embedder", "corpus_embedders", "load_production_config"]
