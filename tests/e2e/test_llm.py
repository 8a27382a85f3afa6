"""The chat layer against a real llama.cpp server (SmolLM2-135M) and a scripted stdlib HTTP stub:
caching, start-up failures, retries, and structured output with repair. The SDK is never mocked."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from llm_stub import Stub, completion, dead_url, error, stub_server

from citegate.core.errors import CitegateError
from citegate.models.llm import (
    OPENROUTER_BASE_URL,
    OPENROUTER_DEFAULT_MODEL,
    ChatClient,
    FallbackReply,
    LLMError,
    parse_fallback_reply,
    url_kind,
)
from citegate.models.llm_server import LOCAL_MODEL_ID, LocalLlamaServer, local_model_path

HI = [{"role": "user", "content": "Say hi."}]
GOOD_JSON = (
    '{"answer": "Paris", "search_queries": ["capital of France"], '
    '"disclaimer": "from memory", "in_scope": true}'
)


# --------------------------------------------------------------------------- real local server


@pytest.fixture(scope="module")
def local_url() -> Iterator[str]:
    """A real `llama_cpp.server` on the bundled GGUF for this module (one thread: shared CPUs)."""
    with LocalLlamaServer(n_threads=1) as url:
        yield url


@pytest.mark.slow
def test_local_chat_then_cache_hit(local_url: str, tmp_path: Path) -> None:
    client = ChatClient(LOCAL_MODEL_ID, local_url, cache_path=tmp_path / "llm.sqlite")
    first = client.chat(HI, max_tokens=8)
    assert first.text.strip()
    assert first.prompt_tokens > 0 and first.completion_tokens > 0
    assert not first.cached and first.attempts == 1 and first.latency_s > 0

    second = client.chat(HI, max_tokens=8)
    assert second.cached and second.latency_s == 0.0
    assert second.text == first.text
    assert (second.prompt_tokens, second.completion_tokens) == (
        first.prompt_tokens,
        first.completion_tokens,
    )
    assert client.usage.calls == 2 and client.usage.cached_calls == 1
    assert client.usage.completion_tokens == 2 * first.completion_tokens


def test_model_path_is_the_bundled_gguf() -> None:
    path = local_model_path()
    assert path.is_file() and path.suffix == ".gguf"
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"


def test_port_in_use_fails_fast_naming_the_port() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(CitegateError, match=rf"port {port}\b.*already in use"):
            LocalLlamaServer(port=port).start()
        assert time.monotonic() - start < 2


@pytest.mark.slow
def test_server_that_dies_reports_its_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a GGUF file\n" * 10)
    server = LocalLlamaServer(bad, startup_timeout=60)
    start = time.monotonic()
    with pytest.raises(CitegateError, match=r"exited with code .* during start-up") as err:
        server.start()
    assert time.monotonic() - start < 30  # death is noticed, not waited out
    assert str(bad) in str(err.value)
    assert server.proc is None  # nothing left running


# A server that loads and lists its model, then crashes on the first request that computes: what
# llama.cpp's AMX kernels did on a CPU that advertises AMX (general protection fault, SIGSEGV).
CRASHING_SERVER = """
import http.server, json, os, signal, sys

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "m"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        print("computing the first token", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


class CrashingServer(LocalLlamaServer):
    """`LocalLlamaServer`'s start-up and checks around `CRASHING_SERVER` instead of llama.cpp."""

    def __init__(self, script: Path) -> None:
        super().__init__(script, startup_timeout=30)
        self.script = script

    def command(self) -> list[str]:
        return [sys.executable, str(self.script), str(self.port)]


def test_server_that_crashes_on_its_first_completion_fails_at_start(tmp_path: Path) -> None:
    script = tmp_path / "crashing_server.py"
    script.write_text(CRASHING_SERVER)
    server = CrashingServer(script)
    with pytest.raises(CitegateError, match=r"killed by SIGSEGV on its first completion") as err:
        server.start()
    assert "computing the first token" in str(err.value)  # the server's own output
    assert server.proc is None  # nothing left running


def test_startup_wait_is_bounded_and_cleans_up() -> None:
    server = LocalLlamaServer(startup_timeout=0.3)  # far too short to import and load
    start = time.monotonic()
    with pytest.raises(CitegateError, match=r"did not answer within"):
        server.start()
    assert time.monotonic() - start < 10
    assert server.proc is None


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CitegateError, match="model file not found"):
        LocalLlamaServer(tmp_path / "nope.gguf").start()


# --------------------------------------------------------------------------- scripted stub server


def stub_client(stub: Stub, tmp_path: Path, **kw: Any) -> ChatClient:
    """A client on the stub with a fresh cache (the SDK retries and sleeps for real: the tests
    ask for short waits through `retry-after-ms`)."""
    return ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite", **kw)


