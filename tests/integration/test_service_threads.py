"""One `Service` shared by threads, and `Service.open` called by threads and processes at once,
against a real embedded PostgreSQL: the shared service answers every question as a single client
does, and concurrent opens start one server and attach to it without an error."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from citegate.core import paths
from citegate.core.errors import DatabaseError
from citegate.pipeline.service import Service
from citegate.pipeline.turn import Turn
from citegate.store import db

pytestmark = pytest.mark.db

QUESTIONS = (
    "Is the self eternal?",
    "Why does Arjuna lay down his bow?",
    "Who is in the opposing army?",
    "What is the capital of France?",
    "Does the soul die?",
)


def outcome(turn: Turn) -> tuple[object, ...]:
    """What a reader sees of a turn: its branch, its text and the notes it offered."""
    return (turn.branch, turn.text, tuple(c.fragment_id for c in turn.notes))


def test_one_service_shared_by_eight_threads_answers_as_a_single_client(
    tiny: tuple[str, str],
) -> None:
    with Service.open("design", corpora=["tiny"]) as svc:
        alone = {q: outcome(svc.answer(q, fallback=False)) for q in QUESTIONS}
        calls = [QUESTIONS[i % len(QUESTIONS)] for i in range(8 * 6)]
        with ThreadPoolExecutor(8) as pool:
            shared = list(pool.map(lambda q: outcome(svc.answer(q, fallback=False)), calls))
        with svc.connection() as conn:  # every connection went back to the pool idle
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert shared == [alone[q] for q in calls]


def _open_and_query(_: int) -> int:
    with Service.open("design", pool_size=2) as svc, svc.connection() as conn:
        return int(conn.execute("SELECT 1").fetchone()[0])


def test_eight_threads_open_a_service_at_once_on_a_server_none_has_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    try:
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(_open_and_query, range(8))) == [1] * 8
    finally:
        db.stop_embedded(paths.pgdata_dir())


OPEN_IN_A_PROCESS = """
from citegate.pipeline.service import Service
with Service.open("design", pool_size=1) as svc, svc.connection() as conn:
    print(conn.execute("SELECT 1").fetchone()[0])
"""


def test_four_processes_open_a_service_at_once_on_a_server_none_has_started(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["CITEGATE_VAR"] = str(tmp_path / "var")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_IN_A_PROCESS],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(4)
    ]
    results = [p.communicate(timeout=240) for p in procs]
    assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, results, strict=True)] == [
        (0, "1")
    ] * 4, [err[-400:] for _, err in results]


def test_an_embedded_server_refusing_connections_is_named_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(uri: str, **_: object) -> None:
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(db.psycopg, "connect", refused)
    with pytest.raises(DatabaseError, match="connection refused") as err:
        db.connect_embedded("postgresql://postgres:secret@localhost:1/postgres")
    assert "secret" not in str(err.value) and "\n" not in str(err.value)
