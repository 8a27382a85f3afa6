"""A turn streamed (`turn_events`): events in the order a client shows them (the decision and
the notes, the painted disclaimer before anything the fallback model wrote, each claim shown
with its verdict, the text, then the whole turn), and the turn at the end the one `answer_turn`
returns. Retrieval faked; the fallback model a scripted stub behind the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import FALLBACK_REPLY, verse
from llm_stub import reply, stub_server

from citegate.core.config import PipelineConfig
from citegate.core.types import Candidate, RetrievalResult
from citegate.models.embed import default_embedder
from citegate.models.llm import ChatClient
from citegate.pipeline import fallback as F
from citegate.pipeline import turn as T
from citegate.pipeline.render import event_json, event_lines

EMB = default_embedder()
EXTRACTIVE = PipelineConfig(composer="extractive", fallback_bar="04-run")
K = T.EventKind
LONG = "Arjuna doubts Krishna and asks why he should fight his own kinsmen in this battle."


class FakeRetrieval:
    """The question gets `decision` and `notes`; a fallback probe gets `hits`."""

    def __init__(
        self, decision: str, notes: Sequence[Candidate] = (), hits: Sequence[Candidate] = ()
    ) -> None:
        self.decision, self.notes, self.hits = decision, tuple(notes), tuple(hits)
        self.calls = 0

    def __call__(
        self, conn: Any, text: str, cfg: Any, emb: Any, rr: Any, planner: Any = None
    ) -> RetrievalResult:
        self.calls += 1
        first = self.calls == 1
        notes = self.notes if first else self.hits
        return RetrievalResult(notes, self.decision if first else "answer", (), None)  # type: ignore[arg-type]


def streamed(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    fake: FakeRetrieval,
    replies: list[Any],
    question: str = "Who doubts Krishna?",
) -> tuple[list[T.TurnEvent], T.Turn]:
    """The events of one turn, and the turn `answer_turn` gives the same question."""
    monkeypatch.setattr(T, "retrieve", fake)
    with stub_server(replies) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        events = list(T.turn_events(None, question, EXTRACTIVE, EMB, None, client))  # type: ignore[arg-type]
        fake.calls = 0
        whole = T.answer_turn(None, question, EXTRACTIVE, EMB, None, client)  # type: ignore[arg-type]
    return events, whole


def kinds(events: Sequence[T.TurnEvent]) -> list[str]:
    return [str(e.kind) for e in events]


def test_a_grounded_turn_streams_decision_notes_claims_text_then_the_turn(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    notes = [
        replace(verse(1, 0.8), text=LONG),
        verse(2, 0.7),
    ]
    events, whole = streamed(monkeypatch, tmp_path, FakeRetrieval("answer", notes), [])
    order = kinds(events)
    claims = [e for e in events if e.kind == K.CLAIM]
    assert order == ["decision", "notes", *["claim"] * len(claims), "text", "done"]
    assert claims and all(e.data["status"] == "supported" for e in claims)
    assert [e.data["n"] for e in claims] == list(range(1, len(claims) + 1))
    assert events[0].data["decision"] == "answer"
    assert [n["address"] for n in events[1].data["notes"]] == ["BG 2.1", "BG 2.2"]  # type: ignore[index]
    done = events[-1].turn
    assert done is not None and done.branch == "grounded"
    assert (done.text, done.branch, done.notes) == (whole.text, whole.branch, whole.notes)
    assert events[-2].data["text"] == done.text
    assert [e.at_ms for e in events] == sorted(e.at_ms for e in events)


def test_the_fallback_branch_streams_the_painted_disclaimer_before_the_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("insufficient", hits=[verse(7, 0.9)])
    events, whole = streamed(monkeypatch, tmp_path, fake, [reply(FALLBACK_REPLY)])
    order = kinds(events)
    assert order[:3] == ["decision", "notes", "disclaimer"] and order[-2:] == ["text", "done"]
    assert set(order[3:-2]) <= {"claim"}
    assert events[2].data["text"] == F.DISCLAIMERS["en"]
    text = events[-2].data["text"]
    assert isinstance(text, str) and text.startswith(F.DISCLAIMERS["en"])
    assert events[-1].turn is not None and events[-1].turn.text == whole.text == text


def test_i_dont_know_streams_no_claim_and_no_disclaimer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg_off = FakeRetrieval("insufficient", notes=[verse(3, 0.5)])
    monkeypatch.setattr(T, "retrieve", cfg_off)
    no_bar = PipelineConfig(composer="extractive")
    events = list(T.turn_events(None, "Who doubts Krishna?", no_bar, EMB, None, None))  # type: ignore[arg-type]
    assert kinds(events) == ["decision", "notes", "text", "done"]
    assert str(events[-2].data["text"]).startswith(F.NOT_FOUND["en"])
    assert events[-1].data["branch"] == "decline"


def test_each_event_prints_as_lines_and_as_one_json_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("insufficient", hits=[verse(7, 0.9)])
    events, _ = streamed(monkeypatch, tmp_path, fake, [reply(FALLBACK_REPLY)])
    for e in events:
        line = event_json(e)
        assert "\n" not in line and json.loads(line)["event"] == str(e.kind)
        assert event_lines(e) and "ms]" in event_lines(e)[0]
    assert json.loads(event_json(events[-1]))["turn"]["branch"] == "fallback"


def test_a_generative_composer_without_a_bar_answers_extractively_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notes = [replace(verse(1, 0.8), text=LONG)]
    monkeypatch.setattr(T, "retrieve", FakeRetrieval("answer", notes))
    cfg = PipelineConfig(composer="generative")  # no composer_bar: no model is asked
    t = T.answer_turn(None, "Who doubts Krishna?", cfg, EMB, None, None)  # type: ignore[arg-type]
    assert t.branch == "grounded" and t.composer == "extractive"
    assert t.composer_skipped.startswith("composer 'generative' has passed no bar")
    assert t.check is not None and t.check.scorer.endswith(cfg.support_mode)  # the quote mode
