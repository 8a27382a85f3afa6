"""Curated notes in PostgreSQL: import (all or nothing), list, show, remove, the curated-note lane.

`import_notes` stores a notes file (`corpus.notes.read_notes`) in `curated_notes`, one row per
note, and each note's trigger phrases (embedded as queries: they are phrased as questions) and
body chunks (as passages) in `curated_note_units`, per embedder. Everything is checked first —
the corpus holds fragments, every cited address is one of its fragments', no note of another
source or changed content is overwritten without `replace` — and written in one transaction,
so a refused or failed import leaves the database as it was. Re-importing an unchanged file
writes nothing; the embedder's own cache makes a re-import after `--replace` cheap.

`note_hits` is the curated-note lane: every note of the searched corpora with its best cosine over
its units, an exact scan (a curated table holds hundreds of rows, not millions); `cited_ids` finds
the fragments at the addresses a pinned note cites.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from citegate.core.errors import InputError
from citegate.core.inputs import shown
from citegate.corpus.notes import Note, NoteFile, NoteKind, body_chunks
from citegate.models.embed import Embedder
from citegate.store.db import ensure_embedder
from citegate.store.presence import require_fragments

_NOTE_COLUMNS = "note_key, corpus, kind, lang, triggers, body, cites, author, written, source"


@dataclass(frozen=True)
class ImportReport:
    """What one import did: notes written (new or replacing), replaced (stored under the same
    key before), removed (stored from this source, gone from the file), unchanged (nothing
    written), and the units embedded and written."""

    corpus: str
    source: str
    written: int
    replaced: int
    removed: int
    unchanged: bool
    units: int

    def __str__(self) -> str:
        if self.unchanged:
            return f"{self.source}: unchanged ({self.corpus})"
        return (
            f"{self.source}: {self.written} notes written into {self.corpus} "
            f"({self.replaced} replaced, {self.removed} removed), {self.units} units embedded"
        )


@dataclass(frozen=True)
class NoteHit:
    """A note's similarity to a question: its best cosine over its units, which kind of unit
    gave it and that unit's text, and the best over its triggers and over its body alone."""

    note: Note
    similarity: float
    via: str
    unit: str
    trigger_similarity: float
    body_similarity: float


@dataclass(frozen=True)
class _Units:
    """One note's units to store: (unit kind, ord, text) and their vectors."""

    rows: list[tuple[str, int, str]]
    vectors: np.ndarray


def _embed(notes: Sequence[Note], embedder: Embedder) -> list[_Units]:
    """Every note's triggers (as queries) and body chunks (as passages), in two batched calls."""
    triggers = [t for n in notes for t in n.triggers]
    chunks = [[*body_chunks(n.body)] for n in notes]
    qv = embedder.embed_queries(triggers) if triggers else np.zeros((0, 0))
    pv = embedder.embed_passages([c for cs in chunks for c in cs])
    out, ti, pi = [], 0, 0
    for n, cs in zip(notes, chunks, strict=True):
        rows = [("trigger", j, t) for j, t in enumerate(n.triggers)]
        rows += [("body", j, c) for j, c in enumerate(cs)]
        vecs = np.vstack([qv[ti : ti + len(n.triggers)], pv[pi : pi + len(cs)]])
        ti, pi = ti + len(n.triggers), pi + len(cs)
        out.append(_Units(rows, vecs.astype(np.float32)))
    return out


def _check_cites(conn: psycopg.Connection, nf: NoteFile, embedder_id: str) -> None:
    """Refuse the first note citing an address the corpus does not hold."""
    wanted = sorted({c for n in nf.notes for c in n.cites})
    held = {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT addr_label FROM fragments WHERE embedder_id = %s AND corpus = %s "
            "AND addr_label = ANY(%s)",
            (embedder_id, nf.corpus, wanted),
        )
    }
    for i, n in enumerate(nf.notes, 1):
        for c in n.cites:
            if c not in held:
                raise InputError(
                    nf.path, f"{i} ({n.key})",
                    f"cites {shown(c)}, which corpus {nf.corpus} does not hold",
                )  # fmt: skip


def _stored(conn: psycopg.Connection, corpus: str) -> dict[str, tuple[int, str, str]]:
    """note key -> (row id, source, content hash) of what the corpus's notes hold now."""
    rows = conn.execute(
        "SELECT note_key, id, source, content_hash FROM curated_notes WHERE corpus = %s", (corpus,)
    )
    return {k: (i, s, h) for k, i, s, h in rows}


