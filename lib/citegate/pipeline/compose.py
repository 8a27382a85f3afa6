"""The composers' shared answer type and the closed-book (generative) composer.

`compose_closed_book` is the generative composer of a turn (`PipelineConfig.composer:
generative`): prose from the numbered notes under the closed-book rules (`CLOSED_BOOK_RULES`),
at the config's temperature, or the fixed abstention sentence (`ABSTENTION`, the same text the
turn shows when it declines) and nothing else. `abstention` is the one detector of that sentence
that the turn and the evaluation share. The model sees bare note numbers; the server maps them
back to addresses after the claim check (`claimcheck`). `Composed` is what every composer
returns (the extractive one too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citegate.core.types import CallStatus, Status
from citegate.models.llm import ChatClient, ChatResult, LLMError
from citegate.pipeline.fallback import NOT_FOUND, fixed_strings_language, normalize
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions, numbered

# The abstention sentence, per language: the composer's prompt asks for it verbatim, the turn
# shows it when it declines, `abstention` detects it and the evaluation counts it.
ABSTENTION = NOT_FOUND
CLOSED_BOOK_RULES = (
    "Answer ONLY from the numbered notes below; use nothing you know from elsewhere.",
    "If the notes do not answer the question, reply with exactly this sentence and nothing "
    "else: {abstain}",
    "Put the number of the note in square brackets, like [2], after EVERY sentence that states "
    "a fact; cite only numbers that are in the list.",
    "When a sentence merges what two notes say, cite both, like [1][3].",
    "When the notes disagree, say that they disagree and cite each side; prefer the newer note.",
    "Never invent a number, a name, a date or an identifier that the notes do not contain.",
    "Write 1 to 4 short sentences in the language of the question.",
)


@dataclass(frozen=True)
class Composed:
    """The written answer (empty on a failed call), the source ids offered (in the answer's id
    space: "1".."n") with their texts, the call's status, and the call itself."""

    text: str
    offered: dict[str, str]
    status: str
    call: ChatResult | None = None

    @property
    def outcome(self) -> Status:
        """The status as kind (`CallStatus`) and detail."""
        return Status.parse(self.status)


# How the composer is told of curated memory notes (framing only): they are never numbered,
# so no marker can point at one.
FRAMING_RULE = (
    "Background for framing only: it is not a source. Never cite it and never state a fact "
    "that only the background says."
)


def closed_book_messages(
    question: str, notes: Sequence[str], lang: str, chars: int, framing: Sequence[str] = ()
) -> list[dict[str, str]]:
    """The closed-book composer's prompt: the rules (with the abstention sentence of the
    question's language), the curated memory notes as unnumbered background when there are any
    (`framing`), the notes numbered from 1, then the question."""
    abstain = ABSTENTION[fixed_strings_language(lang)]
    rules = "\n".join(
        f"{i}. {r.format(abstain=abstain)}" for i, r in enumerate(CLOSED_BOOK_RULES, 1)
    )
    system = f"You write the answer to a question from numbered notes. Rules:\n{rules}"
    user = f"Notes:\n{numbered(notes, chars)}\n\nQuestion: {question}"
    if framing:
        background = "\n".join(f"- {' '.join(t.split())[:chars]}" for t in framing)
        user = f"{FRAMING_RULE}\n{background}\n\n{user}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def abstention(text: str, lang: str) -> str:
    """How a composed text abstains: "exact" (the sentence of `lang`, or of another supported
    language, and nothing else), "inexact" (the sentence inside other text, or reworded so that
    only case, punctuation or spacing differ), or "" (it does not abstain)."""
    body = (text or "").strip()
    sentences = {ABSTENTION[fixed_strings_language(lang)], *ABSTENTION.values()}
    if body in sentences:
        return "exact"
    norm = normalize(body)
    return "inexact" if any(normalize(s) in norm for s in sentences) else ""


def compose_closed_book(
    client: ChatClient,
    question: str,
    notes: Sequence[str],
    lang: str,
    options: CallOptions = DEFAULT_OPTIONS,
    *,
    temperature: float = 0.1,
    max_notes: int = 5,
    chars: int = 300,
    framing: Sequence[str] = (),
) -> Composed:
    """The generative composer: one cached call over the first `max_notes` notes (and the
    curated memory notes in `framing`, shown as unnumbered background). `offered` maps each
    number shown to the note's FULL text (what the claim check compares with): framing is never
    offered. A failed call gives an empty answer and its `llm_error` status, never an
    exception."""
    shown = [t for t in notes[:max_notes] if t.strip()]
    offered = {str(i): t for i, t in enumerate(shown, 1)}
    if not shown:
        return Composed("", offered, CallStatus.NO_SOURCES.value)
    messages = closed_book_messages(question, shown, lang, chars, framing)
    try:
        call = client.chat(messages, temperature=temperature, max_tokens=options.max_tokens)
    except LLMError as exc:
        return Composed("", offered, f"{CallStatus.LLM_ERROR}: {exc}")
    return Composed(call.text.strip(), offered, CallStatus.OK.value, call)


__all__ = [
    "ABSTENTION",
    "CLOSED_BOOK_RULES",
    "FRAMING_RULE",
    "Composed",
    "abstention",
    "closed_book_messages",
    "compose_closed_book",
]
