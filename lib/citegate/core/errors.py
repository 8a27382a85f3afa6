"""Error types shared by every stage, so callers can tell bad input from bugs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class CitegateError(Exception):
    """Base class for errors citegate raises on purpose."""


class InputError(CitegateError):
    """Bad input data: names the file and the record so the user can fix it."""

    def __init__(self, path: object, record: object, message: str) -> None:
        self.path = str(path)
        self.record = record
        self.message = message
        super().__init__(f"{self.path}: record {record}: {message}")


class ConfigError(CitegateError):
    """An invalid configuration value or key."""


class MissingExtra(CitegateError):
    """A part of an optional extra (pyproject.toml) is needed and not installed: the library says
    which extra, in one line, as the CLI does, never a bare ModuleNotFoundError."""

    def __init__(self, what: str, extra: str, alternative: str = "") -> None:
        self.extra = extra
        tail = f"; or {alternative}" if alternative else ""
        super().__init__(f"{what} needs the {extra} extra: pip install 'citegate[{extra}]'{tail}")


class DatabaseError(CitegateError):
    """The database cannot be reached (wrong `DATABASE_URL`, server down)."""


class QuestionError(CitegateError):
    """A question the pipeline cannot take: empty, too long, no letter or digit, or a NUL byte."""


class EmptyCorpus(CitegateError):
    """A search of a corpus that holds no fragments for the embedder in use (never ingested, or
    ingested under another embedder): every question would look unanswerable, so it is refused
    with how to ingest the corpus instead of answered "insufficient"."""


class TooFewQuestions(CitegateError):
    """A study's questions cannot support what it reports (e.g. no negative in a corpus's test
    split to check a certified gate on): the corpus is too small, named with its counts."""


class ModelFailure(CitegateError):
    """Model calls failed (server down, HTTP errors) beyond what a run may tolerate: the run's
    numbers would score outages as model behaviour, so it stops instead."""


# The spec default of every study's MAX_MODEL_ERROR_SHARE: failed calls a model may have.
MAX_MODEL_ERROR_SHARE = 0.05
MODEL_ERROR = (
    "llm_error"  # status prefix of a call that failed for good (`citegate.models.llm.LLMError`)
)


def is_model_error(status: object) -> bool:
    """Whether a recorded call status is a failed call (`llm_error: ...`), not model output."""
    return isinstance(status, str) and status.startswith(MODEL_ERROR)


def check_model_errors(
    statuses: Mapping[str, Sequence[str]], max_share: float, what: str
) -> dict[str, int]:
    """Failed calls per model; raise `ModelFailure` naming every model whose failed share
    exceeds `max_share`, with its first error, e.g. "smollm2-135m: 9 of 12 fallback calls failed
    (llm_error: ... Connection refused); allowed share 5%". `statuses` maps a model to the
    status of each of its calls; `what` names the calls."""
    if not 0.0 <= max_share <= 1.0:
        raise ConfigError(f"MAX_MODEL_ERROR_SHARE must lie in [0, 1], got {max_share!r}")
    failed = {m: [s for s in v if is_model_error(s)] for m, v in statuses.items()}
    over = [
        f"{m}: {len(f)} of {len(statuses[m])} {what} failed ({_short(f[0])}); allowed share "
        f"{max_share * 100:g}%"
        for m, f in failed.items()
        if f and len(f) / len(statuses[m]) > max_share
    ]
    if over:
        raise ModelFailure("; ".join(over))
    return {m: len(f) for m, f in failed.items()}


def _short(status: str, chars: int = 240) -> str:
    """A status cut to `chars` characters (an error message can be long)."""
    return status if len(status) <= chars else status[: chars - 1] + "…"
