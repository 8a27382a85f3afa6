"""The bench server: an embedded PostgreSQL of the bench's own, so the project's database is never
touched, and empty databases on it; the bench's temp dir, whose servers are stopped with it.

A bench stopped half-way (Ctrl-C, or SIGTERM, which `citegate bench` turns into the same
interrupt) unwinds through `bench_dir` and `bench_server`: each stops the servers it started
before their data dirs disappear, so no postmaster is left running on a deleted folder."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import psycopg
from psycopg.conninfo import make_conninfo

from citegate.store import db

STOP_WAIT_S = 10.0  # a fast shutdown of a bench server takes well under a second


@contextmanager
def bench_dir(workdir: Path | None = None) -> Iterator[Path]:
    """A fresh temp dir for one bench run (under `workdir` if given), removed afterwards, every
    server still running on a data dir inside it stopped first (`stop_servers_under`)."""
    tmp = Path(tempfile.mkdtemp(prefix="citegate-bench-", dir=workdir))
    try:
        yield tmp
    finally:
        stop_servers_under(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def bench_server(root: Path | None = None) -> Iterator[str]:
    """An embedded PostgreSQL in a fresh temp dir (under `root` if given); stopped and removed
    afterwards, also when the run is interrupted while the server starts. `root` must be a dir
    no other process changes the mode of: run as root, the server runs as another user, who
    must traverse every parent (pytest resets its numbered tmp dirs' parent to 0700 whenever a
    session starts, so tests pass a private `mkdtemp` dir)."""
    tmp = Path(tempfile.mkdtemp(prefix="pg-", dir=root))
    pgdata = tmp / "pgdata"
    try:
        yield db.start_embedded(pgdata)
    finally:
        server = db._SERVERS.pop(str(pgdata.resolve()), None)
        if server is not None:
            server.cleanup()  # stop it now, before its data dir disappears
        stop_servers_under(tmp)  # one interrupted before its handle was kept
        shutil.rmtree(tmp, ignore_errors=True)


def stop_servers_under(root: Path) -> list[int]:
    """Stop every PostgreSQL whose data dir lies under `root` and that still runs (a fast
    shutdown, then a kill after `STOP_WAIT_S`); the postmaster PIDs stopped. A server is known by
    its `postmaster.pid`, whose first two lines are its PID and its data dir."""
    stopped = []
    for pid_file in sorted(Path(root).rglob("postmaster.pid")):
        proc = _postmaster(pid_file)
        if proc is not None:
            _stop(proc)
            stopped.append(proc.pid)
    return stopped


def _postmaster(pid_file: Path) -> psutil.Process | None:
    """The live postmaster `pid_file` names for its own data dir (a PostgreSQL process: a PID
    reused by another program is left alone), else None."""
    try:
        lines = pid_file.read_text(encoding="utf-8").splitlines()
        pid, datadir = int(lines[0]), Path(lines[1])
    except (OSError, ValueError, IndexError):
        return None
    if datadir.resolve() != pid_file.parent.resolve():
        return None
    try:
        proc = psutil.Process(pid)
        alive = proc.status() != psutil.STATUS_ZOMBIE and proc.name().startswith("postgres")
    except psutil.Error:
        return None
    return proc if alive else None


def _stop(proc: psutil.Process) -> None:
    """SIGINT (PostgreSQL's fast shutdown), then SIGKILL when it has not gone in time."""
    try:
        proc.send_signal(signal.SIGINT)
        proc.wait(STOP_WAIT_S)
    except psutil.TimeoutExpired:
        proc.kill()
    except psutil.NoSuchProcess:
        pass


def create_database(server_url: str, name: str) -> str:
    """Create an empty database on the bench server and return its connection string."""
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(server_url, dbname=name)
