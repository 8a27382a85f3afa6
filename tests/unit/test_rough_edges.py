"""Rough edges of the command line that need no database: every command a hint prints parses
with the real parser, a remote API that cannot be reached is one line naming the service, and
an MLflow store that cannot be used is refused up front in one line naming it."""

from __future__ import annotations

import shlex

import pytest

from citegate.cli import build_parser
from citegate.store.presence import ingest_commands, ingest_hint

PLACEHOLDERS = {"DIR": "some/folder", "PATH": "some/file.txt"}


def parses(command: str) -> bool:
    """Whether `command` (placeholders filled in) parses with `citegate`'s own parser."""
    words = [PLACEHOLDERS.get(w, w) for w in shlex.split(command)]
    assert words[0] == "citegate", command
    try:
        build_parser().parse_args(words[1:])
    except SystemExit:
        return False
    return True


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
