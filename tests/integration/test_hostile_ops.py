"""Operating citegate against a hostile but realistic setup: a server with a configuration change
waiting for a restart, a reader that closes the pipe early, an API that refuses the key and
echoes it. The command must say what is true (what waits for a restart, how to undo what it
wrote), end quietly or in one line, and never show a traceback or a piece of a secret."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from llm_stub import error, stub_server

from citegate.cli import main
from citegate.store import db, sizing

pytestmark = pytest.mark.db


@pytest.fixture()
def own_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A server of its own (ALTER SYSTEM changes a whole server, not one database), sized for a
    small machine so the test does not depend on this one."""
    machine = sizing.Machine(memory=2 * sizing.GB, cores=2)
    monkeypatch.setattr(sizing, "this_machine", lambda: machine)
    folder = Path(tempfile.mkdtemp(prefix="citegate-pg-"))
    try:
        url = db.start_embedded(folder / "pgdata")
        monkeypatch.setenv("DATABASE_URL", url)
        yield url
    finally:
        db.stop_embedded(folder / "pgdata")
        shutil.rmtree(folder, ignore_errors=True)


def sizing_lines(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("sizing        applied"))
    end = next(i for i, line in enumerate(lines) if line.startswith("sizing        for"))
    return lines[start:end]


def test_size_server_reports_a_restart_pending_from_before(
    own_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wanted = sizing.sized_settings(sizing.this_machine())
    with psycopg.connect(own_server, autocommit=True) as c:
        assert c.execute("SHOW shared_buffers").fetchone() == (wanted["shared_buffers"],)
        c.execute("ALTER SYSTEM SET max_connections = '150'")  # not sized: only pending
        c.execute("ALTER SYSTEM SET shared_buffers = '384MB'")  # sized: a restart would undo it
        c.execute("SELECT pg_reload_conf()")
    assert main(["doctor", "--size-server"]) == 2  # production's corpus is not ingested here
    lines = sizing_lines(capsys.readouterr().out)
    # shared_buffers is written back to its sized value (shown with what ALTER SYSTEM had), the
    # pending max_connections change is named: a restart applies it
    assert any(
        "shared_buffers" in line and f"-> {wanted['shared_buffers']}" in line and "384MB" in line
        for line in lines
    ), lines
    assert "  restart the server for: max_connections" in lines, lines
    undo = next(line for line in lines if line.startswith("  to undo: "))
    assert "-c \"ALTER SYSTEM SET shared_buffers = '384MB'\"" in undo, undo
    with psycopg.connect(own_server, autocommit=True) as c:
        pending = c.execute("SELECT name FROM pg_settings WHERE pending_restart").fetchall()
        assert pending == [("max_connections",)]


def test_size_server_prints_old_and_new_values_and_an_undo_that_works(
    own_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with psycopg.connect(own_server, autocommit=True) as c:
        c.execute("ALTER SYSTEM RESET work_mem")  # as a server never sized: the default
        sizing.reload_conf(c)
        before = c.execute("SHOW work_mem").fetchone()[0]
    wanted = sizing.sized_settings(sizing.this_machine())["work_mem"]
    assert before != wanted
    assert main(["doctor", "--size-server"]) == 2  # production's corpus is not ingested here
    lines = sizing_lines(capsys.readouterr().out)
    assert f"  {'work_mem':<33} {before} -> {wanted}" in lines, lines
    undo = next(line for line in lines if line.startswith("  to undo: "))
    assert '-c "ALTER SYSTEM RESET work_mem"' in undo, undo
    psql = [a.strip('"') for a in undo.removeprefix("  to undo: psql ").split(" -c ")[1:]]
    with psycopg.connect(own_server, autocommit=True) as c:
        for statement in psql:  # what `psql -c ... -c ...` runs, one statement at a time
            c.execute(statement)
        sizing.reload_conf(c)
        assert c.execute("SHOW work_mem").fetchone() == (before,)


def test_a_closed_pipe_ends_the_command_quietly(fresh_db: str, tmp_path: Path) -> None:
    """`citegate doctor | head -0`: the reader is gone before the first line is written."""
    env = {**os.environ, "DATABASE_URL": fresh_db, "CITEGATE_VAR": str(tmp_path / "var")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "citegate", "doctor"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the read end: every write of the command now fails with EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err  # 128 + SIGPIPE, as for `yes | head -1`
    assert err == ""
    assert not (tmp_path / "var" / "logs").exists()  # not an internal error either


KEY = "sk-proj-Zq9hostile0key0echoed0back7531"


def test_a_refused_key_is_one_line_and_changes_nothing(
    fresh_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An ingest through an OpenAI-compatible API that answers 401 quoting the key."""
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.txt").write_text("The soul is eternal.\n\nThe body is not.", encoding="utf-8")
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    body = error(f"Incorrect API key provided: {KEY}. Yours ends in {KEY[-4:]}")
    with stub_server([(401, body)]) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        code = main(["ingest", "--corpus", str(src), "--name", "docs"])
    out, err = capsys.readouterr()
    assert code == 2, err
    last = err.strip().splitlines()[-1]  # after the ingest's progress bar
    assert last.startswith(
        "citegate: error: authentication failed for openai: check OPENAI_API_KEY"
    )
    assert "Traceback" not in err and "citegate: error" not in err.replace(last, "")
    assert not any(KEY[i : i + 4] in out + err for i in range(len(KEY) - 3)), out + err
    with psycopg.connect(fresh_db) as c:
        assert c.execute("SELECT count(*) FROM fragments").fetchone() == (0,)


def pieces(secret: str, n: int = 4) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1)]


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("postgresql://alice:s3cr3t@corp?2024@127.0.0.1:1/db", "s3cr3t@corp?2024"),
        ("postgresql://alice:s3cr3t@corp 2024@127.0.0.1:1/db", "s3cr3t@corp 2024"),
        ("postgresql://alice:s3cr3t@corp#2024@127.0.0.1:1/db", "s3cr3t@corp#2024"),
        ("postgresql://alice:s3cr3t/corp:2024@127.0.0.1:1/db", "s3cr3t/corp:2024"),
        ("host=127.0.0.1 port=1 user=alice password=s3cr3t\\ corp#2024", "s3cr3t\\ corp#2024"),
        ("host=127.0.0.1 port=1 password='s3cr3t@corp 2024", "s3cr3t@corp 2024"),
    ],
)
def test_doctor_shows_no_piece_of_a_raw_password(
    url: str, password: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("PGPASSWORD", "pg-Zq9-env-7531")
    assert main(["doctor"]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    leaked = [p for p in pieces(password) + pieces("pg-Zq9-env-7531") if p in out + err]
    assert leaked == [], out + err
