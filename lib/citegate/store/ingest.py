"""Corpus ingest: read → validate → embed → write, all-or-nothing per source.

A source is one file of a user folder, or one built-in build. Each source is read and validated in
full before any of it is embedded, and its fragments land in one transaction (small sources are
grouped into one transaction of whole sources), so a failure part-way leaves every earlier source
complete and nothing of the failing one. Deleting records that are gone from the source (the prune)
runs only after every source succeeded, in the same transaction as the last write.

Idempotent: fragments already stored with the same content hash are skipped before embedding, so a
re-run writes 0 rows, and a re-run after a failure or `kill -9` embeds and writes only what is
missing (the embedding cache keeps what a killed run had already embedded).

The BM25 indexes on disk that hold the corpus are rebuilt for the committed rows, and those that
no longer match are pruned, in the ingest's own step (`store.bm25.refresh`): a question only reads.

Safe: the origin of every corpus (built-in build name or resolved path) is recorded in `corpora`.
Replacing a corpus from a different source, removing rows of a corpus of unknown origin, or emptying
a corpus needs `replace=True` (`citegate ingest --replace`); otherwise nothing is changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from itertools import islice
from pathlib import Path

import numpy as np
import psycopg
from tqdm.auto import tqdm

from citegate.core.errors import CitegateError, ConfigError, InputError
from citegate.core.fragments import Fragment
from citegate.core.progress import bar
from citegate.corpus.builds import BUILDS
from citegate.corpus.sources.files import DEFAULT_MAX_SOURCE_BYTES, file_fragments, list_sources
from citegate.models.embed import Embedder
from citegate.store import bm25
from citegate.store import tables as store
from citegate.store.db import ensure_embedder, fit_graphs

BUILTIN_PREFIX = "builtin:"


@dataclass(frozen=True)
class IngestReport:
    """What one ingest run did."""

    corpus: str
    embedder_id: str
    seen: int
    written: int
    skipped: int
    deleted: int
    sources: int = 1
    hidden: int = 0  # hidden files of a folder that were skipped


@dataclass(frozen=True)
class Source:
    """One all-or-nothing unit of an ingest: a file of a folder, or a built-in build."""

    name: str  # what errors name: the file's path, or 'built-in corpus gita'
    read: Callable[[], Iterable[Fragment]]


class CorpusReplaceError(CitegateError):
    """An ingest would replace or empty a stored corpus and `--replace` was not given."""


def demo_readers() -> dict[str, Callable[[], Iterator[Fragment]]]:
    """The built-in corpus builds by name (see `citegate.corpus.builds`)."""
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


def _batches(items: Sequence[Fragment], size: int) -> Iterator[list[Fragment]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def describe_origin(origin: str | None) -> str:
    """An origin as a person reads it: 'the built-in build gita', a path, or 'an unknown source'."""
    if origin is None:
        return "an unknown source (ingested before origins were recorded)"
    if origin.startswith(BUILTIN_PREFIX):
        return f"the built-in build {origin.removeprefix(BUILTIN_PREFIX)}"
    return origin


@dataclass
class _Writer:
    """Collects whole sources, embeds what changed and writes them in one transaction per group."""

    conn: psycopg.Connection
    corpus: str
    embedder: Embedder
    origin: str | None
    stored: dict[str, str]
    bar: tqdm | None  # set once the ingest's bar is open
    batch_size: int
    seen: dict[str, str] = field(default_factory=dict)  # fragment key -> the source it came from
    pending: list[Fragment] = field(default_factory=list)
    pending_sources: int = 0
    done_sources: int = 0
    written: int = 0
    skipped: int = 0
    deleted: int = 0

    def read(self, src: Source) -> list[Fragment]:
        """Every fragment of a source, validated, or `InputError` naming the source and record."""
        frags = list(validated(src.read(), src.name))
        for i, f in enumerate(frags, 1):
            if f.corpus != self.corpus:
                raise InputError(src.name, f"{i} ({f.key})", f"fragment of corpus {f.corpus!r}")
            if f.key in self.seen:
                raise InputError(
                    src.name, f"{i} ({f.key})", f"fragment key also made by {self.seen[f.key]}"
                )
        self.seen.update((f.key, src.name) for f in frags)
        return frags

    def add(self, frags: list[Fragment]) -> None:
        """Queue one whole source, writing the queue first once it holds a batch of new fragments
        (the last group always stays queued, so it is written together with the prune)."""
        if len(self.pending) >= self.batch_size:
            self.flush()
        todo = [f for f in frags if self.stored.get(f.key) != f.content_hash]
        self.skipped += len(frags) - len(todo)
        self.bar.update(len(frags) - len(todo))
        self.pending.extend(todo)
        self.pending_sources += 1

    def flush(self, delete: Sequence[str] = (), *, last: bool = False) -> None:
        """Embed the queued sources, then write them (and `delete`) in one transaction; the
        `last` write recounts the corpus's lexemes when anything changed or none are counted."""
        lexemes = last and bool(
            self.written
            or self.deleted
            or self.pending
            or delete
            or not store.has_lexemes(self.conn, self.embedder.id, self.corpus)
        )
        vectors = [np.zeros((0, self.embedder.dim), dtype=np.float32)]
        for batch in _batches(self.pending, self.batch_size):
            vectors.append(self.embedder.embed_passages([f.text for f in batch]))
            self.bar.update(len(batch))
        written, deleted = store.write_sources(
            self.conn,
            self.pending,
            np.concatenate(vectors),
            self.embedder.id,
            self.corpus,
            origin=self.origin if self.seen else None,
            delete=delete,
            lexemes=lexemes,
        )
        self.written += written
        self.deleted += deleted
        self.done_sources += self.pending_sources
        self.pending, self.pending_sources = [], 0