def gaps(stub: Stub) -> list[float]:
    """Seconds between consecutive requests the stub received."""
    times = [r["t"] for r in stub.requests]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


FAST = {"retry-after-ms": "1"}  # ask the SDK to retry after 1 ms


def test_retries_429_then_500_then_succeeds(tmp_path: Path) -> None:
    replies = [(429, error("slow down"), FAST), (500, error("boom"), FAST), (200, completion("hi"))]
    with stub_server(replies) as stub:
        res = stub_client(stub, tmp_path).chat(HI, max_tokens=8)
    assert res.text == "hi" and res.attempts == 3 and not res.cached
    assert (res.prompt_tokens, res.completion_tokens) == (7, 3)
    assert len(stub.requests) == 3
    assert stub.requests[0]["path"] == "/v1/chat/completions"
    assert stub.requests[0]["body"]["max_tokens"] == 8


def test_retry_after_ms_is_honoured(tmp_path: Path) -> None:
    # without the header the first backoff would be >= 0.375 s (0.5 s less 25 % jitter)
    replies = [(503, error("busy"), FAST), (200, completion("ok"))]
    with stub_server(replies) as stub:
        assert stub_client(stub, tmp_path).chat(HI).attempts == 2
    assert gaps(stub)[0] < 0.3


def test_retry_after_as_an_http_date_is_honoured(tmp_path: Path) -> None:
    when = formatdate(time.time() + 2, usegmt=True)  # whole seconds: waits between 1 and 2 s
    replies = [(429, error("later"), {"Retry-After": when}), (200, completion("ok"))]
    with stub_server(replies) as stub:
        assert stub_client(stub, tmp_path).chat(HI).text == "ok"
    assert 0.9 <= gaps(stub)[0] <= 3.0


@pytest.mark.parametrize("status", [408, 409])
def test_request_timeout_and_conflict_are_retried(tmp_path: Path, status: int) -> None:
    replies = [(status, error("try again"), FAST), (200, completion("ok"))]
    with stub_server(replies) as stub:
        res = stub_client(stub, tmp_path).chat(HI)
    assert res.text == "ok" and res.attempts == 2 and len(stub.requests) == 2


def test_x_should_retry_header_is_obeyed(tmp_path: Path) -> None:
    with (
        stub_server([(503, error("down"), {"x-should-retry": "false"})]) as stub,
        pytest.raises(LLMError, match=r"1 attempt.*HTTP 503"),
    ):
        stub_client(stub, tmp_path / "a").chat(HI)
    assert len(stub.requests) == 1
    replies = [(400, error("odd"), {"x-should-retry": "true", **FAST}), (200, completion("ok"))]
    with stub_server(replies) as stub:
        assert stub_client(stub, tmp_path / "b").chat(HI).attempts == 2


def test_400_is_not_retried(tmp_path: Path) -> None:
    replies = [(400, error("bad request")), (200, completion("never"))]
    with stub_server(replies) as stub, pytest.raises(LLMError, match=r"1 attempt.*HTTP 400"):
        stub_client(stub, tmp_path).chat(HI)
    assert len(stub.requests) == 1


def test_retries_are_bounded(tmp_path: Path) -> None:
    with (
        stub_server([(503, error("unavailable"), FAST)]) as stub,
        pytest.raises(LLMError, match=r"3 attempt.*HTTP 503"),
    ):
        stub_client(stub, tmp_path, max_retries=2).chat(HI)
    assert len(stub.requests) == 3


def test_dead_server_names_the_refused_connection(tmp_path: Path) -> None:
    client = ChatClient("stub-model", dead_url(), cache_path=tmp_path / "c.sqlite", max_retries=1)
    with pytest.raises(LLMError, match=r"2 attempt.*APIConnectionError.*Connection refused"):
        client.chat(HI)
    assert client.usage.calls == 0


def test_failures_are_not_cached(tmp_path: Path) -> None:
    with stub_server([(400, error("bad")), (200, completion("ok now"))]) as stub:
        client = stub_client(stub, tmp_path)
        with pytest.raises(LLMError):
            client.chat(HI)
        assert client.chat(HI).text == "ok now"


def test_a_call_that_failed_while_the_server_was_down_calls_again(tmp_path: Path) -> None:
    other = [{"role": "user", "content": "Say bye."}]
    with stub_server([(200, completion("hello"))], die_after=1) as stub:
        client = stub_client(stub, tmp_path, max_retries=1)
        assert client.chat(HI).text == "hello"
        with pytest.raises(LLMError, match="APIConnectionError"):
            client.chat(other)  # the server died after one answer
    assert len(client.cache) == 1
    with stub_server([(200, completion("bye"))]) as back:  # restarted (another port)
        again = stub_client(back, tmp_path)
        fresh = again.chat(other)
        assert fresh.text == "bye" and not fresh.cached and fresh.attempts == 1
        assert again.chat(HI).cached  # the earlier success stays cached
    assert len(back.requests) == 1