def _refuse_overwrite(nf: NoteFile, stored: dict[str, tuple[int, str, str]]) -> None:
    """Without `replace`: a key stored from another source, or this source stored with other
    content, is refused."""
    for i, n in enumerate(nf.notes, 1):
        if n.key in stored and stored[n.key][1] != nf.source:
            raise InputError(
                nf.path, f"{i} ({n.key})",
                f"the key is stored from {stored[n.key][1]}; pass --replace to replace it",
            )  # fmt: skip
    mine = {k for k, (_, s, _) in stored.items() if s == nf.source}
    changed = sum(n.key in mine and stored[n.key][2] != n.content_hash() for n in nf.notes)
    gone = len(mine - {n.key for n in nf.notes})
    if changed or gone:
        raise InputError(
            nf.path, "-",
            f"{nf.source} is already imported into {nf.corpus} with other content ({changed} "
            f"notes changed, {gone} gone from the file); pass --replace to replace it",
        )  # fmt: skip


def _has_units(conn: psycopg.Connection, ids: Sequence[int], embedder_id: str) -> set[int]:
    rows = conn.execute(
        "SELECT DISTINCT note_id FROM curated_note_units "
        "WHERE embedder_id = %s AND note_id = ANY(%s)",
        (embedder_id, list(ids)),
    )
    return {r[0] for r in rows}


def _insert_units(conn: psycopg.Connection, note_id: int, units: _Units, embedder_id: str) -> None:
    dim = int(units.vectors.shape[1])
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO curated_note_units (note_id, unit, ord, text, embedder_id, dim, "
            "embedding) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (note_id, u, o, t, embedder_id, dim, v)
                for (u, o, t), v in zip(units.rows, units.vectors, strict=True)
            ],
        )


def _insert_note(conn: psycopg.Connection, n: Note) -> int:
    row = conn.execute(
        f"INSERT INTO curated_notes ({_NOTE_COLUMNS}, content_hash) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (n.key, n.corpus, str(n.kind), n.lang, list(n.triggers), n.body, list(n.cites),
         n.author, n.written, n.source, n.content_hash()),
    ).fetchone()  # fmt: skip
    assert row is not None
    return int(row[0])


def import_notes(
    conn: psycopg.Connection, nf: NoteFile, embedder: Embedder, *, replace: bool = False
) -> ImportReport:
    """Store a notes file, all or nothing (see the module docstring); an `InputError` naming
    the file and the record, the database unchanged, for anything refused."""
    require_fragments(conn, embedder.id, [nf.corpus])
    _check_cites(conn, nf, embedder.id)
    units = _embed(nf.notes, embedder)
    dim = int(units[0].vectors.shape[1])
    ensure_embedder(conn, embedder.id, dim)
    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"citegate-notes|{nf.corpus}",),
        )
        stored = _stored(conn, nf.corpus)
        if not replace:
            _refuse_overwrite(nf, stored)
            return _fill_units(conn, nf, units, stored, embedder.id)
        mine = {k for k, (_, s, _) in stored.items() if s == nf.source}
        keys = {n.key for n in nf.notes}
        doomed = (mine | keys) & set(stored)
        conn.execute(
            "DELETE FROM curated_notes WHERE corpus = %s AND note_key = ANY(%s)",
            (nf.corpus, sorted(doomed)),
        )
        for n, u in zip(nf.notes, units, strict=True):
            _insert_units(conn, _insert_note(conn, n), u, embedder.id)
    return ImportReport(
        nf.corpus, nf.source, len(nf.notes), len(keys & set(stored)), len(doomed - keys),
        False, sum(len(u.rows) for u in units),
    )  # fmt: skip


def _fill_units(
    conn: psycopg.Connection,
    nf: NoteFile,
    units: list[_Units],
    stored: dict[str, tuple[int, str, str]],
    embedder_id: str,
) -> ImportReport:
    """Without `replace` (nothing stored differs): insert the notes not stored yet, and the
    units of stored notes that this embedder has none of."""
    have = _has_units(conn, [v[0] for v in stored.values()], embedder_id)
    written, n_units = 0, 0
    for n, u in zip(nf.notes, units, strict=True):
        if n.key in stored:
            if stored[n.key][0] in have:
                continue
            note_id = stored[n.key][0]
        else:
            note_id, written = _insert_note(conn, n), written + 1
        _insert_units(conn, note_id, u, embedder_id)
        n_units += len(u.rows)
    return ImportReport(nf.corpus, nf.source, written, 0, 0, n_units == 0, n_units)


def _note(row: Sequence[object]) -> Note:
    key, corpus, kind, lang, triggers, body, cites, author, written, source = row
    return Note(
        str(key), str(corpus), NoteKind(kind), str(lang), tuple(triggers), str(body),  # type: ignore[arg-type]
        tuple(cites), str(author), str(written), str(source),  # type: ignore[arg-type]
    )  # fmt: skip


def list_notes(
    conn: psycopg.Connection, corpus: str | None = None, kind: str | None = None
) -> list[Note]:
    """The stored notes (of one corpus, of one kind), by corpus and key."""
    rows = conn.execute(
        f"SELECT {_NOTE_COLUMNS} FROM curated_notes WHERE (%(c)s::text IS NULL OR corpus = %(c)s) "
        "AND (%(k)s::text IS NULL OR kind = %(k)s) ORDER BY corpus, note_key",
        {"c": corpus, "k": kind},
    )
    return [_note(r) for r in rows]


