"""A scripted OpenAI-compatible chat server for tests: a real HTTP server (stdlib, 127.0.0.1,
port 0) that the real `openai` SDK talks to, replying from a list (the last reply repeats).

`GET /models` answers a model list (`model_list`, "stub-model" by default; `listing=` replaces
the reply), recorded in `Stub.gets`, never among the chat requests.

Faults: a reply may carry response headers (`Retry-After`, `x-should-retry`, ...); `die_after=N`
shuts the server down for good after N requests (later calls get "connection refused", as from a
killed llama.cpp server); `Stub.kill()` does the same on demand; `dead_url()` is a base URL on a
port nothing listens on."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from citegate.models.llm import ChatResult, StructuredResult


def completion(text: str) -> dict[str, Any]:
    """A minimal valid OpenAI chat-completion body."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


def error(message: str) -> dict[str, Any]:
    """An OpenAI-style error body."""
    return {"error": {"message": message, "type": "stub_error", "code": None}}


# (status, body) or (status, body, response headers)
Reply = tuple[int, dict[str, Any]] | tuple[int, dict[str, Any], dict[str, str]]


def reply(obj: dict[str, Any] | str) -> Reply:
    """A 200 reply whose message is `obj` as JSON (non-ASCII kept), or the text itself."""
    return 200, completion(obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False))


DOWN: Reply = (500, error("server down"), {"x-should-retry": "false"})  # fails at once, no retries


def model_list(*ids: str) -> Reply:
    """A 200 reply to `GET /models` listing `ids` as the OpenAI API lists models."""
    data = [{"id": i, "object": "model", "created": 0, "owned_by": "stub"} for i in ids]
    return 200, {"object": "list", "data": data}


class Stub:
    """Replies in order (the last one repeats) and records every request body and its time."""

    def __init__(
        self, replies: list[Reply], die_after: int | None = None, listing: Reply | None = None
    ) -> None:
        self.replies = replies
        self.die_after = die_after
        self.listing = listing or model_list("stub-model")
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.base_url = ""
        self.dead = False
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    def kill(self) -> None:
        """Stop serving and close the listening socket: later connections are refused."""
        self.dead = True
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def dead_url() -> str:
    """An OpenAI base URL on a loopback port that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _send(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
    """Write one reply (status, JSON body, extra headers) and close the connection."""
    status, payload, *extra = reply
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (extra[0] if extra else {}).items():
        handler.send_header(name, value)
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(data)


@contextmanager
def stub_server(
    replies: list[Reply], *, die_after: int | None = None, listing: Reply | None = None
) -> Iterator[Stub]:
    """A stdlib HTTP server on 127.0.0.1 (port 0) in a thread, answering chat completions (and
    `GET /models` with `listing`); with `die_after=N` it shuts itself down after answering N
    chat requests."""
    stub = Stub(replies, die_after, listing)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            stub.gets.append(self.path)
            if not self.path.rstrip("/").endswith("/models"):
                _send(self, (404, error(f"no route {self.path}")))
                return
            _send(self, stub.listing)

        def do_POST(self) -> None:  # noqa: N802 (stdlib name)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if stub.dead:  # accepted while shutting down: hang up without an answer
                self.close_connection = True
                return
            n = len(stub.requests)
            stub.requests.append(
                {"path": self.path, "body": json.loads(body or b"{}"), "t": time.monotonic()}
            )
            stub.dead = stub.die_after is not None and n + 1 >= stub.die_after
            _send(self, stub.replies[min(n, len(stub.replies) - 1)])
            if stub.dead:
                threading.Thread(target=stub.kill, daemon=True).start()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub._server = server
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield stub
    finally:
        stub.kill()


class Scripted:
    """An in-process chat client whose every reply is `text`: `structured` parses it once (a
    repair would get the same text) and records the messages it was sent; `chat` returns it."""

    model = "stub-model"
    kind = "remote"

    def __init__(self, text: str) -> None:
        self.text = text
        self.messages: Sequence[Mapping[str, Any]] = ()

    def structured(
        self, messages: Sequence[Mapping[str, Any]], parse: Callable[[str], Any], **_: Any
    ) -> StructuredResult[Any]:
        self.messages = messages
        value, status = parse(self.text)
        status = "ok" if value is not None else f"parse_failure: {status}"
        return StructuredResult(value, status, self.text, ())

    def chat(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> ChatResult:
        self.messages = messages
        return ChatResult(self.text, self.model, 1, 1, 0.0, False, 1)
