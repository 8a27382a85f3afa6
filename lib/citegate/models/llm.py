"""One chat client for every chat model, on the official `openai` SDK.

- `models.llm_server.LocalLlamaServer` runs `llama_cpp.server` (OpenAI-compatible) on the bundled
  SmolLM2-135M GGUF, so the whole pipeline runs offline with the same client code as production;
- `ChatClient` wraps `openai.OpenAI` with the SDK's own bounded retries (408 / 409 / 429 / 5xx,
  connection errors and timeouts; `retry-after-ms`, `Retry-After` in seconds or as a date, and
  `x-should-retry` honoured), counts the HTTP attempts of every call, keeps a disk cache of
  successful calls only (a re-run costs nothing and gives identical text; a failed call is
  never cached, so a retry after an outage calls again) and a usage accumulator;
- a key the API refuses (HTTP 401) is `remote.AuthFailed`, one line naming the variable to
  check, not a model failure a run records;
- a config names each chat model as `openrouter/<id>` or `openai/<id>` (`PROVIDERS`), or "none"
  for the bundled local model: `remote_client` makes the client of a remote id, refused in one
  line when its provider's key is not set; a key in the environment never picks a model by
  itself. `chosen_model` reads a caller's explicit per-call choice (`citegate ask --model`),
  where a bare id goes to the provider whose key is set; `ChatClient.from_env` does the same
  for a study's `remote:<id>`;
- `ChatClient.reachable` asks a remote API for its model list (`GET /models`), cheaply and
  with a short timeout: `citegate models` shows whether each role's model can be reached;
- `parse_fallback_reply` and `ChatClient.structured` turn model output into a typed `FallbackReply`,
  with one repair round-trip; bad model output is recorded, never raised.

API keys live only inside the SDK client: they are never stored on our objects, cached or logged,
and error messages pass through `redact.scrub`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import urlparse

from citegate.core import paths
from citegate.core.config import LOCAL_CHAT_MODEL
from citegate.core.errors import CitegateError, ConfigError
from citegate.core.redact import scrub
from citegate.models.cache import DiskCache, digest
from citegate.models.remote import auth_failed

LOCAL_API_KEY = "sk-local-no-key"  # the SDK insists on a key; llama_cpp.server ignores it
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_DEFAULT_MODEL = "anthropic/claude-sonnet-4.6"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}

T = TypeVar("T")
Message = Mapping[str, Any]


class LLMError(CitegateError):
    """A chat call that failed for good (non-retryable status, or retries exhausted)."""


# --------------------------------------------------------------------------- providers


@dataclass(frozen=True)
class Provider:
    """A remote chat API a model id names by its prefix: the variable holding its key, the one
    that may point it elsewhere (a gateway, a test server) and its own URL (None: the SDK's)."""

    name: str
    key_env: str
    base_env: str
    default_base: str | None

    def base_url(self) -> str | None:
        """Where its API is: `base_env` when set, else its own URL."""
        return os.environ.get(self.base_env) or self.default_base


PROVIDERS = {
    "openrouter": Provider(
        "openrouter", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", OPENROUTER_BASE_URL
    ),
    "openai": Provider("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", None),
}


def split_model(model_id: str) -> tuple[Provider, str] | None:
    """(provider, the provider's own model id) of a remote id such as `openrouter/x/y` (the
    provider is the first segment, the rest is the provider's id); None for any other id (the
    local model's "none", or a bare id that names no provider)."""
    name, _, model = model_id.partition("/")
    provider = PROVIDERS.get(name)
    return (provider, model) if provider is not None and model else None


def is_remote(model_id: str) -> bool:
    """Whether `model_id` names a model of a remote provider (`split_model`)."""
    return split_model(model_id) is not None


def missing_key(model_id: str, field: str) -> str:
    """Why the remote model `model_id` that `field` names cannot run here ("" when it can, or
    is not remote): its provider's key is not set. One line naming the variable to set."""
    split = split_model(model_id)
    if split is None or os.environ.get(split[0].key_env):
        return ""
    provider = split[0]
    via = (
        f", or name it openrouter/{model_id} to reach it through OpenRouter"
        if provider.name == "openai"
        else ""
    )
    return (
        f"{field} names {model_id!r} (a remote model on {provider.name}) but {provider.key_env} "
        f"is not set: set it{via}, or name {LOCAL_CHAT_MODEL!r} for the bundled local model"
    )


def remote_client(model_id: str, field: str = "model", **kwargs: Any) -> ChatClient:
    """The client of a remote model id (`openrouter/<id>`, `openai/<id>`) on its provider's
    API, with its key; a one-line ConfigError naming the variable when the key is not set
    (`missing_key`), or when `model_id` names no provider."""
    split = split_model(model_id)
    if split is None:
        names = ", ".join(f"{p}/<model>" for p in PROVIDERS)
        raise ConfigError(f"{field}: {model_id!r} is not a remote model id ({names})")
    if why := missing_key(model_id, field):
        raise ConfigError(why)
    provider, model = split
    key = os.environ[provider.key_env]
    kwargs.setdefault("key_env", provider.key_env)
    return ChatClient(model, provider.base_url(), key, **kwargs)


def chosen_model(model: str, field: str = "--model") -> str:
    """A caller's explicit per-call model (`citegate ask --model`, `Service.open(model=...)`)
    as a model id: "none", `openrouter/<id>` and `openai/<id>` as given; a bare id on the
    provider whose key is set (OpenRouter first, then OpenAI), since whoever names a model
    means a remote one. With no key set a bare id is refused in one line: a model someone
    named never silently becomes the local one."""
    if model == LOCAL_CHAT_MODEL or is_remote(model):
        return model
    for provider in PROVIDERS.values():
        if os.environ.get(provider.key_env):
            return f"{provider.name}/{model}"
    keys = " nor ".join(p.key_env for p in PROVIDERS.values())
    raise ConfigError(
        f"{field} {model!r} names a remote model but neither {keys} is set: set one and name "
        f"its provider (openrouter/{model}), or name {LOCAL_CHAT_MODEL!r} for the local model"
    )


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
        key_env: str = "OPENAI_API_KEY",
    ) -> None:
        import openai

        self.model = model
        self.base_url = base_url
        self.kind = url_kind(base_url)
        self.key_env = key_env  # named by the error of a refused key (`remote.auth_failed`)
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
        """The environment's provider for a model a caller named (a study's `remote:<id>`):
        OpenRouter if `OPENROUTER_API_KEY` is set (at `OPENROUTER_BASE_URL` when that is set:
        a gateway or a test server), else `OPENAI_BASE_URL`+`OPENAI_API_KEY` if both are set,
        else None. No pipeline role comes here: a role runs the model its config names
        (`remote_client`), whatever keys are set."""
        if key := os.environ.get("OPENROUTER_API_KEY"):
            base = os.environ.get("OPENROUTER_BASE_URL") or OPENROUTER_BASE_URL
            kwargs.setdefault("key_env", "OPENROUTER_API_KEY")
            return cls(model or OPENROUTER_DEFAULT_MODEL, base, key, **kwargs)
        base, key = os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY")
        if base and key:
            return cls(model or OPENAI_DEFAULT_MODEL, base, key, **kwargs)
        return None

    def reachable(self, timeout: float = 5.0) -> tuple[bool, str]:
        """Whether the API answers with this key and lists the model: one `GET /models` through
        the SDK, `timeout` seconds, no retries (a cheap check, not a chat call). (True, "")
        or (False, why in one scrubbed line)."""
        import openai

        quick = self.client.with_options(timeout=timeout, max_retries=0)
        try:
            listed = {m.id for m in quick.models.list()}
        except openai.AuthenticationError:
            return False, f"the key was refused (HTTP 401): check {self.key_env}"
        except openai.APIStatusError as exc:
            return False, scrub(f"GET /models: HTTP {exc.status_code}")
        except openai.OpenAIError as exc:
            cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
            return False, scrub(f"not reachable: {type(exc).__name__}{cause}")
        if self.model not in listed:
            return False, f"the API does not list {self.model!r}"
        return True, ""

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
        except openai.AuthenticationError:
            provider = "openrouter" if self.key_env == "OPENROUTER_API_KEY" else "openai"
            where = str(self.client.base_url)
            raise auth_failed(provider, self.key_env, where, self.client.api_key) from None
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
class FallbackReply:
    """The fallback model's reply: an answer from general knowledge, queries to check it against
    the corpus, whether the question is in scope, and the disclaimer the model copied."""

    answer: str
    search_queries: tuple[str, ...]
    disclaimer: str
    in_scope: bool


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


def parse_fallback_reply(text: str) -> tuple[FallbackReply | None, str]:
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
    return FallbackReply(answer, tuple(queries), disclaimer, in_scope), "ok"