def _read_resumable(w: _Writer, src: Source, unit: str) -> list[Fragment]:
    """One source's fragments; on bad input the complete sources read before it are stored
    first, and the error says how to resume."""
    try:
        return w.read(src)
    except InputError as exc:
        w.flush()
        raise _resume_error(exc, w.done_sources, unit) from exc


def _resume_error(exc: InputError, done: int, unit: str) -> InputError:
    """The failing source's error, saying that it wrote nothing and how to resume."""
    return InputError(
        exc.path,
        exc.record,
        f"{exc.message}; nothing of this {unit} was stored. Fix {exc.path} and re-run the same "
        f"command: {done} {unit}{'s' if done != 1 else ''} already stored are skipped",
    )


def _refuse_replacing(
    sources: Sequence[Source],
    corpus: str,
    stored: dict[str, str],
    recorded: str | None,
    origin: str | None,
    prune: bool,
) -> None:
    """Raise `CorpusReplaceError` when the ingest would replace a stored corpus of another source,
    or delete rows of one whose source is unknown; checked before anything is written."""
    held = f"corpus {corpus!r} holds {len(stored)} fragments from {describe_origin(recorded)}"
    if recorded is not None and origin is not None and recorded != origin:
        raise CorpusReplaceError(
            f"{held}; ingesting {describe_origin(origin)} into it would replace them. Pass "
            "--replace to do that, or give this source another corpus name (--name)"
        )
    if (recorded is None or origin is None) and prune:
        keys = {f.key for src in sources for f in src.read()}
        gone = len(set(stored) - keys)
        if gone:
            raise CorpusReplaceError(
                f"{held}; ingesting {describe_origin(origin)} would remove {gone} of them. "
                "Pass --replace to do that, or give this source another corpus name (--name)"
            )


def _count(sources: Sequence[Source]) -> int | None:
    """How many fragments the sources hold, for the bar's total and ETA before anything is
    embedded (reading and chunking are cheap beside embedding); None when one of them cannot be
    read (the ingest itself then reports which, and where)."""
    try:
        return sum(sum(1 for _ in src.read()) for src in sources)
    except (InputError, OSError, ValueError):
        return None


def ingest_sources(
    conn: psycopg.Connection,
    sources: Sequence[Source],
    corpus: str,
    embedder: Embedder,
    *,
    origin: str | None = None,
    replace: bool = False,
    prune: bool = True,
    progress: bool = True,
    batch_size: int = 64,
    unit: str = "source",
    hidden: int = 0,
) -> IngestReport:
    """Embed and store every fragment of `sources` (one corpus) not already stored unchanged.

    `origin` identifies where the corpus comes from; None means undeclared (then only the rows the
    sources still hold are safe without `replace`). Raises `CorpusReplaceError` before writing
    anything when the ingest would replace or empty the stored corpus without `replace`.
    """
    ensure_embedder(conn, embedder.id, embedder.dim)
    with store.corpus_lock(conn, embedder.id, corpus):
        report = _ingest_locked(
            conn,
            sources,
            corpus,
            embedder,
            origin=origin,
            replace=replace,
            prune=prune,
            progress=progress,
            batch_size=batch_size,
            unit=unit,
            hidden=hidden,
        )
        _refresh_bm25(conn, embedder.id, corpus)
    return report


