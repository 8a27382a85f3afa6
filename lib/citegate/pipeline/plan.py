"""Query plan: a question becomes 1–4 typed sub-questions with up to two paraphrases each.

Offline the plan is deterministic: the question itself. With an LLM planner configured (an
OpenAI-compatible chat model), the model proposes sub-questions; the plan is part of the trace.
The plan's types (`QueryPlan`, `SubQuestion`) live in `citegate.core.types`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Protocol

from citegate.core.errors import ConfigError, QuestionError
from citegate.core.inputs import MAX_QUESTION_CHARS, question_problem, text_problem
from citegate.core.text import STOPWORDS
from citegate.core.types import QueryPlan, SubQuestion
from citegate.models.llm import ChatClient, first_json_object


class Planner(Protocol):
    """Turns a question into a `QueryPlan`."""

    id: str

    def plan(self, question: str) -> QueryPlan: ...


def clean_question(text: str) -> str:
    """The question as the pipeline takes it: control characters other than newline and tab
    removed, surrounding whitespace stripped. Raises `QuestionError` for a question longer than
    `inputs.MAX_QUESTION_CHARS` (checked before anything else reads it: a pasted document would
    be embedded window by window), a NUL byte (binary input, which PostgreSQL text cannot hold),
    an undecodable byte (a terminal's `\\xff` arrives as a lone surrogate, which no cache key or
    database can encode), an empty question, or one without a letter or digit in any script
    (only emoji, punctuation or symbols): nothing there to search for."""
    if not isinstance(text, str):
        raise QuestionError(f"a question must be text, not {type(text).__name__}")
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionError(f"the question {question_problem(text)}: ask a shorter question")
    if "\x00" in text:
        raise QuestionError("the question contains a NUL byte (binary data?): send plain text")
    problem = text_problem(text)
    if problem:
        raise QuestionError(f"the question {problem}: send plain UTF-8 text")
    kept = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cc")
    cleaned = kept.strip()
    if not cleaned:
        raise QuestionError("the question is empty (nothing left after trimming whitespace)")
    if not any(unicodedata.category(ch)[0] in "LN" for ch in cleaned):
        raise QuestionError(
            f"the question {cleaned[:40]!r} has no letter or digit in any script: ask in words"
        )
    return cleaned


def keywords(question: str) -> str:
    """The question's content words: the second-round fanout form of a question."""
    words = re.findall(r"[\w.:]+", question.lower())
    kept = [
        w.strip(".:") for w in words if w.strip(".:") not in STOPWORDS and len(w.strip(".:")) > 1
    ]
    return " ".join(dict.fromkeys(kept)) or question


class OfflinePlanner:
    """The deterministic plan: one `main` sub-question, the question itself."""

    id = "offline"

    def plan(self, question: str) -> QueryPlan:
        """Plan for one question (no model involved)."""
        return QueryPlan(question, (SubQuestion("main", question),), self.id)


PLAN_PROMPT = (
    "You plan searches for a question-answering assistant over a library of Bhagavad Gita texts "
    "and lectures. Split the user's question into 1 to 4 sub-questions that can each be searched "
    "on their own, each with a kind (main, definition, example, context or comparison) and at most "
    "two paraphrases. Reply with JSON only: "
    '{"subquestions": [{"kind": "main", "text": "...", "paraphrases": ["..."]}]}'
)
KINDS = ("main", "definition", "example", "context", "comparison")


def parse_plan(text: str) -> tuple[tuple[SubQuestion, ...] | None, str]:
    """Typed sub-questions from a model reply, or None and why (for one repair round-trip)."""
    obj, why = first_json_object(text)
    subs = obj.get("subquestions") if obj else None
    if not isinstance(subs, list) or not 1 <= len(subs) <= 4:
        return None, why or "expected 'subquestions': a list of 1 to 4 items"
    out = []
    for s in subs:
        if not isinstance(s, dict) or not isinstance(s.get("text"), str) or not s["text"].strip():
            return None, "every sub-question needs a non-empty 'text'"
        paras = [p for p in s.get("paraphrases") or [] if isinstance(p, str) and p.strip()][:2]
        kind = s.get("kind") if s.get("kind") in KINDS else "main"
        out.append(SubQuestion(kind, s["text"].strip(), tuple(paras)))
    return tuple(out), "ok"


class LLMPlanner:
    """Sub-questions from a chat model (the `openai` SDK client of `citegate.models.llm`). The user's
    question is always searched too; a reply that cannot be parsed falls back to it alone, and
    the plan records why."""

    def __init__(self, client: object, max_tokens: int = 200) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.id = f"llm:{getattr(client, 'model', 'unknown')}"

    def plan(self, question: str) -> QueryPlan:
        """Ask the model; keep the question itself as the first sub-question."""
        messages = [
            {"role": "system", "content": PLAN_PROMPT},
            {"role": "user", "content": question},
        ]
        res = self.client.structured(messages, parse_plan, max_tokens=self.max_tokens)  # type: ignore[attr-defined]
        main = SubQuestion("main", question)
        subs = [s for s in (res.value or ()) if s.text.casefold() != question.casefold()]
        return QueryPlan(question, (main, *subs)[:4], self.id, {"status": res.status})


def make_planner(name: str) -> Planner:
    """`offline`, or `llm` (the chat model of the environment: OpenRouter / OpenAI-compatible)."""
    if name == "offline":
        return OfflinePlanner()
    if name == "llm":
        client = ChatClient.from_env()
        if client is None:
            raise ConfigError(
                "planner 'llm' needs OPENROUTER_API_KEY or OPENAI_BASE_URL + "
                "OPENAI_API_KEY (offline, use planner: offline)"
            )
        return LLMPlanner(client)
    raise ConfigError(f"unknown planner {name!r} (offline, llm)")
