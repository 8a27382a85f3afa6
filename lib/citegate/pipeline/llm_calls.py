"""What the turn's model calls share: their options, the constrained-output format, lenient parsing
and the numbered-source prompt block.

The outline planner (`outline`), the fallback (`fallback`) and the comparison writer (`compose`)
each send one prompt over numbered snippets or a question and parse JSON back. The options a
caller picks for them (prompt variant, token cap, JSON mode) travel as one `CallOptions` value
from the entry point (`turn.answer_turn`, a study's loop) down to the call that uses them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from citegate.models.llm import ChatClient

JSON_MODES = ("schema", "json", "off")
_CONTROL = re.compile(r"[\x00-\x1f]")
T = TypeVar("T")


@dataclass(frozen=True)
class CallOptions:
    """How a turn's model calls are made: the fallback prompt `variant` (see
    `fallback.PROMPT_VARIANTS`), the completion token cap of every call, and the JSON mode of the
    structured ones (`JSON_MODES`)."""

    variant: str = "asked_painted"
    max_tokens: int = 160
    json_mode: str = "schema"


DEFAULT_OPTIONS = CallOptions()  # the default of every call taking options (today's numbers)


def response_format(
    client: ChatClient, schema: Mapping[str, Any], mode: str
) -> dict[str, Any] | None:
    """Constrained output: llama.cpp takes a JSON schema inside `json_object` (a grammar);
    OpenAI-compatible remote APIs take `json_schema`. `json`: any JSON object; `off`: none."""
    if mode not in JSON_MODES:
        raise ValueError(f"unknown json mode {mode!r}; known: {JSON_MODES}")
    if mode == "off":
        return None
    if mode == "json":
        return {"type": "json_object"}
    if client.kind == "local":
        return {"type": "json_object", "schema": dict(schema)}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": dict(schema)}}


def parse_lenient(parse: Callable[[str], tuple[T | None, str]], text: str) -> tuple[T | None, str]:
    """`parse(text)`; when it fails on a text holding raw control characters (a newline inside a
    string, which llama.cpp's JSON grammar lets through), the retry with them turned into spaces
    if that one parses, else the first failure."""
    value, status = parse(text)
    if value is None and _CONTROL.search(text or ""):
        again = parse(_CONTROL.sub(" ", text))
        if again[0] is not None:
            return again
    return value, status


def numbered(texts: Iterable[str], chars: int) -> str:
    """Snippets numbered from 1 as `[i] text`, one a line, whitespace collapsed, cut at `chars`."""
    return "\n".join(f"[{i}] {' '.join(t.split())[:chars]}" for i, t in enumerate(texts, 1))


__all__ = [
    "DEFAULT_OPTIONS",
    "JSON_MODES",
    "CallOptions",
    "numbered",
    "parse_lenient",
    "response_format",
]
