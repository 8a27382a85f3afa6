"""The related design's writer, kept as a comparison in notebook 04, and its [SOURCED] audit.

`compose` writes prose over numbered sources where every sentence ends with `[SOURCED]` (stated by
a cited source) or `[INFERRED]` (its own inference); nothing in it checks what it writes.
`audit_sourced` is the design's post-hoc check: it downgrades [SOURCED] claims that cite nothing
retrieved. Production composes with `pipeline.compose.compose_closed_book` or the extractive
composer instead, and checks every claim with `pipeline.claimcheck`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from citegate.core.types import CallStatus
from citegate.models.llm import ChatClient, LLMError
from citegate.pipeline.citations import split_claims
from citegate.pipeline.compose import Composed
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions, numbered
from citegate.studies.fallback_disclaimer.citation.checks import canonical_key

SOURCED = "SOURCED"
INFERRED = "INFERRED"

COMPOSE_SYSTEM = (
    "You answer a question using ONLY the numbered sources given. Write 1 to 4 short sentences in "
    "the language of the question. End every sentence with the numbers of the sources it comes "
    "from in square brackets and then the tag [SOURCED], in the form: <sentence> [n] [SOURCED]. "
    "A sentence that is your own inference, not stated by a source, ends with [INFERRED] instead. "
    "Never cite a number that is not in the list."
)


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


@dataclass(frozen=True)
class AuditReport:
    """The answer after the audit, and its tag counts: `sourced` claims still [SOURCED],
    `inferred` claims [INFERRED] after the audit (downgrades included), `downgraded` of them
    were [SOURCED] before, `untagged` claims carry neither tag."""

    text: str
    sourced: int
    inferred: int
    downgraded: int
    untagged: int
    downgraded_claims: tuple[str, ...]


def _retag(answer: str, spans: Sequence[tuple[int, int]]) -> str:
    """The answer with each span (a [SOURCED] tag) replaced by [INFERRED]."""
    out = answer
    for a, b in sorted(spans, reverse=True):
        out = f"{out[:a]}[{INFERRED}]{out[b:]}"
    return out


def audit_sourced(answer: str, retrieved_ids: Collection[str]) -> AuditReport:
    """Downgrade [SOURCED] claims none of whose markers names a retrieved source.

    `retrieved_ids` are in the answer's id space (the ids the sources were offered under, e.g.
    "1" or "BG 2.13"). A [SOURCED] claim that cites nothing is downgraded too: nothing backs it.
    """
    retrieved = {canonical_key(str(r)) for r in retrieved_ids}
    claims = split_claims(answer)
    demoted = [c for c in claims if c.tag == SOURCED and not any(m in retrieved for m in c.markers)]
    spans = [c.tag_span for c in demoted if c.tag_span is not None]
    sourced = sum(1 for c in claims if c.tag == SOURCED) - len(demoted)
    inferred = sum(1 for c in claims if c.tag == INFERRED) + len(demoted)
    untagged = sum(1 for c in claims if c.tag is None)
    return AuditReport(
        _retag(answer, spans),
        sourced,
        inferred,
        len(demoted),
        untagged,
        tuple(c.text for c in demoted),
    )
