"""A remote model API that refuses our key, or that cannot be reached: one error the user can
act on, not a model failure and not an "internal error".

A 401 is neither a model's behaviour nor an outage a run may record and tolerate: every later
call would fail the same way. It becomes `AuthFailed` (a `CitegateError`: the CLI prints one line
and exits 2) naming the provider and the environment variable to check. The server's reply is not
repeated: providers echo the key, or its last four characters, in the body of a 401, and a user
needs none of it to fix the variable. The exception it replaces is dropped from the chain
(`from None`) so that `--debug` or a traceback log cannot show that body either.

An API key set on a machine without network (or with a wrong base URL) makes the OpenAI or
Voyage SDK give up with a connection error after its retries. `unreachable` turns that error,
wherever it surfaces, into `ServiceUnreachable`: one line naming the service, the URL tried and
what to do (check the network or the base URL, or unset the key to run the local defaults).
"""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

from citegate.core.errors import CitegateError
from citegate.core.redact import mask_fragments, mask_url, mask_values, scrub

OPENROUTER_HOST = "openrouter.ai"  # `llm.OPENROUTER_BASE_URL`'s host


class AuthFailed(CitegateError):
    """A remote model API refused the key it was given (HTTP 401)."""


class ServiceUnreachable(CitegateError):
    """A remote model API could not be reached (no network, a wrong base URL, a server down)."""


def auth_failed(provider: str, env_var: str, where: str | None, key: str | None) -> AuthFailed:
    """The error for a 401 from `provider` at base URL `where`: 'authentication failed for
    openai: check OPENAI_API_KEY (HTTP 401 from http://127.0.0.1:8080/v1)', the URL shown as
    `mask_url` shows it and with nothing of `key` (4 characters or more) left in it."""
    origin = f" from {mask_url(where)}" if where else ""
    line = f"authentication failed for {provider}: check {env_var} (HTTP 401{origin})"
    secrets = [key] if key else []
    return AuthFailed(scrub(mask_fragments(mask_values(line, secrets), secrets)))


def unreachable(exc: BaseException) -> ServiceUnreachable | None:
    """`ServiceUnreachable` for a connection error of the OpenAI or Voyage SDK (a timeout
    included), None for any other exception. Only an SDK already imported is looked at: the
    check never loads one."""
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.APIConnectionError):
        request = getattr(exc, "request", None)
        url = str(getattr(request, "url", "") or "")
        provider, env_var = openai_route(url)
        base = "OPENROUTER_BASE_URL" if env_var == "OPENROUTER_API_KEY" else "OPENAI_BASE_URL"
        return _unreachable(provider, url, _reason(exc), f"the network and {base}", env_var)
    voyage = sys.modules.get("voyageai.error")
    if voyage is not None and isinstance(exc, voyage.APIConnectionError):
        what = "the network, or answer with a config whose reranker needs no remote API"
        return _unreachable("voyage", "", _reason(exc), what, "")
    return None


def openai_route(url: str) -> tuple[str, str]:
    """(provider, key variable) of an OpenAI-compatible request URL: OpenRouter when the URL is
    OpenRouter's or `OPENROUTER_BASE_URL`'s host and `OPENROUTER_API_KEY` is set, else OpenAI."""
    host = urlsplit(url).netloc
    routed = os.environ.get("OPENROUTER_BASE_URL", "")
    if (
        os.environ.get("OPENROUTER_API_KEY")
        and host
        and (host == OPENROUTER_HOST or host == urlsplit(routed).netloc)
    ):
        return "openrouter", "OPENROUTER_API_KEY"
    return "openai", "OPENAI_API_KEY"


def _reason(exc: BaseException) -> str:
    """Why the connection failed: the cause the SDK wraps (e.g. "[Errno 111] Connection
    refused"; the SDK's own message says only "Connection error."), else its message."""
    cause = exc.__cause__ or exc.__context__
    text = str(cause).strip() if cause is not None else ""
    return " ".join((text or str(exc).strip() or type(exc).__name__).split())


def _unreachable(
    provider: str, url: str, reason: str, check: str, env_var: str
) -> ServiceUnreachable:
    """The one line: service, URL (passwords masked), reason, what to do; every secret masked."""
    where = f" at {mask_url(url)}" if url else ""
    unset = f", or unset {env_var} to run the local defaults" if env_var else ""
    line = f"cannot reach {provider}{where} ({reason}): check {check}{unset}"
    return ServiceUnreachable(scrub(line))
