"""Query plans: deterministic offline; from a chat model (real openai SDK against a local stub)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_stub import completion, stub_server

from citegate.core.errors import ConfigError
from citegate.models.llm import ChatClient
from citegate.pipeline.plan import LLMPlanner, OfflinePlanner, keywords, make_planner, parse_plan


def test_offline_plan_is_the_question_itself() -> None:
    plan = OfflinePlanner().plan("What is dharma?")
    assert plan.texts() == ["What is dharma?"] and plan.planner == "offline"


def test_keywords_drop_function_words() -> None:
    assert keywords("What does Krishna say about the duty of a warrior?") == (
        "krishna duty warrior"
    )


def test_parse_plan_validates_and_trims() -> None:
    reply = json.dumps(
        {
            "subquestions": [
                {
                    "kind": "definition",
                    "text": "What is karma yoga?",
                    "paraphrases": ["a", "b", "c"],
                },
                {"kind": "weird", "text": "Where is it taught?"},
            ]
        }
    )
    subs, status = parse_plan(f"Sure:\n```json\n{reply}\n```")
    assert status == "ok" and subs is not None and len(subs) == 2
    assert subs[0].paraphrases == ("a", "b") and subs[1].kind == "main"
    assert parse_plan('{"subquestions": []}')[0] is None
    assert parse_plan("no json at all")[0] is None


def test_llm_planner_through_the_sdk(tmp_path: Path) -> None:
    good = json.dumps(
        {
            "subquestions": [
                {
                    "kind": "definition",
                    "text": "What is karma yoga?",
                    "paraphrases": ["define karma yoga"],
                }
            ]
        }
    )
    with stub_server([(200, completion(good))]) as stub:
        client = ChatClient("stub-model", base_url=stub.base_url, cache_path=tmp_path / "c.sqlite")
        plan = LLMPlanner(client).plan("Explain karma yoga in the Gita")
    assert plan.texts() == [
        "Explain karma yoga in the Gita",
        "What is karma yoga?",
        "define karma yoga",
    ]
    assert plan.planner == "llm:stub-model" and plan.notes["status"] == "ok"


def test_llm_planner_falls_back_to_the_question_on_bad_output(tmp_path: Path) -> None:
    with stub_server([(200, completion("nonsense")), (200, completion("{broken"))]) as stub:
        client = ChatClient("stub-model", base_url=stub.base_url, cache_path=tmp_path / "c.sqlite")
        plan = LLMPlanner(client).plan("What is dharma?")
    assert plan.texts() == ["What is dharma?"] and plan.notes["status"] != "ok"


def test_make_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENROUTER_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    assert isinstance(make_planner("offline"), OfflinePlanner)
    with pytest.raises(ConfigError, match="planner_model names 'openrouter/m'.*OPENROUTER_API_KEY"):
        make_planner("llm", "openrouter/m")
    with pytest.raises(ConfigError, match="needs the role clients"):
        make_planner("llm", "none")  # the bundled model's server needs an owner
    with pytest.raises(ConfigError, match="unknown planner"):
        make_planner("psychic")


def test_make_planner_plans_on_the_model_it_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`planner_model` is honoured: the plan goes to the named provider with the named model,
    through the SDK against a local server speaking the API."""
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-plan-0000")
    good = json.dumps({"subquestions": [{"kind": "main", "text": "What is karma yoga?"}]})
    with stub_server([(200, completion(good))]) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.base_url)
        plan = make_planner("llm", "openrouter/vendor/planner-x").plan("Explain karma yoga")
    assert [r["body"]["model"] for r in stub.requests] == ["vendor/planner-x"]
    assert plan.planner == "llm:openrouter/vendor/planner-x"
    assert plan.texts() == ["Explain karma yoga", "What is karma yoga?"]
