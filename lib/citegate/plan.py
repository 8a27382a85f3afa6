"""Query plan: a question becomes 1–4 typed sub-questions with up to two paraphrases each.

Offline the plan is deterministic: the question itself. With an LLM planner configured (an
OpenAI-compatible chat model), the model proposes sub-questions; the plan is part of the trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "what",
        "who",
        "whom",
        "which",
        "why",
        "how",
        "when",
        "where",
        "does",
        "do",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "with",
        "from",
        "by",
        "as",
        "about",
        "into",
        "his",
        "her",
        "their",
        "he",
        "she",
        "they",
        "we",
        "you",
        "i",
        "me",
        "my",
        "your",
        "our",
        "not",
        "no",
        "yes",
        "if",
        "then",
        "than",
        "so",
        "say",
        "says",
        "said",
        "tell",
        "tells",
        "told",
        "according",
        "there",
        "here",
        "have",
        "has",
        "had",
        "any",
        "all",
        "some",
        "more",
        "most",
        "other",
        "such",
        "only",
        "own",
        "same",
        "very",
        "just",
        "also",
        "describe",
        "described",
        "explain",
        "mean",
        "means",
        "meaning",
        "role",
        "и",
        "в",
        "во",
        "на",
        "о",
        "об",
        "что",
        "как",
        "почему",
        "кто",
        "где",
        "когда",
        "ли",
        "же",
        "это",
        "этот",
        "эта",
        "эти",
        "с",
        "со",
        "по",
        "за",
        "из",
        "к",
        "ко",
        "у",
        "не",
        "да",
        "или",
        "а",
        "но",
        "то",
        "так",
        "для",
        "от",
        "до",
        "при",
        "про",
        "над",
        "под",
        "говорит",
        "какой",
        "какая",
        "какие",
        "каким",
        "чем",
    ]
)


@dataclass(frozen=True)
class SubQuestion:
    """One typed sub-question; `kind` says what it asks for (main, definition, example, ...)."""

    kind: str
    text: str
    paraphrases: tuple[str, ...] = ()

    def texts(self) -> tuple[str, ...]:
        """The sub-question and its paraphrases, each searched by every lane."""
        return (self.text, *self.paraphrases[:2])


@dataclass(frozen=True)
class QueryPlan:
    """What the retrieval searches for, and which planner produced it."""

    question: str
    subquestions: tuple[SubQuestion, ...]
    planner: str
    notes: dict[str, str] = field(default_factory=dict)

    def texts(self) -> list[str]:
        """Every text searched in round one, without repeats, in plan order."""
        return list(dict.fromkeys(t for s in self.subquestions for t in s.texts()))


class Planner(Protocol):
    """Turns a question into a `QueryPlan`."""

    id: str

    def plan(self, question: str) -> QueryPlan: ...


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
