"""A remote model API that refuses the key (HTTP 401) and echoes it in the reply: every client
raises one line naming the provider and the variable to check, with nothing of the key in it,
against a real HTTP server speaking the API (the SDKs pointed at it by base URL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_candidate
from llm_stub import error, stub_server

from citegate.core.errors import CitegateError
from citegate.models.embed import OpenAIEmbedder
from citegate.models.llm import ChatClient
from citegate.models.remote import AuthFailed
from citegate.models.rerank import VoyageReranker

KEY = "sk-proj-Zq9hostile0key0echoed0back7531"


def refused(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(401, body)]


@pytest.fixture()
def openai_401() -> Iterator[str]:
    """An OpenAI-style server whose 401 quotes the key whole and by its last four characters."""
    body = error(f"Incorrect API key provided: {KEY}. You can find your key at ...{KEY[-4:]}")
    with stub_server(refused(body)) as stub:
        yield stub.base_url


def assert_clean(exc: BaseException, provider: str, env_var: str) -> None:
    text = str(exc)
    assert isinstance(exc, CitegateError) and exc.__cause__ is None
    assert text.startswith(f"authentication failed for {provider}: check {env_var} (HTTP 401")
    assert "\n" not in text
    assert not any(KEY[i : i + 4] in text for i in range(len(KEY) - 3)), text


def test_chat_client_refused_key(openai_401: str, tmp_path: Path) -> None:
    client = ChatClient("gpt-x", openai_401, KEY, max_retries=2, cache_path=tmp_path / "c.sqlite")
    with pytest.raises(AuthFailed) as info:
        client.chat([{"role": "user", "content": "hi"}])
    assert_clean(info.value, "openai", "OPENAI_API_KEY")


def test_openrouter_key_is_named(
    openai_401: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("OPENROUTER_BASE_URL", openai_401)
    client = ChatClient.from_env("m", cache_path=tmp_path / "c.sqlite")
    assert client is not None
    with pytest.raises(AuthFailed) as info:
        client.chat([{"role": "user", "content": "hi"}])
    assert_clean(info.value, "openrouter", "OPENROUTER_API_KEY")


def test_embedder_refused_key(openai_401: str) -> None:
    emb = OpenAIEmbedder("text-embedding-3-small", base_url=openai_401, api_key=KEY)
    with pytest.raises(AuthFailed) as info:
        emb.embed_queries(["a question"])
    assert_clean(info.value, "openai", "OPENAI_API_KEY")


def test_voyage_reranker_refused_key() -> None:
    body = {"detail": f"Provided API key is invalid: {KEY}"}
    with stub_server(refused(body)) as stub:
        rr = VoyageReranker(api_key=KEY, base_url=stub.base_url)
        with pytest.raises(AuthFailed) as info:
            rr.score("a question", [make_candidate(1)])
        assert len(stub.requests) == 1  # a refused key is not retried
    assert_clean(info.value, "voyage", "VOYAGE_API_KEY")