def get_note(conn: psycopg.Connection, corpus: str, key: str) -> Note:
    """One stored note; an `InputError` when the corpus holds no note of that key."""
    row = conn.execute(
        f"SELECT {_NOTE_COLUMNS} FROM curated_notes WHERE corpus = %s AND note_key = %s",
        (corpus, key),
    ).fetchone()
    if row is None:
        raise InputError(corpus, shown(key), "no note of that key in this corpus")
    return _note(row)


def remove_notes(
    conn: psycopg.Connection, corpus: str, keys: Sequence[str] = (), source: str | None = None
) -> int:
    """Remove the notes named (by key, or every note of a source); an unknown key or a source
    with no note is refused and nothing is removed. Returns how many were removed."""
    with conn.transaction():
        stored = _stored(conn, corpus)
        for k in keys:
            if k not in stored:
                raise InputError(corpus, shown(k), "no note of that key in this corpus")
        doomed = set(keys)
        if source is not None:
            of_source = {k for k, (_, s, _) in stored.items() if s == source}
            if not of_source:
                raise InputError(
                    corpus, shown(source), "no note of this corpus comes from that source"
                )
            doomed |= of_source
        conn.execute(
            "DELETE FROM curated_notes WHERE corpus = %s AND note_key = ANY(%s)",
            (corpus, sorted(doomed)),
        )
    return len(doomed)


def notes_digest(conn: psycopg.Connection, corpora: Sequence[str], embedder_id: str) -> str:
    """The identity of the stored notes of `corpora` with units for `embedder_id` ("" when
    there are none): a cache key that changes with any import or removal."""
    rows = conn.execute(
        "SELECT n.corpus, n.note_key, n.content_hash, count(u.id) FROM curated_notes n "
        "JOIN curated_note_units u ON u.note_id = n.id AND u.embedder_id = %s "
        "WHERE n.corpus = ANY(%s) GROUP BY n.id ORDER BY n.corpus, n.note_key",
        (embedder_id, list(corpora)),
    ).fetchall()
    if not rows:
        return ""
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def note_hits(
    conn: psycopg.Connection, qvec: np.ndarray, embedder_id: str, corpora: Sequence[str]
) -> list[NoteHit]:
    """Every stored note of `corpora` with units for `embedder_id`, with its best cosine to the
    query vector over its units (and over its triggers and body apart), best first, ties by
    key."""
    rows = conn.execute(
        f"SELECT n.id, {', '.join('n.' + c for c in _NOTE_COLUMNS.split(', '))}, u.unit, u.text, "
        "1 - (u.embedding <=> %(q)s::vector) AS sim "
        "FROM curated_notes n JOIN curated_note_units u ON u.note_id = n.id "
        "WHERE n.corpus = ANY(%(c)s) AND u.embedder_id = %(e)s AND u.dim = %(d)s",
        {"q": np.asarray(qvec, dtype=np.float32), "c": list(corpora), "e": embedder_id,
         "d": int(len(qvec))},
    ).fetchall()  # fmt: skip
    best: dict[int, list[object]] = {}
    for r in rows:
        nid, note_row, unit, text, sim = r[0], r[1:11], r[11], r[12], float(r[13])
        b = best.setdefault(nid, [_note(note_row), -2.0, "", "", -2.0, -2.0])
        slot = 4 if unit == "trigger" else 5
        b[slot] = max(b[slot], sim)  # type: ignore[call-overload]
        if sim > b[1]:  # type: ignore[operator]
            b[1], b[2], b[3] = sim, unit, text
    hits = [NoteHit(b[0], b[1], b[2], b[3], b[4], b[5]) for b in best.values()]  # type: ignore[arg-type]
    return sorted(hits, key=lambda h: (-h.similarity, h.note.key))


def cited_ids(
    conn: psycopg.Connection, labels: Sequence[str], embedder_id: str, corpora: Sequence[str]
) -> dict[str, list[int]]:
    """Address -> ids of the fragments at that address in the searched corpora (the verses a
    pinned note cites, to fetch beside it)."""
    if not labels:
        return {}
    rows = conn.execute(
        "SELECT addr_label, id FROM fragments WHERE embedder_id = %s AND corpus = ANY(%s) "
        "AND addr_label = ANY(%s) ORDER BY id",
        (embedder_id, list(corpora), list(labels)),
    ).fetchall()
    out: dict[str, list[int]] = {}
    for label, fid in rows:
        out.setdefault(label, []).append(fid)
    return out


__all__ = [
    "ImportReport",
    "NoteHit",
    "cited_ids",
    "get_note",
    "import_notes",
    "list_notes",
    "note_hits",
    "notes_digest",
    "remove_notes",
]
