"""Error lines and the config label escape control, bidi and zero-width characters: a file name
the user typed is shown as written, never obeyed by the terminal (an ESC starting a colour or a
cleared screen, a right-to-left override reversing the rest of the line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citegate.cli import main, one_line


def test_an_error_naming_a_file_shows_its_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = tmp_path / "no\x1b[2Jsuch\u202e\u200b.yaml"
    assert main(["ask", "--config", str(name), "What is yoga?"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and "\u200b" not in err
    assert "no\\x1b[2Jsuch\\u202e\\u200b.yaml" in err and err.count("\n") == 1


def test_one_line_escapes_what_a_terminal_obeys_and_keeps_plain_text() -> None:
    assert one_line("plain: text, 'quoted' (ok) é") == "plain: text, 'quoted' (ok) é"
    assert one_line("bell\x07 esc\x1b lone\udc80") == "bell\\x07 esc\\x1b lone\\udc80"