# --------------------------------------------------------------------------- structured output


def test_parse_clean_json() -> None:
    value, status = parse_fallback_reply(GOOD_JSON)
    assert status == "ok"
    assert value == FallbackReply("Paris", ("capital of France",), "from memory", True)


def test_parse_fenced_json() -> None:
    value, status = parse_fallback_reply(f"```json\n{GOOD_JSON}\n```")
    assert status == "ok" and value is not None and value.answer == "Paris"


def test_parse_prose_wrapped_json() -> None:
    text = f"Sure! Here is {{my answer}}:\n{GOOD_JSON}\nHope this helps."
    value, status = parse_fallback_reply(text)
    assert status == "ok" and value is not None and value.search_queries == ("capital of France",)


def test_parse_malformed_json_records_failure() -> None:
    value, status = parse_fallback_reply('{"answer": "Paris", "search_queries": [oops], }')
    assert value is None and status.startswith("parse_failure: invalid JSON")
    assert parse_fallback_reply("no json here") == (None, "parse_failure: no JSON object found")


def test_parse_string_booleans_and_bad_types() -> None:
    yes = parse_fallback_reply('{"answer": "a", "in_scope": "true"}')[0]
    no = parse_fallback_reply('{"answer": "a", "in_scope": " False "}')[0]
    assert yes is not None and yes.in_scope is True and yes.search_queries == ()
    assert no is not None and no.in_scope is False
    value, status = parse_fallback_reply('{"answer": "a", "in_scope": "maybe"}')
    assert value is None and "in_scope" in status
    value, status = parse_fallback_reply('{"answer": "a", "in_scope": true, "search_queries": [1]}')
    assert value is None and "search_queries" in status


def test_structured_repairs_once(tmp_path: Path) -> None:
    replies = [
        (200, completion('{"answer": "Paris", in_scope: yes}')),
        (200, completion(GOOD_JSON)),
    ]
    with stub_server(replies) as stub:
        client = stub_client(stub, tmp_path)
        res = client.structured(HI, parse_fallback_reply)
    assert res.status == "repaired" and res.ok
    assert res.value is not None and res.value.in_scope is True
    assert len(stub.requests) == 2 and len(res.calls) == 2
    repair = stub.requests[1]["body"]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"answer": "Paris", in_scope: yes}'}
    assert "could not be parsed" in repair[-1]["content"]
    assert client.usage.repairs == 1 and client.usage.parse_failures == 0


def test_structured_gives_up_after_one_repair_without_raising(tmp_path: Path) -> None:
    with stub_server([(200, completion("I think the answer is Paris."))]) as stub:
        client = stub_client(stub, tmp_path)
        res = client.structured(HI, parse_fallback_reply)
        no_repair = client.structured(
            [{"role": "user", "content": "again"}], parse_fallback_reply, repair=False
        )
    assert res.value is None and res.status.startswith("parse_failure:")
    assert len(stub.requests) == 3  # 2 for the first, 1 for repair=False
    assert no_repair.status == "parse_failure: no JSON object found"
    assert client.usage.parse_failures == 2


# --------------------------------------------------------------------------- configuration


def test_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert ChatClient.from_env(cache_path=tmp_path / "c.sqlite") is None

    monkeypatch.setenv("OPENAI_BASE_URL", "https://llm.example.com/v1")
    assert ChatClient.from_env(cache_path=tmp_path / "c.sqlite") is None  # key missing
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-0000")
    client = ChatClient.from_env("some-model", cache_path=tmp_path / "c.sqlite")
    assert client is not None and client.model == "some-model" and client.kind == "remote"

    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-1111")
    client = ChatClient.from_env(cache_path=tmp_path / "c.sqlite")
    assert client is not None and client.model == OPENROUTER_DEFAULT_MODEL
    assert client.base_url == OPENROUTER_BASE_URL
    assert "sk-or-test-1111" not in repr(client) and "sk-or-test-1111" not in str(vars(client))
    monkeypatch.setenv("OPENROUTER_BASE_URL", "http://127.0.0.1:9/v1")  # a gateway / test server
    client = ChatClient.from_env(cache_path=tmp_path / "c.sqlite")
    assert client is not None and client.base_url == "http://127.0.0.1:9/v1"


def test_cache_key_ignores_local_port_but_not_params(tmp_path: Path) -> None:
    a = ChatClient("m", "http://127.0.0.1:1111/v1", cache_path=tmp_path / "c.sqlite")
    b = ChatClient("m", "http://localhost:2222/v1", cache_path=tmp_path / "c.sqlite")
    assert url_kind("https://openrouter.ai/api/v1") == "remote"
    assert a.cache_key(HI, {"t": 0}) == b.cache_key(HI, {"t": 0}) != a.cache_key(HI, {"t": 1})
