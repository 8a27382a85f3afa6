"""Model-written text that will be searched, checked before it re-enters retrieval.

Fallback probes, planner sub-questions and paraphrases, and follow-up rewrites are written by a
model, so they are untrusted input. Retrieval takes a text through `inputs.clean_question`, which
raises `QuestionError` for text it cannot search (no letter or digit, a NUL byte, a lone
surrogate, too long): raised inside a turn, that error blames the user's question for what the
model wrote. `check_query` is the tolerant gate in front of it: it cleans what can be cleaned
(control and invisible characters, runs of whitespace) and refuses the rest with a short reason,
never raising; everything it returns passes `clean_question` unchanged. `keep_queries` applies it
to a list (duplicates and the excess over a cap dropped too), and `Dropped` records what was
dropped and why, with the text escaped and cut so that it is safe to print and to store.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from citegate.core.errors import QuestionError
from citegate.core.inputs import MAX_QUESTION_CHARS, clean_question

DEFAULT_MAX_CHARS = 300  # a search query, not a paragraph (the probe schema asks for 48)
SHOWN_CHARS = 60  # how much of a dropped text its record keeps
MAX_DROPPED = 20  # records kept per list; the rest are counted in one record
MIN_ALNUM_SHARE = 0.25  # letters, digits and marks among the visible characters
ECHO_MIN_WORDS = 5  # a copied prompt passage this long is an echo, not a query
JOINERS = "\u200c\u200d"  # ZWNJ, ZWJ: spelling in Indic and Persian scripts, kept between letters

_JSON_SHAPE = re.compile(r'[{}]|"\s*[\w ]{1,40}"\s*:|"\s*,\s*"|^\s*[\]\[,:]|[\[,]\s*$|\\[nrtu"]')
_ECHO_MARK = re.compile(r"</?\s*conversation_history\s*>|<\s*/?\s*response\b", re.IGNORECASE)
_REFUSAL = re.compile(
    r"^(?:i can'?t|i cannot|i'm sorry|i am sorry|as an ai|извините|я не могу)(?!\w)", re.IGNORECASE
)


@dataclass(frozen=True)
class Dropped:
    """A model-written text that was not searched: the text as shown (escaped, cut: see `shown`)
    and why it was dropped."""

    text: str
    reason: str

    @classmethod
    def of(cls, value: object, reason: str) -> Dropped:
        """A record for any value the model wrote (a string, or a number where text was due)."""
        return cls(shown(value), reason or "unusable")

    def __str__(self) -> str:
        return f"{self.text}: {self.reason}"


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """A value as safe printable text: quoted, characters that do not print (controls, bidi
    marks, zero-width characters, lone surrogates) as escapes, cut at `limit` characters with the
    count of the rest. The result encodes as UTF-8 and fits on one line."""
    text = value if isinstance(value, str) else repr(value)
    head = "".join(_escaped(ch) for ch in text[:limit])
    more = f"… (+{len(text) - limit} chars)" if len(text) > limit else ""
    return f"'{head}'{more}"


def _escaped(ch: str) -> str:
    """One character as it prints, or as a backslash escape when it does not."""
    if ch.isprintable() and ch != "\\":
        return ch
    if ch == "\\":
        return "\\\\"
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _visible(text: str) -> str:
    """The text with control characters turned into spaces and the other invisible characters
    (format, surrogate, private-use, unassigned) removed; a zero-width joiner or non-joiner stays
    only between two letters or marks, where it spells."""
    out: list[str] = []
    for i, ch in enumerate(text):
        cat = unicodedata.category(ch)
        if cat == "Cc":
            out.append(" ")
        elif ch in JOINERS:
            if _spells(text, i):
                out.append(ch)
        elif cat[0] != "C":
            out.append(ch)
    return " ".join("".join(out).split())


def _spells(text: str, i: int) -> bool:
    """Whether the joiner at `i` sits between a letter or mark and a letter or mark."""
    if i == 0 or i + 1 >= len(text):
        return False
    return all(unicodedata.category(text[j])[0] in "LM" for j in (i - 1, i + 1))


def _shape_problem(text: str, cleaned: str, max_chars: int) -> str | None:
    """Why the cleaned text is no query by its characters alone, if it is not."""
    if not cleaned:
        raw = text.strip()
        return "control or invisible characters only" if raw else "empty"
    if not any(unicodedata.category(ch)[0] in "LN" for ch in cleaned):
        return "no letter or digit"
    if _JSON_SHAPE.search(cleaned):
        return "JSON fragment"
    if len(cleaned) > max_chars:
        return f"too long ({len(cleaned)} chars > {max_chars})"
    chars = cleaned.replace(" ", "")
    words = sum(unicodedata.category(ch)[0] in "LNM" for ch in chars)
    if words < MIN_ALNUM_SHARE * len(chars):
        return "mostly punctuation or symbols"
    return None


def _content_problem(cleaned: str, prompt: str) -> str | None:
    """Why the text is no query by what it says (an echo of the prompt, a refusal), if so."""
    if _ECHO_MARK.search(cleaned):
        return "echo of the prompt"
    copied = len(cleaned.split()) >= ECHO_MIN_WORDS and bool(prompt)
    if copied and cleaned.casefold() in " ".join(prompt.split()).casefold():
        return "echo of the prompt"
    if _REFUSAL.match(cleaned.replace("’", "'")):
        return "a refusal, not a query"
    return None


def check_query(
    text: object, *, max_chars: int = DEFAULT_MAX_CHARS, prompt: str = ""
) -> tuple[str | None, str]:
    """(the cleaned query, "ok"), or (None, a short reason) for model text that cannot be
    searched. Never raises; whatever it returns passes `clean_question` unchanged.

    Cleaning: control characters become spaces; format characters (zero-width, bidi marks),
    lone surrogates, private-use and unassigned code points are removed (a ZWJ/ZWNJ between two
    letters stays); whitespace runs become one space. Refused, in order: not text; too long
    before cleaning (> 4x `max_chars`, so a huge reply is not scanned); empty; control or
    invisible characters only; no letter or digit in any script; a JSON fragment (a brace, a
    `"key":`, a `", "` joint, an escape, or a leading/trailing bracket, comma or colon); too long
    (> `max_chars`, at most `MAX_QUESTION_CHARS`); letters, digits and marks under a quarter of
    the visible characters; an echo of the prompt (the conversation-history tags, or a passage of
    `prompt` of five words or more); a refusal opening ("I'm sorry", "As an AI", ...)."""
    if not isinstance(text, str):
        return None, f"not text ({type(text).__name__})"
    limit = max(1, min(max_chars, MAX_QUESTION_CHARS))
    if len(text) > 4 * limit:
        return None, f"too long ({len(text)} chars > {limit})"
    cleaned = _visible(text)
    problem = _shape_problem(text, cleaned, limit) or _content_problem(cleaned, prompt)
    if problem:
        return None, problem
    return _searchable(cleaned)


def _searchable(cleaned: str) -> tuple[str | None, str]:
    """The last word goes to the search's own gate: what `clean_question` refuses is dropped
    with its message (a rule added there later holds here too)."""
    try:
        return clean_question(cleaned), "ok"
    except QuestionError as exc:
        return None, f"refused by the search: {exc}"


def keep_queries(
    texts: Iterable[object],
    *,
    limit: int = 5,
    max_chars: int = DEFAULT_MAX_CHARS,
    prompt: str = "",
) -> tuple[tuple[str, ...], tuple[Dropped, ...]]:
    """The usable queries among `texts` (checked by `check_query`), in order, without repeats
    (compared casefolded), at most `limit`; and a record of each one dropped. After
    `MAX_DROPPED` records the rest are counted in one last record."""
    kept: dict[str, str] = {}
    dropped: list[Dropped] = []
    extra = 0
    for value in texts:
        query, reason = check_query(value, max_chars=max_chars, prompt=prompt)
        key = query.casefold() if query is not None else ""
        if query is not None and key in kept:
            reason = "repeats an earlier query"
        elif query is not None and len(kept) >= limit:
            reason = f"over the limit of {limit} queries"
        elif query is not None:
            kept[key] = query
            continue
        if len(dropped) < MAX_DROPPED:
            dropped.append(Dropped.of(value, reason))
        else:
            extra += 1
    if extra:
        dropped.append(Dropped("", f"{extra} more dropped, not shown"))
    return tuple(kept.values()), tuple(dropped)


def summary(dropped: Iterable[Dropped]) -> str:
    """The records as one line ("'x': reason; 'y': reason"), for a trace's string fields."""
    return "; ".join(str(d) for d in dropped)


__all__ = [
    "DEFAULT_MAX_CHARS",
    "Dropped",
    "check_query",
    "keep_queries",
    "shown",
    "summary",
]
