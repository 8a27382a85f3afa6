"""The related design's answer writer: prose over numbered sources, every sentence tagged.

The production reply is built from the outline planner's theses (`outline.outline_call` and
`turn.grounded_text`): the model only picks note numbers, the server writes the addresses. The
comparison design lets the model write the answer itself, citing sources as `[1]`..`[n]` and
ending each sentence with `[SOURCED]` (stated by a cited source) or `[INFERRED]` (its own
inference). Such text needs the post-hoc checks of `citegate.pipeline.citations`: claim support, fabricated
markers, and the [SOURCED] audit. This module only writes it; nothing here checks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citegate.core.types import CallStatus, Status
from citegate.models.llm import ChatClient, ChatResult, LLMError
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions, numbered

COMPOSE_SYSTEM = (
    "You answer a question using ONLY the numbered sources given. Write 1 to 4 short sentences in "
    "the language of the question. End every sentence with the numbers of the sources it comes "
    "from in square brackets and then the tag [SOURCED], in the form: <sentence> [n] [SOURCED]. "
    "A sentence that is your own inference, not stated by a source, ends with [INFERRED] instead. "
    "Never cite a number that is not in the list."
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


def compose_messages(question: str, sources: Sequence[str], chars: int) -> list[dict[str, str]]:
    """The writer prompt: sources numbered from 1 (whitespace collapsed, cut at `chars`), then
    the question."""
    shown = numbered(sources, chars)
    return [
        {"role": "system", "content": COMPOSE_SYSTEM},
        {"role": "user", "content": f"Sources:\n{shown}\n\nQuestion: {question}"},
    ]


def compose(
    client: ChatClient,
    question: str,
    sources: Sequence[str],
    options: CallOptions = DEFAULT_OPTIONS,
    *,
    max_sources: int = 5,
    chars: int = 300,
) -> Composed:
    """Write a tagged, cited answer over the first `max_sources` source texts (one cached call of
    `options.max_tokens`; free text, so the JSON mode does not apply).
    `offered` maps each number shown to the FULL text of that source: what a claim citing it can
    be checked against. A failed call yields an empty answer and its reason, never an exception."""
    shown = [t for t in sources[:max_sources] if t.strip()]
    offered = {str(i): t for i, t in enumerate(shown, 1)}
    if not shown:
        return Composed("", offered, CallStatus.NO_SOURCES.value)
    try:
        call = client.chat(compose_messages(question, shown, chars), max_tokens=options.max_tokens)
    except LLMError as exc:
        return Composed("", offered, f"{CallStatus.LLM_ERROR}: {exc}")
    return Composed(call.text.strip(), offered, CallStatus.OK.value, call)


__all__ = ["COMPOSE_SYSTEM", "Composed", "compose", "compose_messages"]
