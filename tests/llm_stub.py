"""A scripted OpenAI-compatible chat server for tests: a real HTTP server (stdlib, 127.0.0.1,
port 0) that the real `openai` SDK talks to, replying from a list (the last reply repeats)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class Stub:
    """Replies in order (the last one repeats) and records every request body."""

    def __init__(self, replies: list[tuple[int, dict[str, Any]]]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""


@contextmanager
def stub_server(replies: list[tuple[int, dict[str, Any]]]) -> Iterator[Stub]:
    """A stdlib HTTP server on 127.0.0.1 (port 0) in a thread, answering chat completions."""
    stub = Stub(replies)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (stdlib name)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            n = len(stub.requests)
            stub.requests.append({"path": self.path, "body": json.loads(body or b"{}")})
            status, payload = stub.replies[min(n, len(stub.replies) - 1)]
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
