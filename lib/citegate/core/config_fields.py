"""How a `PipelineConfig` field is declared: its group, the values it allows and one line of doc.

`knob(default, group, allowed, doc=...)` declares a field once (a `dataclasses.field` whose
metadata holds a `Knob`). Everything else reads that declaration: `field_problems` refuses a value outside
what the field allows, `coerce` checks a YAML value's type against the default's, and
`core.config_reference` renders every field to the configuration reference page. A field's group
names what its value feeds (retrieval, the gate, the composer, ...), so a reader finds a knob by
the stage it changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from enum import StrEnum
from typing import Any, Protocol

from citegate.core.errors import ConfigError
from citegate.core.inputs import shown
from citegate.core.language_thresholds import (
    LANGUAGE_THRESHOLD_KEYS,
    LANGUAGES,
    canonical_thresholds,
    threshold_problems,
)


class Group(StrEnum):
    """What a field's value feeds, in the order a question meets it (the reference page's
    sections). `GROUP_DOCS` says each in a sentence."""

    RETRIEVAL = "retrieval"
    PRE_FLOOR = "pre-floor"
    RERANK = "rerank"
    FINAL_NOTES = "final notes"
    FUSION = "fusion"
    GATE = "gate"
    MEMORY = "memory"
    COMPOSER = "composer"
    CLAIM_CHECK = "claim check"
    FALLBACK = "fallback"
    ROLES = "roles"


GROUP_DOCS: dict[Group, str] = {
    Group.RETRIEVAL: (
        "The lanes: which corpora are searched, by which models, how deep and in how many rounds. "
        "Most of these decide which candidates a trace collects (`COLLECTION_KEYS`), so a replay "
        "cannot change them."
    ),
    Group.PRE_FLOOR: "The cut before rerank: the cosine noise floor and the cap on candidates.",
    Group.RERANK: "The reranker, what it scores and how many of its best notes are kept.",
    Group.FINAL_NOTES: (
        "What the final notes hold after rerank: verse groups, the per-kind reserves and the "
        "dedup of overlapping transcript windows."
    ),
    Group.FUSION: (
        "Reciprocal rank fusion of the dense and lexical lists (`pipeline.fusion`). It feeds the "
        "`rrf_hybrid` arm's cut and, whatever the arm, the learned gate's `two_scale_score` "
        "signal, which production's gate model reads."
    ),
    Group.GATE: (
        "The gate that decides, without a model, whether the final notes can answer the "
        "question: its kind, the coverage thresholds, the learned gate's model file."
    ),
    Group.MEMORY: (
        "Curated notes (`citegate memory import`): the pre-check that picks the lean or the wide "
        "policy, boost, framing."
    ),
    Group.COMPOSER: "Who writes a grounded answer from the final notes, and how.",
    Group.CLAIM_CHECK: (
        "How each claim of an answer is scored against the notes it cites, and what an "
        "unsupported claim gets."
    ),
    Group.FALLBACK: (
        "An insufficient corpus: the fallback model under its painted disclaimer, or \"I don't "
        'know" with the nearest notes as pointers.'
    ),
    Group.ROLES: (
        "Which chat model each role runs, and the verdict file that says the model passed the "
        "bar its role's notebook measures (`core.verdicts`, `citegate models adopt`): a live "
        "turn runs a generative role's model only with a passing verdict on that model."
    ),
}


class Allowed(Protocol):
    """The values a field allows: why a value is refused ("" when it is allowed), and the
    allowed values in words for the reference page."""

    def problem(self, key: str, value: Any) -> str: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Between:
    """A number in the closed range [lo, hi]."""

    lo: float = 0.0
    hi: float = 1.0

    def problem(self, key: str, value: Any) -> str:
        if self.lo <= float(value) <= self.hi:
            return ""
        return f"{key} must be in [{self.lo:g}, {self.hi:g}], got {value}"

    def describe(self) -> str:
        return f"[{self.lo:g}, {self.hi:g}]"


@dataclass(frozen=True)
class Count:
    """An integer of at least `minimum` (0 or 1)."""

    minimum: int = 1

    def problem(self, key: str, value: Any) -> str:
        if isinstance(value, int) and value >= self.minimum:
            return ""
        what = "a positive integer" if self.minimum == 1 else "a non-negative integer"
        return f"{key} must be {what}, got {value}"

    def describe(self) -> str:
        return f"integer ≥ {self.minimum}"


@dataclass(frozen=True)
class OneOf:
    """One of `choices`; `refusal` says what the field must be when the plain list would not
    (why only these)."""

    choices: tuple[Any, ...]
    refusal: str = ""

    def problem(self, key: str, value: Any) -> str:
        if value in self.choices:
            return ""
        if self.refusal:
            return f"{key} must be {self.refusal}, got {value!r}"
        return f"{key} must be one of {', '.join(map(str, self.choices))}, got {value!r}"

    def describe(self) -> str:
        return ", ".join(f"`{c}`" for c in self.choices)


@dataclass(frozen=True)
class AtLeastOne:
    """A non-empty list of names (`noun` says of what)."""

    noun: str

    def problem(self, key: str, value: Any) -> str:
        return "" if value else f"{key} must name at least one {self.noun}"

    def describe(self) -> str:
        return f"list of {self.noun} names, at least one"


_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Sha256:
    """A sha256 hex digest, or empty."""

    def problem(self, key: str, value: Any) -> str:
        if not value or _SHA256.fullmatch(value):
            return ""
        return f"{key} must be a sha256 hex digest (64 lowercase hex characters), got {value!r}"

    def describe(self) -> str:
        return "sha256 hex digest, or empty"


# How a config names a chat model (`PipelineConfig.llm` and the roles' `*_model` fields): the
# bundled local model, or `<provider>/<the provider's model id>` for one of these providers
# (`models.llm.PROVIDERS` holds their keys and endpoints).
LOCAL_CHAT_MODEL = "none"
CHAT_PROVIDERS = ("openrouter", "openai")


def chat_model_problem(key: str, value: str) -> str:
    """Why `value` cannot name the chat model of config key `key` ("" when it can): "none"
    (the bundled local model), `openrouter/<id>` or `openai/<id>`; a role's own field may also
    be empty (it then runs `llm`'s model). A bare id is refused: which provider, and so which
    key, would run it is not the config's to leave to the environment."""
    if value == LOCAL_CHAT_MODEL or (value == "" and key != "llm"):
        return ""
    provider, _, model = value.partition("/")
    if provider in CHAT_PROVIDERS and model.strip() == model and model:
        return ""
    names = " or ".join(f"{p}/<model>" for p in CHAT_PROVIDERS)
    empty = "" if key == "llm" else " (empty: llm's)"
    return (
        f"{key} must name a chat model: {LOCAL_CHAT_MODEL!r} (the bundled local model), "
        f"{names}{empty}, got {value!r}"
    )


@dataclass(frozen=True)
class ChatModel:
    """A chat model's name (`chat_model_problem`); `empty_ok`: empty runs `llm`'s model."""

    empty_ok: bool = True

    def problem(self, key: str, value: Any) -> str:
        return chat_model_problem(key, value)

    def describe(self) -> str:
        names = ", ".join(f"`{p}/<id>`" for p in CHAT_PROVIDERS)
        return f"`{LOCAL_CHAT_MODEL}`, {names}" + (", or empty" if self.empty_ok else "")


@dataclass(frozen=True)
class PerLanguage:
    """A mapping of languages to coverage thresholds, each in [0, 1] (`threshold_problems`;
    the order of one language's thresholds is a rule between values, `PipelineConfig`'s)."""

    def problem(self, key: str, value: Any) -> str:
        if not isinstance(value, Mapping):
            return f"{key} must be a mapping of languages, got {value!r}"
        return next((p for lang, over in value.items() for p in threshold_problems(lang, over)), "")

    def describe(self) -> str:
        langs = ", ".join(f"`{lang}`" for lang in LANGUAGES)
        keys = ", ".join(f"`{k}`" for k in LANGUAGE_THRESHOLD_KEYS)
        return f"{langs} → any of {keys}, each in [0, 1]"


# Whether a field decides which candidates a retrieval collects (`Knob.collects`): not at all
# (a replay applies it), always (every trace's collection key holds it), or when set (a key holds
# it only when it differs from its default, so a key without it means the default and the keys
# of traces cached without it stay valid).
REPLAYED, COLLECTED, COLLECTED_WHEN_SET = "", "always", "when set"


@dataclass(frozen=True)
class Knob:
    """One field's declaration: the group its value feeds, one line of doc, what it allows
    (None: any value of the default's type), whether it decides what a retrieval collects."""

    group: Group
    doc: str
    allowed: Allowed | None = None
    collects: str = REPLAYED


def knob(
    default: Any,
    group: str,
    allowed: Allowed | None = None,
    *,
    doc: str,
    collects: str = REPLAYED,
    hashed: bool = True,
) -> Any:
    """A `PipelineConfig` field declared once: its design default, group (a `Group` value), doc,
    allowed values, and whether it decides what a retrieval collects (`collects`: REPLAYED,
    COLLECTED or COLLECTED_WHEN_SET). A mutable default (a dict) is copied per instance;
    `hashed=False` leaves the field out of the hash (a dict cannot be hashed)."""
    if collects not in (REPLAYED, COLLECTED, COLLECTED_WHEN_SET):
        raise ValueError(f"collects must be one of '', always, when set, got {collects!r}")
    meta = {"knob": Knob(Group(group), doc, allowed, collects)}
    hash_ = None if hashed else False
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), hash=hash_, metadata=meta)
    return field(default=default, hash=hash_, metadata=meta)


