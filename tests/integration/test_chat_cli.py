"""`citegate chat` against a real database: questions read line by line, each turn streamed,
the conversation exported and replayed, a bad question one line without ending the chat."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from citegate.cli import main

pytestmark = pytest.mark.db


def test_a_chat_streams_each_turn_and_exports_what_a_replay_asks_again(
    tiny: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "conv.json"
    typed = (
        "Is the self eternal?\n   \n]\nDoes it die?\n/export " + str(out) + "\n/quit\nnot read\n"
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    chat = ["chat", "--design", "--corpus", "tiny", "--no-fallback"]
    assert main(chat) == 0
    text = capsys.readouterr().out
    assert text.startswith("config: design") and text.count("decision:") == 2
    assert "citegate chat: " in text  # "]" is refused in one line and the chat goes on
    assert "searched: Does it die?" in text and "no bar" in text
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [t["question"] for t in doc["turns"]] == ["Is the self eternal?", "Does it die?"]
    assert doc["turns"][1]["rewrite"].startswith("no bar")
    again = tmp_path / "again.json"
    assert main([*chat, "--replay", str(out), "--export", str(again)]) == 0
    replayed = capsys.readouterr().out
    assert "you> Is the self eternal?" in replayed and "you> Does it die?" in replayed
    turns = json.loads(again.read_text(encoding="utf-8"))["turns"]
    assert [(t["question"], t["branch"], t["text"]) for t in turns] == [
        (t["question"], t["branch"], t["text"]) for t in doc["turns"]
    ]


def test_a_replay_of_a_file_that_is_not_a_conversation_is_one_line(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "x"}', encoding="utf-8")
    assert main(["chat", "--design", "--corpus", "tiny", "--replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not a conversation file" in err and err.count("\n") == 1
