"""Curated notes as data an editor keeps: the notes file format and its reader.

A notes file (YAML, reviewed like code) holds the notes of one corpus:

    format: citegate-notes/1
    corpus: gita
    notes:
      - key: soul-changes-bodies        # [a-z0-9][a-z0-9-]*, unique in the file
        kind: pinned                    # pinned | boost | memory
        lang: en                        # en | ru | hi
        triggers: [what happens to the soul at death]
        body: The self is not born and does not die ...
        cites: [BG 2.13, BG 2.22]       # fragment addresses of the corpus, never note:<key>
        author: citegate editors
        date: "2026-11-20"

Kinds: **pinned**, an editor-blessed answer to a specific question, citable as `note:<key>`;
**boost**, a topic that raises the rerank scores of the fragments it cites; **memory**,
background that frames an answer and is never cited. A pinned or boost note cites at least one
address; a memory note cites none (`cites: []`): an address on a note that never cites would
read as a citation it cannot give. The reader checks every record before anything is stored
(`store.memory.import_notes` then checks the cited addresses against the corpus); a problem is
one line naming the file and the record (and the field, and the line and column where the YAML
reader refused a value: a key written twice, the date 2026-02-30).

A file's notes are stored under its source (`source_name`): its path inside the project
(`data/memory/gita-notes.yaml`) or, outside it, its absolute path. Two files of one base name
in two folders are two sources, so re-importing one with `--replace` never touches the other's
notes; one file is one source by whichever path it is named, from whichever folder.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import ConfigError, InputError
from citegate.core.inputs import shown, text_problem
from citegate.core.yamlfile import YamlRefusal, read_yaml
from citegate.corpus.chunking import pack_text

NOTES_FORMAT = "citegate-notes/1"
NOTE_ADDRESS_PREFIX = "note:"
LANGS = ("en", "ru", "hi")
MAX_NOTES = 2000
MAX_TRIGGERS = 8
MAX_TRIGGER_CHARS = 200
MAX_BODY_CHARS = 4000
MAX_CITES = 12
MAX_ADDRESS_CHARS = 100
MAX_AUTHOR_CHARS = 100
KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_TOP = {"format", "corpus", "notes"}
_FIELDS = ("key", "kind", "lang", "triggers", "body", "cites", "author", "date")


class NoteKind(StrEnum):
    """What a note does: cited (pinned), nudges scores (boost), frames only (memory)."""

    PINNED = "pinned"
    BOOST = "boost"
    MEMORY = "memory"


@dataclass(frozen=True)
class Note:
    """One curated note, as read from its file (`source`: the file's `source_name`)."""

    key: str
    corpus: str
    kind: NoteKind
    lang: str
    triggers: tuple[str, ...]
    body: str
    cites: tuple[str, ...]
    author: str
    written: str
    source: str

    @property
    def address(self) -> str:
        """The address a pinned note is cited by: `note:<key>`."""
        return f"{NOTE_ADDRESS_PREFIX}{self.key}"

    def content_hash(self) -> str:
        """sha256 of the note's content (every field but its source file): an unchanged note
        re-imported from another file hashes the same."""
        d = asdict(self)
        del d["source"]
        d["kind"] = str(self.kind)
        return hashlib.sha256(
            json.dumps(d, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()


@dataclass(frozen=True)
class NoteFile:
    """A read and checked notes file: its path, corpus and notes."""

    path: Path
    corpus: str
    notes: tuple[Note, ...]

    @property
    def source(self) -> str:
        """The source its notes are stored under (`source_name`, taken when the file was read:
        a relative path names the same file whatever the working directory is later)."""
        return self.notes[0].source if self.notes else source_name(self.path)


def source_name(path: Path | str) -> str:
    """The source a notes file's notes are stored under: the file's path relative to the
    project root when it lies inside it (the same from any working directory or checkout),
    else its absolute path; links resolved, so one file is one source by any path naming it."""
    real = Path(path).resolve()
    try:
        return real.relative_to(paths.ROOT).as_posix()
    except ValueError:
        return real.as_posix()


def read_notes(path: Path | str) -> NoteFile:
    """The notes of the file at `path` through the one YAML reader (size, depth and alias
    limits), every record checked; an `InputError` naming the file and the record otherwise."""
    path = Path(path)
    try:
        doc = read_yaml(path, "notes file")
    except YamlRefusal as exc:
        raise _refusal_at(path, exc) from None
    except ConfigError as exc:
        raise InputError(path, "-", str(exc).split(": ", 1)[-1]) from None
    if not isinstance(doc, dict):
        raise InputError(path, "-", "expected a mapping with format, corpus and notes")
    unknown = sorted(set(map(str, doc)) - _TOP)
    if unknown:
        raise InputError(path, "-", f"unknown key(s) {unknown}; known: {sorted(_TOP)}")
    if doc.get("format") != NOTES_FORMAT:
        raise InputError(
            path, "-", f"format must be {NOTES_FORMAT!r}, got {shown(doc.get('format'))}"
        )
    corpus = doc.get("corpus")
    if not isinstance(corpus, str) or not KEY.fullmatch(corpus.lower()) or corpus != corpus.strip():
        raise InputError(path, "-", f"corpus must be a corpus name, got {shown(corpus)}")
    records = doc.get("notes")
    if not isinstance(records, list) or not records:
        raise InputError(path, "-", "notes must be a non-empty list of notes")
    if len(records) > MAX_NOTES:
        raise InputError(path, "-", f"{len(records)} notes; the limit is {MAX_NOTES}")
    notes, seen, source = [], set(), source_name(path)
    for i, rec in enumerate(records, 1):
        note = _note(path, i, rec, corpus, source)
        if note.key in seen:
            raise InputError(path, f"{i} ({note.key})", "the key is used by an earlier note")
        seen.add(note.key)
        notes.append(note)
    return NoteFile(path, corpus, tuple(notes))


def _refusal_at(path: Path, exc: YamlRefusal) -> InputError:
    """The YAML reader's refusal as the notes reader words its own: the record it falls in
    (`notes[i]`) and the field (a known one; any other key is never echoed), then the line,
    column and rule."""
    record, field = "-", ""
    if len(exc.path) >= 2 and exc.path[0] == "notes" and isinstance(exc.path[1], int):
        record = str(exc.path[1] + 1)
        if len(exc.path) >= 3 and exc.path[2] in _FIELDS:
            field = f"field {exc.path[2]}: "
    at = f"line {exc.line}, column {exc.column}: " if exc.line else ""
    return InputError(path, record, f"{at}{field}{exc.reason}")


def _note(path: Path, i: int, rec: Any, corpus: str, source: str) -> Note:
    """One record checked into a `Note`."""
    where = f"{i}"
    if not isinstance(rec, dict):
        raise InputError(path, where, "expected a mapping (one note)")
    key = rec.get("key")
    if isinstance(key, str) and KEY.fullmatch(key):
        where = f"{i} ({key})"
    else:
        raise InputError(path, where, f"key must match {KEY.pattern}, got {shown(key)}")
    unknown = sorted(set(map(str, rec)) - set(_FIELDS))
    if unknown:
        raise InputError(path, where, f"unknown field(s) {unknown}; known: {list(_FIELDS)}")
    missing = [f for f in _FIELDS if f not in rec]
    if missing:
        raise InputError(path, where, f"missing field(s) {missing}")
    kind = rec["kind"]
    if kind not in tuple(NoteKind):
        raise InputError(path, where, f"kind must be pinned, boost or memory, got {shown(kind)}")
    if rec["lang"] not in LANGS:
        raise InputError(
            path, where, f"lang must be one of {', '.join(LANGS)}, got {shown(rec['lang'])}"
        )
    triggers = _texts(path, where, "triggers", rec["triggers"], 1, MAX_TRIGGERS, MAX_TRIGGER_CHARS)
    cites = _texts(path, where, "cites", rec["cites"] or [], 0, MAX_CITES, MAX_ADDRESS_CHARS)
    for c in cites:
        if "\n" in c or "\r" in c or c.startswith(NOTE_ADDRESS_PREFIX):
            raise InputError(path, where, f"cites {shown(c)} is not a fragment address")
    if kind != NoteKind.MEMORY and not cites:
        raise InputError(path, where, f"a {kind} note must cite at least one address")
    if kind == NoteKind.MEMORY and cites:
        raise InputError(
            path, where, "a memory note is never cited and cites nothing: give cites: []"
        )
    return Note(
        key=key,
        corpus=corpus,
        kind=NoteKind(kind),
        lang=rec["lang"],
        triggers=triggers,
        body=_text(path, where, "body", rec["body"], MAX_BODY_CHARS),
        cites=cites,
        author=_text(path, where, "author", rec["author"], MAX_AUTHOR_CHARS),
        written=_date(path, where, rec["date"]),
        source=source,
    )


def _text(path: Path, where: str, name: str, value: Any, limit: int) -> str:
    """A non-empty string of at most `limit` characters, stripped."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, where, f"{name} must be non-empty text, got {shown(value)}")
    value = value.strip()
    if len(value) > limit:
        raise InputError(path, where, f"{name} is {len(value)} characters; the limit is {limit}")
    problem = text_problem(value)
    if problem:
        raise InputError(path, where, f"{name} {problem}")
    return value


def _texts(
    path: Path, where: str, name: str, value: Any, least: int, most: int, chars: int
) -> tuple[str, ...]:
    """A list of `least`..`most` distinct texts of at most `chars` characters each."""
    if not isinstance(value, list):
        raise InputError(path, where, f"{name} must be a list, got {shown(value)}")
    if not least <= len(value) <= most:
        raise InputError(
            path, where, f"{name} must hold {least} to {most} entries, not {len(value)}"
        )
    out = tuple(_text(path, where, f"{name}[{j}]", v, chars) for j, v in enumerate(value, 1))
    if len(set(out)) != len(out):
        raise InputError(path, where, f"{name} repeats an entry")
    return out


def _date(path: Path, where: str, value: Any) -> str:
    """An ISO date (YYYY-MM-DD), from a string or a YAML date."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise InputError(path, where, f"date must be YYYY-MM-DD, got {shown(value)}")


def body_chunks(body: str) -> list[str]:
    """The body packed by paragraph and sentence into ~900-character chunks, as library text
    is (a short body is one chunk)."""
    return pack_text(body) or [body]


__all__ = [
    "LANGS",
    "NOTES_FORMAT",
    "NOTE_ADDRESS_PREFIX",
    "Note",
    "NoteFile",
    "NoteKind",
    "body_chunks",
    "read_notes",
    "source_name",
]