def _refresh_bm25(conn: psycopg.Connection, embedder_id: str, corpus: str) -> None:
    """The ingest's BM25 step, once its writes are committed: every BM25 index on disk that
    holds the corpus is rebuilt for the rows now stored and the ones that no longer match are
    pruned (`bm25.refresh`), so a question never builds after an ingest. Inside a caller's open
    transaction (an import's fold builds) it waits for the caller: an index of rows that may yet
    roll back is not worth building, and the next build prunes what that commit replaced."""
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        bm25.refresh(conn, embedder_id, corpus)


def _ingest_locked(
    conn: psycopg.Connection,
    sources: Sequence[Source],
    corpus: str,
    embedder: Embedder,
    *,
    origin: str | None,
    replace: bool,
    prune: bool,
    progress: bool,
    batch_size: int,
    unit: str,
    hidden: int,
) -> IngestReport:
    """`ingest_sources` under the corpus lock: nothing else writes this corpus meanwhile."""
    stored = store.stored_hashes(conn, embedder.id, corpus)
    if stored and not replace:
        try:
            recorded = store.corpus_origin(conn, embedder.id, corpus)
            _refuse_replacing(sources, corpus, stored, recorded, origin, prune)
        except InputError as exc:
            raise _resume_error(exc, 0, unit) from exc
    w = _Writer(conn, corpus, embedder, origin, stored, None, batch_size)
    # One source is read before its bar opens, so the bar starts with its total and ETA.
    first = _read_resumable(w, sources[0], unit) if len(sources) == 1 else None
    total = len(first) if first is not None else _count(sources)
    with bar(total=total, desc=f"ingest {corpus}", unit="frag", disable=not progress) as meter:
        w.bar = meter
        for src in sources:
            w.add(first if first is not None else _read_resumable(w, src, unit))
        delete = sorted(set(stored) - set(w.seen)) if prune else []
        if delete and not w.seen and not replace:
            raise CorpusReplaceError(
                f"corpus {corpus!r}: the source has no fragments, so this ingest would remove all "
                f"{len(delete)} stored fragments; pass --replace to empty the corpus"
            )
        w.flush(delete, last=True)
    if w.written or w.deleted:
        store.vacuum(conn)
        # a kind group that grew past LARGE_GROUP_ROWS gets the larger graph (`db.fit_graphs`)
        fit_graphs(conn, embedder.id, embedder.dim)
    return IngestReport(
        corpus, embedder.id, len(w.seen), w.written, w.skipped, w.deleted, len(sources), hidden
    )


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
    replace: bool = False,
) -> IngestReport:
    """Ingest one stream of fragments as one all-or-nothing source of corpus `corpus`."""
    source = Source(origin or corpus, cache(lambda: tuple(frags)))
    return ingest_sources(
        conn,
        [source],
        corpus,
        embedder,
        origin=origin or None,
        replace=replace,
        prune=prune,
        progress=progress,
        batch_size=batch_size,
    )


def ingest_corpus(
    conn: psycopg.Connection,
    name_or_path: str,
    embedder: Embedder,
    *,
    corpus: str | None = None,
    lang: str = "en",
    progress: bool = True,
    replace: bool = False,
    max_source_bytes: int = DEFAULT_MAX_SOURCE_BYTES,
    batch_size: int = 64,
) -> IngestReport:
    """Ingest a built-in corpus by name, or the files at a path as corpus `corpus` (default: stem).

    Each file of a folder is one source; `max_source_bytes` caps the size of each file.
    """
    readers = demo_readers()
    if name_or_path in readers:
        if corpus is not None and corpus != name_or_path:
            raise ConfigError(
                f"--name {corpus!r} cannot rename the built-in corpus {name_or_path!r}: a built-in "
                "build is stored under its own name (use --name only with a path)"
            )
        src = Source(f"built-in corpus {name_or_path}", readers[name_or_path])
        origin = BUILTIN_PREFIX + name_or_path
        return ingest_sources(
            conn,
            [src],
            name_or_path,
            embedder,
            origin=origin,
            replace=replace,
            progress=progress,
            batch_size=batch_size,
        )
    path = Path(name_or_path)
    if not path.exists() and not path.is_symlink():
        raise InputError(path, "-", f"no such corpus or path (built-in: {', '.join(readers)})")
    name = corpus or path.absolute().stem
    if not name or name.startswith("."):
        raise ConfigError(f"cannot name a corpus after {path}: give it a name with --name")
    listing = list_sources(path, max_source_bytes)
    sources = [Source(str(f.path), partial(file_fragments, f, name, lang)) for f in listing.files]
    return ingest_sources(
        conn,
        sources,
        name,
        embedder,
        origin=str(path.resolve()),
        replace=replace,
        progress=progress,
        batch_size=batch_size,
        unit="file",
        hidden=listing.hidden,
    )
