"""`core.terminal.visible` and the outputs of `citegate ask` built with it (`pipeline.render`):
control, bidi and zero-width characters from a note, a passage or the question are shown as
escapes, never written raw; the layout's own newlines stay; JSON parses to the text as stored."""

from __future__ import annotations

import json

import pytest
from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.terminal import visible
from citegate.core.types import Branch, Decision, RetrievalResult, RetrievalTrace
from citegate.pipeline.plan import OfflinePlanner
from citegate.pipeline.render import dumps, render_text, render_turn, result_dict
from citegate.pipeline.retrieve import replay
from citegate.pipeline.turn import Turn

# Each character a terminal would obey or hide, with the escape shown in its place.
HOSTILE = {
    "\u202e": "\\u202e",  # RIGHT-TO-LEFT OVERRIDE
    "\u202a": "\\u202a",
    "\u200e": "\\u200e",
    "\u200f": "\\u200f",
    "\u2066": "\\u2066",
    "\u2069": "\\u2069",
    "\u200b": "\\u200b",
    "\u200d": "\\u200d",
    "\ufeff": "\\ufeff",
    "\x07": "\\x07",  # BEL
    "\x1b": "\\x1b",  # ESC
    "\r": "\\x0d",
    "\x7f": "\\x7f",
    "\x9b": "\\x9b",  # CSI, the C1 form of ESC [
    "\u2028": "\\u2028",
    "\U000e0041": "\\U000e0041",  # a tag character
}
BODY = "Safe \u202eevil\u202c \x1b[2J\x07 zero\u200bwidth"


@pytest.mark.parametrize(("char", "escape"), HOSTILE.items())
def test_each_control_or_bidi_character_is_written_as_its_escape(char: str, escape: str) -> None:
    assert visible(f"a{char}b") == f"a{escape}b"


def test_newline_and_tab_stay_unless_the_field_is_one_line() -> None:
    assert visible("one\ntwo\tthree") == "one\ntwo\tthree"
    assert visible("one\ntwo\tthree", keep="") == "one\\x0atwo\\x09three"


def test_printable_text_of_every_script_is_unchanged() -> None:
    for text in ("BG 2.13 \\x1b", "Что значит дхарма?", "कर्म क्या है?", "a\u00a0b ☸ 🙏", ""):
        assert visible(text) == text


def test_json_escapes_parse_back_to_the_text_as_stored() -> None:
    data = {"text": "a\u202eb\x7f\x9b\U000e0041\ud800 and \x1b", "list": ["\u2066x\u2069"]}
    out = dumps(data)
    assert not any(ch in out for ch in HOSTILE) and "\\u202e" in out
    assert json.loads(out) == data


def _result(text: str, question: str) -> RetrievalResult:
    cfg = PipelineConfig()
    cand = make_candidate(1, addr_label="BG\u202e 2.13", text=text, score=0.9)
    plan = OfflinePlanner().plan("what is said")
    trace = RetrievalTrace(
        question, plan, cfg.collection_key(), cfg.embedder, cfg.reranker, [cand], {}
    )
    return replay(trace, cfg)


def test_ask_text_output_escapes_the_passage_address_and_question() -> None:
    res = _result(BODY, "what\x1b]0;t\x07 is said\nnext")
    out = render_text(res, show_trace=True)
    assert not any(ch in out for ch in HOSTILE), out
    assert "question: what\\x1b]0;t\\x07 is said\\x0anext" in out  # one line
    assert "BG\\u202e 2.13" in out and "Safe \\u202eevil\\u202c \\x1b[2J\\x07" in out


def test_ask_json_output_holds_the_passage_as_stored() -> None:
    res = _result(BODY, "what is said")
    out = dumps(result_dict(res))
    assert not any(ch in out for ch in HOSTILE)
    assert json.loads(out)["notes"][0]["text"] == BODY


def test_ask_answer_output_escapes_the_answer_and_keeps_its_lines() -> None:
    res = _result(BODY, "what is said")
    cand = res.notes[0]
    turn = Turn(
        question="what is said", lang="en", branch=Branch.GROUNDED, corpus_insufficient=False,
        reason="", decision=Decision.ANSWER, notes=(cand,), theses=(),
        text=f"First line [1].\n{BODY}", probes=("probe\u202e",), pointers=(cand,),
        usage={"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0},
    )  # fmt: skip
    out = render_turn(turn)
    assert not any(ch in out for ch in HOSTILE), out
    assert "First line [1].\nSafe \\u202eevil" in out and "probes: probe\\u202e" in out
