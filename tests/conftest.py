"""Shared fixtures: a real embedded PostgreSQL per test session, throwaway caches."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from citegate.store import db


@pytest.fixture(scope="session", autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point generated state at a temp dir (the embedding cache stays shared to keep tests fast)."""
    var = tmp_path_factory.mktemp("var")
    old = {k: os.environ.get(k) for k in ("CITEGATE_VAR", "CITEGATE_CACHE", "DATABASE_URL")}
    os.environ["CITEGATE_CACHE"] = os.environ.get("CITEGATE_CACHE") or str(
        Path(__file__).resolve().parents[1] / "var" / "cache"
    )
    os.environ["CITEGATE_VAR"] = str(var)
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URI of a fresh embedded PostgreSQL server for this test session.

    Its data dir is a private temp dir, not pytest's numbered tmp dirs (which a concurrent pytest
    session may rotate away under a running server).
    """
    folder = Path(tempfile.mkdtemp(prefix="citegate-pg-"))
    yield db.start_embedded(folder / "pgdata")
    db.stop_embedded(folder / "pgdata")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def fresh_db(pg_url: str) -> Iterator[str]:
    """A new empty database on the session server, dropped afterwards."""
    name = f"t_{os.getpid()}_{os.urandom(4).hex()}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = pg_url.replace("/postgres?", f"/{name}?")
    yield url
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture()
def conn(fresh_db: str) -> Iterator[psycopg.Connection]:
    """A migrated connection to a fresh database."""
    with db.connect(fresh_db) as c:
        yield c


@pytest.fixture(scope="session")
def demo_db(pg_url: str) -> str:
    """A database holding every demo corpus build, ingested once per test session.

    Uses the shared embedding cache, so only a cold machine pays for embedding.
    """
    from citegate.corpus.builds import BUILDS
    from citegate.models.embed import default_embedder
    from citegate.store.ingest import ingest_corpus

    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "demo" WITH (FORCE)')
        admin.execute('CREATE DATABASE "demo"')
    url = pg_url.replace("/postgres?", "/demo?")
    emb = default_embedder()
    with db.connect(url) as conn:
        for name in BUILDS:
            ingest_corpus(conn, name, emb, progress=False)
    return url


@pytest.fixture()
def demo(demo_db: str) -> Iterator[psycopg.Connection]:
    """A connection to the demo database."""
    with db.connect(demo_db) as c:
        yield c
