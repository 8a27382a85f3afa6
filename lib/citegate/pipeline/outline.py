"""The outline planner: an LLM over the retrieved notes that states theses, each citing notes.

The planner only picks note numbers; the server writes the addresses (`turn.grounded_text`). A
planner that finds no thesis the notes support makes the corpus *insufficient* for the turn.
Note numbers are model output: one that names no note offered, or is not an integer at all (a
string, a float, a boolean), is dropped with its reason (`Outline.dropped_refs`), never raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citegate.core.types import CallStatus, Candidate, Status
from citegate.models.llm import ChatClient, ChatResult, LLMError, first_json_object
from citegate.pipeline.llm_calls import (
    DEFAULT_OPTIONS,
    CallOptions,
    numbered,
    parse_lenient,
    response_format,
)
from citegate.pipeline.model_output import MAX_DROPPED, Dropped

OUTLINE_SCHEMA = {
    "type": "object",
    "properties": {
        "theses": {
            "type": "array",
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 200},
                    "notes": {"type": "array", "items": {"type": "integer"}, "maxItems": 4},
                },
                "required": ["text", "notes"],
            },
        }
    },
    "required": ["theses"],
}


@dataclass(frozen=True)
class Outline:
    """The planner's theses (each cites ≥ 1 note by 1-based number), parse status, calls."""

    theses: tuple[str, ...]
    cited: tuple[tuple[int, ...], ...]
    status: str
    calls: tuple[ChatResult, ...] = ()
    dropped: int = 0  # note numbers cited that no note carries (fabricated, dropped by the parser)
    dropped_refs: tuple[Dropped, ...] = ()  # every reference dropped, with why

    @property
    def outcome(self) -> Status:
        """The status as kind (`CallStatus`) and detail."""
        return Status.parse(self.status)


def outline_messages(
    question: str, notes: Sequence[Candidate], max_notes: int, chars: int
) -> list[dict[str, str]]:
    """The planner prompt: numbered note snippets, then the question."""
    shown = numbered((c.text for c in notes[:max_notes]), chars)
    system = (
        "You plan an answer that uses ONLY the numbered notes. Reply with ONLY one JSON object: "
        '{"theses": [{"text": string, "notes": [note numbers]}]}. Each thesis must be stated '
        'by the notes it cites. If the notes do not answer the question, reply {"theses": []}.'
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Notes:\n{shown}\n\nQuestion: {question}"},
    ]


def parse_outline(text: str, n_notes: int) -> tuple[Outline | None, str]:
    """Theses that cite at least one existing note; (None, 'parse_failure: ...') on bad JSON."""
    obj, why = parse_lenient(first_json_object, text or "")
    if obj is None:
        return None, f"{CallStatus.PARSE_FAILURE}: {why}"
    items = obj.get("theses")
    if not isinstance(items, list):
        return None, f"{CallStatus.PARSE_FAILURE}: 'theses' must be a list"
    theses, cited, dropped, why = [], [], 0, []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        given = item.get("notes") if isinstance(item.get("notes"), list) else []
        refs = [r for r in given if _note_ref_problem(r, n_notes) is None]
        dropped += len({r for r in given if _is_int(r)} - set(refs))
        why += [Dropped.of(r, p) for r in given if (p := _note_ref_problem(r, n_notes))]
        if item["text"].strip() and refs:
            theses.append(item["text"].strip())
            cited.append(tuple(dict.fromkeys(refs)))
    ok = CallStatus.OK.value
    shown_why = tuple(why[:MAX_DROPPED])
    return Outline(tuple(theses), tuple(cited), ok, dropped=dropped, dropped_refs=shown_why), ok


def _is_int(ref: object) -> bool:
    """Whether a reference is a JSON integer (a boolean is not, though Python counts it one)."""
    return isinstance(ref, int) and not isinstance(ref, bool)


def _note_ref_problem(ref: object, n_notes: int) -> str | None:
    """Why a thesis's note reference names no note offered (numbered 1..n_notes), or None."""
    if not _is_int(ref):
        return f"not a note number ({type(ref).__name__})"
    if not 1 <= ref <= n_notes:  # type: ignore[operator]
        return f"names no note offered (notes 1-{n_notes})"
    return None


def outline_call(
    client: ChatClient,
    question: str,
    notes: Sequence[Candidate],
    options: CallOptions = DEFAULT_OPTIONS,
    *,
    max_notes: int = 5,
    chars: int = 300,
) -> Outline:
    """Run the planner over the top notes; no notes, bad JSON or a failed call give no theses."""
    if not notes:
        return Outline((), (), CallStatus.NO_NOTES.value)
    shown = list(notes[:max_notes])
    fmt = response_format(client, OUTLINE_SCHEMA, options.json_mode)
    try:
        res = client.structured(
            outline_messages(question, shown, max_notes, chars),
            lambda t: parse_outline(t, len(shown)),
            max_tokens=options.max_tokens,
            response_format=fmt,
        )
    except LLMError as exc:
        return Outline((), (), f"{CallStatus.LLM_ERROR}: {exc}")
    if res.value is None:
        return Outline((), (), res.status, res.calls)
    v = res.value
    return Outline(v.theses, v.cited, res.status, res.calls, v.dropped, v.dropped_refs)


__all__ = [
    "OUTLINE_SCHEMA",
    "Outline",
    "outline_call",
    "outline_messages",
    "parse_outline",
]
