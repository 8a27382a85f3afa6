"""Rough edges of the command line, through `citegate.cli.main`: a hint prints a command that
works, an unreachable database, API or MLflow server and a broken MLflow store are each one line
saying what is wrong and what to do (exit 2), never "internal error" and a traceback."""

from __future__ import annotations

import re
import shlex

import pytest

from citegate.cli import build_parser, main

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


def hinted_commands(message: str) -> list[str]:
    """The `citegate ...` commands a one-line error quotes (up to the next ',', ';' or ')')."""
    return [m.strip() for m in re.findall(r"citegate [^,;)`]+", message)]


def one_line_error(code: int, err: str) -> str:
    """The single error line of a refused command (exit 2, no traceback, no "internal error")."""
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    return err.strip()


@pytest.mark.db
def test_the_ingest_hint_of_an_empty_corpus_parses(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ask", "Is the self eternal?", "--corpus", "mine", "--design"])
    line = one_line_error(code, capsys.readouterr().err)
    commands = hinted_commands(line.split("Ingest it first", 1)[1])
    assert "citegate ingest --corpus PATH --name mine" in commands
    assert commands and all(parses(c) for c in commands), commands
