"""A three-turn conversation through `Service.stream` on the demo corpus, with the bundled chat
model behind its OpenAI-compatible llama.cpp server in the rewrite role: the first turn names its
verse, the second ("and the next verse?") is resolved to BG 2.48 by rule, the third asks the
model to rewrite it and takes what the validator says. Every turn's events arrive in order and
every claim shown carries its verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_verdict

from citegate.core.config import DESIGN, save_config
from citegate.core.types import RewriteRule
from citegate.core.verdicts import write_verdict
from citegate.models.llm_server import LOCAL_MODEL_ID
from citegate.pipeline.conversation import Conversation
from citegate.pipeline.service import Service
from citegate.pipeline.turn import EventKind

pytestmark = [pytest.mark.db, pytest.mark.slow]
ORDER = list(EventKind)
QUESTIONS = (
    "What does BG 2.47 say about action?",
    "and the next verse?",
    "Why should one act without attachment?",
)


def test_a_three_turn_conversation_streams_with_its_followups_made_standalone(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", demo_db)
    config = tmp_path / "conversation.yaml"
    # A verdict on the bundled model written by the test, as if it had passed notebook 01's
    # rewrite bar (it does not): what is under test is the live path a passing model takes.
    bar = write_verdict(tmp_path, make_verdict("rewrite", LOCAL_MODEL_ID)).name
    save_config(DESIGN.replace(corpora=("gita",), rewrite_bar=bar), config)
    conv, turns = Conversation(), []
    with Service.open(str(config)) as svc:
        for question in QUESTIONS:
            events = list(svc.stream(question, fallback=False, history=conv.history()))
            kinds = [e.kind for e in events]
            assert kinds[:2] == [EventKind.DECISION, EventKind.NOTES]
            assert kinds[-2:] == [EventKind.TEXT, EventKind.DONE]
            assert [ORDER.index(k) for k in kinds] == sorted(ORDER.index(k) for k in kinds)
            turn = events[-1].turn
            assert turn is not None
            claims = [e for e in events if e.kind == EventKind.CLAIM]
            if turn.branch == "grounded":
                assert claims and turn.check is not None
                assert [c.data["status"] for c in claims] == [
                    str(v.status) for v in turn.check.kept
                ]
            conv.add(turn)
            turns.append(turn)
    first, second, third = turns
    assert first.rewrite is None and first.branch == "grounded"
    assert second.searched == "and BG 2.48?" and second.rewrite.rule == RewriteRule.RESOLVED
    assert second.notes[0].addr_label == "BG 2.48" and second.branch == "grounded"
    assert third.rewrite is not None and third.rewrite.rewritten is not None  # the model was asked
    assert third.rewrite.rule in set(RewriteRule) - {RewriteRule.NO_BAR, RewriteRule.RESOLVED}
    assert third.searched == (third.rewrite.query_used if third.rewrite.accepted else QUESTIONS[2])
    assert third.models.get("rewrite") == "smollm2-135m-instruct-q4_1"