def knob_of(f: Field[Any]) -> Knob:
    """The declaration of a field `knob` made."""
    return f.metadata["knob"]


def default_of(f: Field[Any]) -> Any:
    """A field's design default (a fresh copy for a mutable one)."""
    return f.default_factory() if f.default is MISSING else f.default


def field_problems(config: Any) -> list[str]:
    """Every value of `config` (a dataclass of `knob` fields) outside what its field allows,
    in declaration order."""
    out = []
    for f in fields(config):
        allowed = knob_of(f).allowed
        if allowed is not None and (problem := allowed.problem(f.name, getattr(config, f.name))):
            out.append(problem)
    return out


def coerce(f: Field[Any], value: Any, source: str) -> Any:
    """A YAML value for field `f` in the default's type (a list of corpus names as a tuple, an
    int where a float belongs as a float), or a `ConfigError` naming the key and the value."""
    key, default = f.name, default_of(f)
    if isinstance(default, dict):
        return _coerce_thresholds(value, source)
    if isinstance(default, tuple):
        return _names(key, value, source)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true/false, got {shown(value)}")
        return value
    if isinstance(default, int) and not (isinstance(value, int) and not isinstance(value, bool)):
        raise ConfigError(f"{source}: {key} must be an integer, got {shown(value)}")
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{source}: {key} must be a number, got {shown(value)}")
        return float(value)
    if isinstance(default, str) and not isinstance(value, str):
        raise ConfigError(f"{source}: {key} must be a string, got {shown(value)}")
    return value


