"""A conversation: the turns asked so far, the history a follow-up is rewritten from, and the
file a conversation is exported to and replayed from.

`Conversation.history()` gives the earlier turns as chat messages (the user's question, the
assistant's shown text), oldest first; `Service.answer(question, history=...)` hands them to the
follow-up rewrite (`turn.live_rewrite`), which sees only the last `rewrite.HISTORY_TURNS`
messages, each as quoted data. `to_json` writes the turns with what each searched and why, the
branch and the text shown; `read_conversation` reads such a file back through the one reader
(size and depth limits, a refusal in one line naming the file and the turn), so `citegate chat
--replay FILE` asks the same questions in the same order again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citegate.core.errors import ConfigError, InputError
from citegate.core.inputs import (
    MAX_JSON_DEPTH,
    loads_json,
    question_problem,
    read_file_bytes,
    shown,
)
from citegate.pipeline.turn import Turn

FORMAT = "citegate-conversation/1"
MAX_CONVERSATION_BYTES = 4 * 1024 * 1024
MAX_TURNS = 500


@dataclass(frozen=True)
class Exchange:
    """One turn of a conversation as the user saw it: the question asked, what was searched
    and why (the rewrite's rule and detail; "" on the first turn), the branch and the text."""

    question: str
    searched: str
    rewrite: str
    branch: str
    text: str

    @classmethod
    def of(cls, turn: Turn) -> Exchange:
        """The exchange a finished turn makes."""
        why = turn.rewrite.reason if turn.rewrite is not None else ""
        return cls(turn.question, turn.searched, why, str(turn.branch), turn.text)


@dataclass
class Conversation:
    """The exchanges so far, oldest first."""

    exchanges: list[Exchange] = field(default_factory=list)

    def add(self, turn: Turn) -> Exchange:
        """Record a finished turn; returns its exchange."""
        exchange = Exchange.of(turn)
        self.exchanges.append(exchange)
        return exchange

    def history(self) -> list[dict[str, str]]:
        """The earlier turns as chat messages: each question as it was searched (standalone: a
        follow-up's rewrite, so a later one resolves against it), then the text it was shown."""
        out: list[dict[str, str]] = []
        for e in self.exchanges:
            out.append({"role": "user", "content": e.searched})
            out.append({"role": "assistant", "content": e.text})
        return out

    def to_json(self, config: Mapping[str, object] | None = None) -> str:
        """The conversation as a JSON document (`FORMAT`), with the config it was asked under."""
        doc = {
            "format": FORMAT,
            "config": dict(config or {}),
            "turns": [e.__dict__ for e in self.exchanges],
        }
        return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def read_conversation(path: Path | str) -> list[str]:
    """The questions of an exported conversation, in order. A file too large, not JSON, too
    deep, of another format, or with a turn whose question is missing or unusable is refused in
    one line naming the file (and the turn)."""
    try:
        raw = read_file_bytes(path, "conversation file", MAX_CONVERSATION_BYTES)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the conversation file ({exc.strerror})") from exc
    try:
        doc = loads_json(raw.decode("utf-8"), MAX_JSON_DEPTH)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a conversation file (not UTF-8 JSON: {exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a conversation file (format must be {FORMAT!r})")
    turns = doc.get("turns")
    if not isinstance(turns, list) or not turns or len(turns) > MAX_TURNS:
        raise ConfigError(f"{path}: turns must be a list of 1 to {MAX_TURNS} turns")
    return [_question(path, n, t) for n, t in enumerate(turns, 1)]


def _question(path: Path | str, n: int, turn: Any) -> str:
    """Turn `n`'s question, checked as a question is (`inputs.question_problem`)."""
    question = turn.get("question") if isinstance(turn, dict) else None
    if not isinstance(question, str):
        raise InputError(path, f"turn {n}", "question must be a string")
    problem = question_problem(question)
    if problem:
        raise InputError(path, f"turn {n}", f"question {shown(question)}: {problem}")
    return question


__all__ = ["FORMAT", "Conversation", "Exchange", "read_conversation"]
