"""Corpus ingest: read → validate → embed → write, in batches of one transaction each.

Idempotent (fragments already stored with the same content hash are skipped before embedding, so a
re-run writes 0 rows) and resumable (every committed batch stays; a re-run after `kill -9` embeds and
writes only what is missing). A bad record raises `InputError` before its batch is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import psycopg
from tqdm.auto import tqdm

from citegate import store
from citegate.db import ensure_embedder
from citegate.embed import Embedder
from citegate.errors import InputError
from citegate.fragments import Fragment


@dataclass(frozen=True)
class IngestReport:
    """What one ingest run did."""

    corpus: str
    embedder_id: str
    seen: int
    written: int
    skipped: int
    deleted: int


def demo_readers() -> dict[str, Callable[[], Iterator[Fragment]]]:
    """The built-in corpus builds by name (see `citegate.builds`)."""
    from citegate.builds import BUILDS

    return dict(BUILDS)


def validated(frags: Iterable[Fragment], origin: str) -> Iterator[Fragment]:
    """Pass fragments through, raising `InputError` on the first invalid one or a repeated key."""
    seen: set[str] = set()
    for i, f in enumerate(frags, 1):
        problems = f.problems()
        if f.key in seen:
            problems.append(f"duplicate fragment key {f.key!r}")
        if problems:
            raise InputError(origin, f"{i} ({f.key})", "; ".join(problems))
        seen.add(f.key)
        yield f


def _batches(items: Iterable[Fragment], size: int) -> Iterator[list[Fragment]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def ingest(
    conn: psycopg.Connection,
    frags: Iterable[Fragment],
    corpus: str,
    embedder: Embedder,
    *,
    origin: str = "",
    batch_size: int = 64,
    prune: bool = True,
    progress: bool = True,
) -> IngestReport:
    """Embed and store every fragment of one corpus that is not already stored unchanged."""
    ensure_embedder(conn, embedder.id, embedder.dim)
    stored = store.stored_hashes(conn, embedder.id, corpus)
    seen_keys: set[str] = set()
    written = skipped = 0
    bar = tqdm(desc=f"ingest {corpus}", unit="frag", disable=not progress)
    for batch in _batches(validated(frags, origin or corpus), batch_size):
        for f in batch:
            if f.corpus != corpus:
                raise InputError(origin or corpus, f.key, f"fragment of corpus {f.corpus!r}")
        seen_keys.update(f.key for f in batch)
        todo = [f for f in batch if stored.get(f.key) != f.content_hash]
        skipped += len(batch) - len(todo)
        if todo:
            vectors = embedder.embed_passages([f.text for f in todo])
            written += store.write_batch(conn, todo, vectors, embedder.id)
        bar.update(len(batch))
    bar.close()
    deleted = store.delete_missing(conn, embedder.id, corpus, seen_keys) if prune else 0
    if written or deleted:
        store.vacuum(conn)
    return IngestReport(corpus, embedder.id, len(seen_keys), written, skipped, deleted)


def ingest_corpus(
    conn: psycopg.Connection,
    name_or_path: str,
    embedder: Embedder,
    *,
    corpus: str | None = None,
    lang: str = "en",
    progress: bool = True,
) -> IngestReport:
    """Ingest a built-in corpus by name, or the files at a path as corpus `corpus` (default: stem)."""
    readers = demo_readers()
    if name_or_path in readers:
        return ingest(conn, readers[name_or_path](), name_or_path, embedder, progress=progress)
    from citegate.sources.files import read_path

    path = Path(name_or_path)
    if not path.exists():
        raise InputError(path, "-", f"no such corpus or path (built-in: {', '.join(readers)})")
    name = corpus or path.stem
    return ingest(
        conn, read_path(path, name, lang), name, embedder, origin=str(path), progress=progress
    )