def _names(key: str, value: Any, source: str) -> tuple[str, ...]:
    """A list of names (one name alone is a list of one) as a tuple."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: {key} must be a list of names, got {shown(value)}")
    return tuple(value)


def _coerce_thresholds(value: Any, source: str) -> Any:
    """`language_thresholds` from YAML: None is empty; a valid mapping is copied in canonical
    order (numbers as floats); anything else passes as is for `field_problems` to name."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: language_thresholds must be a mapping, got {shown(value)}")
    if any(threshold_problems(lang, over) for lang, over in value.items()):
        return dict(value)
    return canonical_thresholds(value)


def in_groups(config_fields: Sequence[Field[Any]]) -> dict[Group, list[Field[Any]]]:
    """The fields of each group, groups in `Group` order, fields in declaration order."""
    out: dict[Group, list[Field[Any]]] = {g: [] for g in Group}
    for f in config_fields:
        out[knob_of(f).group].append(f)
    return {g: fs for g, fs in out.items() if fs}


__all__ = [
    "CHAT_PROVIDERS",
    "COLLECTED",
    "COLLECTED_WHEN_SET",
    "GROUP_DOCS",
    "LOCAL_CHAT_MODEL",
    "AtLeastOne",
    "Between",
    "ChatModel",
    "Count",
    "Group",
    "Knob",
    "OneOf",
    "PerLanguage",
    "REPLAYED",
    "Sha256",
    "chat_model_problem",
    "coerce",
    "default_of",
    "field_problems",
    "in_groups",
    "knob",
    "knob_of",
]
