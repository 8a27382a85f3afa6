"""Rough edges of the command line, through `citegate.cli.main`: a hint prints a command that
works, an unreachable database, API or MLflow server and a broken MLflow store are each one line
saying what is wrong and what to do (exit 2), never "internal error" and a traceback."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import psutil
import psycopg
import pytest
from conftest import parses
from llm_stub import dead_url

from citegate.cli import corpus as corpus_cli
from citegate.cli import known_failure, main
from citegate.core import paths
from citegate.research.bench.server import bench_dir
from citegate.store import db
from citegate.tracking import reports


def hinted_commands(message: str) -> list[str]:
    """The `citegate ...` commands a one-line error quotes (up to the next ',', ';' or ')')."""
    return [m.strip() for m in re.findall(r"citegate [^,;)`]+", message)]


def one_line_error(code: int, err: str) -> str:
    """The single error line of a refused command (exit 2, no traceback, no "internal error"),
    after any progress bar it drew first."""
    assert code == 2, err
    *bars, line = err.rstrip("\n").split("\n")
    assert all("%|" in b for b in bars), err
    assert "Traceback" not in err and "internal error" not in line, err
    return line


@pytest.mark.db
def test_the_ingest_hint_of_an_empty_corpus_parses(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ask", "Is the self eternal?", "--corpus", "mine", "--design"])
    line = one_line_error(code, capsys.readouterr().err)
    commands = hinted_commands(line.split("Ingest it first", 1)[1])
    assert "citegate ingest --corpus PATH --name mine" in commands
    assert commands and all(parses(c) for c in commands), commands


# --------------------------------------------------------------------------- a remote API off the network


@pytest.fixture()
def short_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI SDK retries a refused connection at once instead of backing off for seconds."""
    import openai._base_client as base

    monkeypatch.setattr(base.SyncAPIClient, "_calculate_retry_timeout", lambda *a, **k: 0.0)


