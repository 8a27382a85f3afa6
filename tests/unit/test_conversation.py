"""Conversations: a follow-up that points at a verse resolved by rule, the rewrite role asked
only with a passing bar, and the conversation file written and read back through the one reader
(a bad file refused in one line naming the file and the turn)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_stub import reply, stub_server

from citegate.core.config import PipelineConfig
from citegate.core.errors import CitegateError
from citegate.core.types import RewriteRule
from citegate.models.llm import ChatClient
from citegate.pipeline.conversation import FORMAT, Conversation, Exchange, read_conversation
from citegate.pipeline.rewrite import resolve_verse_followup
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.turn import live_rewrite

ASKED = [
    {"role": "user", "content": "What does BG 2.47 say about action?"},
    {"role": "assistant", "content": "- Your right is only to act. [BG 2.47]"},
]


@pytest.mark.parametrize(
    ("followup", "standalone"),
    [
        ("and the next verse?", "and BG 2.48?"),
        ("What does the previous verse say?", "What does BG 2.46 say?"),
        ("Who speaks in that verse?", "Who speaks in BG 2.47?"),
        ("How is the army described in the verse?", "How is the army described in BG 2.47?"),
        ("and verse 50?", "and BG 2.50?"),
        ("Что говорит следующий стих?", "Что говорит BG 2.48?"),
    ],
)
def test_a_followup_pointing_at_a_verse_is_written_with_its_address(
    followup: str, standalone: str
) -> None:
    assert resolve_verse_followup(followup, ASKED) == standalone


@pytest.mark.parametrize(
    ("first", "followup", "standalone"),
    [
        (
            "In Chapter 1, Verse 2, whom does Duryodhana approach?",
            "How is the army described in the verse?",
            "How is the army described in BG 1.2?",
        ),
        ("Глава 2, стих 47: о чём он?", "Что говорится в этом стихе?", "Что говорится в BG 2.47?"),
        ("अध्याय 2, श्लोक 47 क्या कहता है?", "इस श्लोक का अर्थ क्या है?", "इस BG 2.47 का अर्थ क्या है?"),
        ("What does BG 3.5 say?", "What does the passage say of action?", "What does BG 3.5 say of action?"),
    ],
)  # fmt: skip
def test_the_forms_notebook_01_follow_ups_use_are_resolved_from_a_spelled_first_turn(
    first: str, followup: str, standalone: str
) -> None:
    assert resolve_verse_followup(followup, [{"role": "user", "content": first}]) == standalone


def test_no_rule_applies_without_a_verse_to_point_at_or_when_one_is_named() -> None:
    assert resolve_verse_followup("and the next verse?", []) is None
    assert resolve_verse_followup("What about BG 3.5?", ASKED) is None  # names its own
    assert resolve_verse_followup("Why act without attachment?", ASKED) is None
    last = [{"role": "user", "content": "What does BG 2.78 say?"}]
    assert resolve_verse_followup("and the next verse?", last) is None  # no verse 79


def test_the_newest_question_naming_a_verse_wins_over_an_answer_citing_others() -> None:
    history = [
        {"role": "user", "content": "What does BG 3.5 say?"},
        {"role": "assistant", "content": "- No one can stay inactive. [BG 3.5] [BG 18.11]"},
    ]
    assert resolve_verse_followup("and the next verse?", history) == "and BG 3.6?"


def test_the_rewrite_model_is_asked_only_with_a_passing_bar(tmp_path: Path) -> None:
    question = "Why should one act without attachment?"
    without = live_rewrite(question, ASKED, PipelineConfig(), RoleClients(PipelineConfig()))
    assert without.query_used == question and without.rule == RewriteRule.NO_BAR
    assert without.rewritten is None
    with stub_server([reply("Why act without attachment to results, per BG 2.47?")]) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "c.sqlite")
        cfg = PipelineConfig(rewrite_bar="01-run")
        asked = live_rewrite(question, ASKED, cfg, RoleClients.single(client, cfg))
    assert asked.accepted and asked.rule == RewriteRule.OK
    assert asked.query_used == "Why act without attachment to results, per BG 2.47?"
    assert len(stub.requests) == 1


def test_a_conversation_is_written_and_its_questions_read_back(tmp_path: Path) -> None:
    conv = Conversation(
        [
            Exchange("What does BG 2.47 say?", "What does BG 2.47 say?", "", "grounded", "a"),
            Exchange("and the next verse?", "and BG 2.48?", "resolved: by rule", "grounded", "b"),
        ]
    )
    assert conv.history()[2] == {"role": "user", "content": "and BG 2.48?"}
    path = tmp_path / "conv.json"
    path.write_text(conv.to_json({"source": "production"}), encoding="utf-8")
    assert json.loads(path.read_text())["format"] == FORMAT
    assert read_conversation(path) == ["What does BG 2.47 say?", "and the next verse?"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "not a conversation file"),
        ('{"format": "other/1", "turns": []}', "format must be"),
        (json.dumps({"format": FORMAT, "turns": []}), "turns must be a list of 1 to"),
        (json.dumps({"format": FORMAT, "turns": [{"question": 7}]}), "turn 1: question must"),
        (json.dumps({"format": FORMAT, "turns": [{"question": "ok?"}, {"question": "\x00"}]}),
         "turn 2"),
        ("[" * 100 + "]" * 100, "not a conversation file"),
    ],
)  # fmt: skip
def test_a_bad_conversation_file_is_refused_in_one_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CitegateError, match=expected) as err:
        read_conversation(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
