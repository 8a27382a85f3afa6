"""Rough edges of the command line that need no database: every command a hint prints parses
with the real parser, and an MLflow store that cannot be used is refused in one line naming it,
whether its damage shows on the first page or only when MLflow reads further."""

from __future__ import annotations

import shlex
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from conftest import PLACEHOLDERS, parses

from citegate.core.errors import ConfigError
from citegate.store.presence import ingest_commands, ingest_hint
from citegate.tracking.store import check_store, network_address, sqlite_path, store_errors


@pytest.mark.parametrize("corpus", ["mine", "gita", "gita-split", "xquad-fold2", "notes.v2"])
def test_every_ingest_hint_is_a_command_that_parses(corpus: str) -> None:
    commands = ingest_commands(corpus)
    assert commands and all(parses(c) for c in commands), commands
    assert ingest_hint(corpus) == ", or ".join(commands)


def test_a_path_is_ingested_under_a_name_with_corpus_and_name() -> None:
    assert "citegate ingest --corpus PATH --name mine" in ingest_commands("mine")
    assert not parses("citegate ingest PATH --name mine")  # what the hint must not print


def test_placeholders_are_only_the_ones_filled_in() -> None:
    words = {w for c in ingest_commands("mine") for w in shlex.split(c) if w.isupper()}
    assert words <= set(PLACEHOLDERS)


# --------------------------------------------------------------------------- the MLflow store


def test_a_store_file_not_there_yet_or_sound_passes(tmp_path: Path) -> None:
    check_store(f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}")  # MLflow creates it
    sound = tmp_path / "sound.db"
    with closing(sqlite3.connect(sound)) as c:
        c.execute("CREATE TABLE t (x)")
    check_store(f"sqlite:///{sound}")
    assert sqlite_path(f"sqlite:///{sound}") == sound
    assert sqlite_path("http://127.0.0.1:5000") is None
    assert network_address("http://127.0.0.1:5000") == ("127.0.0.1", 5000)
    assert network_address("https://mlflow.example.org") == ("mlflow.example.org", 443)
    assert network_address(f"file://{tmp_path}") is None


def test_damage_mlflow_meets_past_the_first_page_names_the_file(tmp_path: Path) -> None:
    store = tmp_path / "mlflow.db"
    with closing(sqlite3.connect(store)) as c:
        c.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, body TEXT)")
        c.executemany("INSERT INTO runs (body) VALUES (?)", [("x" * 200,)] * 400)
        c.commit()
    data = bytearray(store.read_bytes())
    data[4096 * 2 : 4096 * 6] = b"\xff" * (4096 * 4)  # pages 3 to 6: the table's rows
    store.write_bytes(bytes(data))
    uri = f"sqlite:///{store}"
    check_store(uri)  # the first page still reads as a database
    with (
        pytest.raises(ConfigError) as caught,
        store_errors(uri),
        closing(sqlite3.connect(store)) as c,
    ):
        c.execute("SELECT count(*), max(length(body)) FROM runs").fetchall()
    assert str(caught.value).startswith(f"{store}: the MLflow tracking store is not a usable")
    assert f"mv {store} {store}.damaged" in str(caught.value)
    sqlalchemy = pytest.importorskip("sqlalchemy")  # what MLflow reads the store through
    engine = sqlalchemy.create_engine(uri)
    with (
        pytest.raises(ConfigError, match="not a usable SQLite database"),
        store_errors(uri),
        engine.connect() as c,
    ):
        c.execute(sqlalchemy.text("SELECT max(length(body)) FROM runs")).fetchall()
    engine.dispose()


def test_a_locked_store_is_not_called_damaged(tmp_path: Path) -> None:
    with pytest.raises(sqlite3.OperationalError), store_errors(f"sqlite:///{tmp_path / 'x.db'}"):
        raise sqlite3.OperationalError("database is locked")
