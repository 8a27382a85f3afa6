"""`Service.stream` and `citegate ask --stream` against a real database: the events of a turn in
order, ending with the turn `Service.answer` gives the same question, printed one by one."""

from __future__ import annotations

import json

import pytest

from citegate.cli import main
from citegate.pipeline.service import Service

pytestmark = pytest.mark.db

ORDER = ("decision", "notes", "disclaimer", "claim", "text", "done")


def test_a_streamed_turn_ends_with_the_turn_answer_gives(tiny: tuple[str, str]) -> None:
    question = "Is the self eternal?"
    with Service.open("design", corpora=["tiny"]) as svc:
        events = list(svc.stream(question, fallback=False))
        whole = svc.answer(question, fallback=False)
    kinds = [str(e.kind) for e in events]
    assert kinds[:2] == ["decision", "notes"] and kinds[-2:] == ["text", "done"]
    assert [ORDER.index(k) for k in kinds] == sorted(ORDER.index(k) for k in kinds)
    turn = events[-1].turn
    assert turn is not None and turn.models == whole.models
    assert (turn.branch, turn.text, turn.notes) == (whole.branch, whole.text, whole.notes)
    claims = [e for e in events if str(e.kind) == "claim"]
    assert len(claims) == (len(turn.check.kept) if turn.check and turn.branch == "grounded" else 0)


def test_ask_stream_prints_each_event_as_text_or_one_json_line(
    tiny: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ask = [
        "ask",
        "--design",
        "--no-fallback",
        "--stream",
        "Is the self eternal?",
        "--corpus",
        "tiny",
    ]
    assert main(ask) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("config: design") and "decision:" in out[1]
    assert any(" branch: " in line for line in out[-1:])
    assert main([*ask, "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    events = [json.loads(line) for line in lines]
    assert events[0]["event"] == "decision" and events[-1]["event"] == "done"
    assert events[-1]["turn"]["branch"] in ("grounded", "decline")
