"""The bench server: an embedded PostgreSQL of the bench's own, so the project's database is never
touched, and empty databases on it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from citegate.store import db


@contextmanager
def bench_server(root: Path | None = None) -> Iterator[str]:
    """An embedded PostgreSQL in a fresh temp dir (under `root` if given); stopped and removed
    afterwards. `root` must be a dir no other process changes the mode of: run as root, the
    server runs as another user, who must traverse every parent (pytest resets its numbered tmp
    dirs' parent to 0700 whenever a session starts, so tests pass a private `mkdtemp` dir)."""
    tmp = Path(tempfile.mkdtemp(prefix="pg-", dir=root))
    pgdata = tmp / "pgdata"
    try:
        yield db.start_embedded(pgdata)
    finally:
        server = db._SERVERS.pop(str(pgdata.resolve()), None)
        if server is not None:
            server.cleanup()  # stop it now, before its data dir disappears
        shutil.rmtree(tmp, ignore_errors=True)


def create_database(server_url: str, name: str) -> str:
    """Create an empty database on the bench server and return its connection string."""
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(server_url, dbname=name)