@pytest.mark.db
def test_an_api_key_without_network_is_one_line_naming_the_service(
    cli_db: str,
    short_retries: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key = "sk-test-no-network-4f1c9a"
    url = dead_url()
    for name in ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", key)  # the embedder is OpenAI's from here on
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    notes = tmp_path / "notes.txt"
    notes.write_text("Krishna teaches that the self is eternal.\n", encoding="utf-8")
    code = main(["ingest", "--corpus", str(notes), "--name", "notes"])  # embeds: calls the API
    line = one_line_error(code, capsys.readouterr().err)
    assert line.startswith(f"citegate ingest: cannot reach openai at {url}/")
    assert "Connection refused" in line and "unset OPENAI_API_KEY" in line
    assert key not in line and key[-6:] not in line


def test_a_voyage_connection_error_is_one_line_naming_voyage() -> None:
    voyageai = pytest.importorskip("voyageai")
    client = voyageai.Client(api_key="pa-test-0123456789", max_retries=0, base_url=dead_url())
    with pytest.raises(voyageai.error.APIConnectionError) as caught:
        client.rerank("Is the self eternal?", ["The self is eternal."], model="rerank-2")
    line = known_failure(caught.value)
    assert line.startswith("cannot reach voyage (") and "Connection refused" in line
    assert "pa-test-0123456789" not in line


# --------------------------------------------------------------------------- a database gone away


def refused(folder: Path) -> Callable[[], str]:
    """A `database_url` whose server is gone: libpq's own refusal, on a socket folder nobody
    serves (what the embedded server's users see right after its postmaster was killed)."""

    def url() -> str:
        psycopg.connect(f"host={folder} port=5432 dbname=postgres connect_timeout=2").close()
        raise AssertionError("nothing should listen there")

    return url


def test_a_database_that_refuses_connections_is_one_line_not_internal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setattr(corpus_cli, "database_url", refused(tmp_path))
    line = one_line_error(main(["doctor"]), capsys.readouterr().err)
    assert line.startswith("citegate doctor: the database is not reachable (")
    assert "Connection refused" in line or "No such file" in line
    assert "run the command again in a few seconds" in line


def test_an_unreachable_database_url_is_named_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:Pa55word-kept-out@127.0.0.1:9/x")
    monkeypatch.setattr(corpus_cli, "database_url", refused(tmp_path))
    line = one_line_error(main(["doctor"]), capsys.readouterr().err)
    assert "the database is not reachable" in line and "DATABASE_URL" in line
    assert "postgresql://app:***@127.0.0.1:9/x" in line and "Pa55word" not in line


def test_a_statement_error_is_not_called_unreachable() -> None:
    assert known_failure(psycopg.errors.QueryCanceled("canceling statement")) == ""
    assert known_failure(ValueError("a bug")) == ""


# --------------------------------------------------------------------------- the MLflow store


SPEC = str(paths.ROOT / "experiments" / "03_gate_roc.yaml")


def test_an_unreachable_tracking_server_fails_up_front_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = dead_url().removesuffix("/v1").replace("http://", "http://me:Tr4cking-secret@")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", url)
    code = main(["run", SPEC, "--profile", "tiny"])
    out, err = capsys.readouterr()
    line = one_line_error(code, err)
    assert "the MLflow tracking server http://me:***@127.0.0.1:" in line
    assert "is not reachable (Connection refused)" in line and "MLFLOW_TRACKING_URI" in line
    assert "Tr4cking-secret" not in line and out == ""  # nothing ran, nothing announced


def test_a_damaged_tracking_file_is_named_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    store = tmp_path / "var" / "mlflow" / "mlflow.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"not a database at all " * 400)
    for argv in (["run", SPEC, "--profile", "tiny"], ["promote", "0123456789abcdef"]):
        line = one_line_error(main(argv), capsys.readouterr().err)
        assert f"{store}: the MLflow tracking store is not a usable SQLite database" in line
        assert f"move it aside (mv {store} {store}.damaged)" in line


# --------------------------------------------------------------------------- screenshot


def test_screenshot_with_no_report_says_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    line = one_line_error(main(["screenshot"]), capsys.readouterr().err)
    assert "no experiment report under" in line and "citegate run experiments/NAME.yaml" in line
    report = tmp_path / "var" / "runs" / "01_demo" / "20260101T000000Z-abcd1234" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html><body><img src='x.png'></body></html>", encoding="utf-8")
    monkeypatch.setattr(reports, "chromium", lambda: None)
    line = one_line_error(main(["screenshot"]), capsys.readouterr().err)
    assert "needs Chromium, which is not installed: apt-get install chromium" in line


# --------------------------------------------------------------------------- bench, stopped


def bench_postmasters(root: Path) -> list[psutil.Process]:
    """Live PostgreSQL processes whose command line names a data dir under `root`."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if (proc.info["name"] or "").startswith("postgres") and str(root) in cmdline:
            found.append(proc)
    return found


STARTUP_LIMIT_S = 300  # far beyond what loading the embedder and starting a server take


@pytest.mark.db
def test_bench_shows_progress_and_stops_its_server_on_sigterm(tmp_path: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="citegate-bench-term-"))  # the server's user traverses it
    env = {**os.environ, "TMPDIR": str(root)}
    cmd = [sys.executable, "-m", "citegate", "bench", "--quick", "--out", str(tmp_path / "b.json")]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(STARTUP_LIMIT_S, proc.kill)  # bounds the wait, asserts no time
    watchdog.start()
    try:
        seen = []
        assert proc.stderr is not None
        for line in proc.stderr:  # each step is announced as it starts
            seen.append(line)
            if "PostgreSQL started" in line:
                break
        assert any("starting a private PostgreSQL" in s for s in seen), seen
        assert bench_postmasters(root), "the bench's server should be running now"
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    assert rest.strip().splitlines()[-1] == "citegate bench: interrupted", rest
    assert "Traceback" not in rest
    assert not bench_postmasters(root)
    assert not list(root.glob("citegate-bench-*"))  # its temp dir is gone too
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.db
def test_the_bench_dir_stops_a_server_it_holds_no_handle_for() -> None:
    root = Path(tempfile.mkdtemp(prefix="citegate-bench-dir-"))
    try:
        with bench_dir(root) as tmp:
            pgdata = tmp / "pg" / "pgdata"
            db.start_embedded(pgdata)
            db._SERVERS.pop(str(pgdata.resolve()))  # as if interrupted before it kept one
            assert bench_postmasters(tmp)
        assert not bench_postmasters(root) and not tmp.exists()
    finally:
        shutil.rmtree(root, ignore_errors=True)
