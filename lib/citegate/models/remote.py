"""A remote model API that refuses our key: one error the user can act on, not a model failure.

A 401 is neither a model's behaviour nor an outage a run may record and tolerate: every later
call would fail the same way. It becomes `AuthFailed` (a `CitegateError`: the CLI prints one line
and exits 2) naming the provider and the environment variable to check. The server's reply is not
repeated: providers echo the key, or its last four characters, in the body of a 401, and a user
needs none of it to fix the variable. The exception it replaces is dropped from the chain
(`from None`) so that `--debug` or a traceback log cannot show that body either.
"""

from __future__ import annotations

from citegate.core.errors import CitegateError
from citegate.core.redact import mask_fragments, mask_url, mask_values, scrub


class AuthFailed(CitegateError):
    """A remote model API refused the key it was given (HTTP 401)."""


def auth_failed(provider: str, env_var: str, where: str | None, key: str | None) -> AuthFailed:
    """The error for a 401 from `provider` at base URL `where`: 'authentication failed for
    openai: check OPENAI_API_KEY (HTTP 401 from http://127.0.0.1:8080/v1)', the URL shown as
    `mask_url` shows it and with nothing of `key` (4 characters or more) left in it."""
    origin = f" from {mask_url(where)}" if where else ""
    line = f"authentication failed for {provider}: check {env_var} (HTTP 401{origin})"
    secrets = [key] if key else []
    return AuthFailed(scrub(mask_fragments(mask_values(line, secrets), secrets)))
