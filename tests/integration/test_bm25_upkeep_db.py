"""The BM25 index's upkeep (`store.bm25`, `store.bm25_folders`) on real PostgreSQL: an unreadable
index is rebuilt with one warning line and the question answered; the ingest builds and prunes, so
re-ingests leave one copy; partial folders of killed builders go while a live builder's stays; a
question only reads (a read-only session answers, no stamp written); a corpus without fragments
gets neither stamp nor index."""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citegate.core.fragments import Fragment
from citegate.pipeline import lanes
from citegate.store import bm25, db
from citegate.store import bm25_folders as folders
from citegate.store.ingest import ingest
from citegate.store.tables import drop_corpus

pytestmark = pytest.mark.db

QUESTION = "Why does the river carry the golden lotus?"
TEXTS = [
    "The river carries the golden lotus to the sea.",
    "A lotus grows in the mud of the river bank.",
    "Golden light falls on the temple at dawn.",
    "Река несёт золотой лотос к морю.",
    "Nothing here matches the question at all.",
]


class HashEmbedder:
    """A deterministic 8-dimensional embedder (sha256 of the text): ingests need vectors, these
    tests only look at the lexical lane."""

    id = "bm25-upkeep-hash"
    dim = 8

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim) + 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts)


def frags(corpus: str, texts: Sequence[str]) -> list[Fragment]:
    return [
        Fragment(f"{corpus}-{i}", corpus, "verse", corpus, t, "en", addr_label=f"{corpus} {i}")
        for i, t in enumerate(texts)
    ]


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private BM25 index root (`bm25.index_root`) for the test, and no index opened before."""
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    bm25._open.cache_clear()
    yield bm25.index_root()
    bm25._open.cache_clear()


def ask(conn: psycopg.Connection, corpora: Sequence[str], k: int = 5) -> list[int]:
    return [
        h.fragment_id for h in lanes.lexical(conn, QUESTION, HashEmbedder.id, corpora, k, 0, "bm25")
    ]


def published(root: Path) -> list[str]:
    return [p.name for p in folders.published(root)]


def test_an_unreadable_index_is_rebuilt_with_one_line_and_the_question_answered(
    conn: psycopg.Connection, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ingest(conn, frags("lotus", TEXTS), "lotus", HashEmbedder(), progress=False)
    want = ask(conn, ["lotus"])
    assert want and len(published(root)) == 1
    (key,) = published(root)
    segment = next(f for f in (root / key).iterdir() if f.suffix == ".fieldnorm")
    damages = {
        "meta.json garbage": lambda: (root / key / "meta.json").write_bytes(b"\x00garbage{"),
        "a flipped byte": lambda: segment.write_bytes(
            bytes([segment.read_bytes()[0] ^ 0x5A]) + segment.read_bytes()[1:]
        ),
        "a missing file": lambda: segment.unlink(),
        "no manifest": lambda: (root / key / folders.MANIFEST).unlink(),
    }
    for what, damage in damages.items():
        bm25._open.cache_clear()  # as a new process finds it (and no mapping of the files
        gc.collect()  # is left: rewriting a mapped file in place kills its reader with SIGBUS)
        segment = next(f for f in (root / key).iterdir() if f.suffix == ".fieldnorm")
        damage()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="citegate.store.bm25"):
            assert ask(conn, ["lotus"]) == want, what
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1 and "\n" not in lines[0], (what, lines)
        assert f"BM25 index {root / key} is unreadable" in lines[0] and "rebuilding" in lines[0]
        assert "garbage" not in lines[0]  # the damaged bytes are not echoed
        assert published(root) == [key], what  # rebuilt in place, nothing left beside it
        folders.verify(root / key)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="citegate.store.bm25"):
        assert ask(conn, ["lotus"]) == want
    assert caplog.records == []


def test_re_ingests_leave_one_index_built_by_the_ingest_and_a_removed_corpus_none(
    conn: psycopg.Connection, root: Path
) -> None:
    emb = HashEmbedder()
    ingest(conn, frags("lotus", TEXTS), "lotus", emb, progress=False)
    ingest(
        conn, frags("other", ["The golden river of another corpus."]), "other", emb, progress=False
    )
    ask(conn, ["lotus"])
    ask(conn, ["lotus", "other"])
    assert len(published(root)) == 2
    for i in range(3):
        texts = [*TEXTS[:-1], f"A golden lotus edition {i}."]
        ingest(conn, frags("lotus", texts), "lotus", emb, progress=False)
        sets = bm25.stamped_sets(conn, emb.id, ["lotus", "other"])
        # the ingest built both searched sets for the new rows and pruned the old ones
        assert sorted(published(root)) == sorted(
            [bm25.index_key(emb.id, {"lotus": sets["lotus"]}), bm25.index_key(emb.id, sets)]
        ), i
        fid = conn.execute("SELECT id FROM fragments WHERE frag_key = 'lotus-4'").fetchone()[0]
        assert fid in ask(conn, ["lotus"], 10)
        assert len(published(root)) == 2  # the question found the index, built nothing
    drop_corpus(conn, emb.id, "other")
    pruned = bm25.prune(conn)
    assert len(pruned.stale) == 1 and published(root) == [
        bm25.index_key(emb.id, bm25.stamped_sets(conn, emb.id, ["lotus"]))
    ]


HOLDER = """
import sys, time
from pathlib import Path
from citegate.store import bm25_folders as folders
with folders.private_folder(Path(sys.argv[1]), sys.argv[2]) as tmp:
    (tmp / "meta.json").write_text("half an index")
    print(tmp.name, flush=True)
    time.sleep(120)
"""


def _builder(root: Path, key: str) -> tuple[subprocess.Popen, str]:
    """A process holding a build's private folder, as a builder does mid-build."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), key], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def test_partial_folders_of_killed_builders_are_pruned_and_a_live_builders_kept(
    conn: psycopg.Connection, root: Path
) -> None:
    ingest(conn, frags("lotus", TEXTS), "lotus", HashEmbedder(), progress=False)
    want = ask(conn, ["lotus"])
    (key,) = published(root)
    killed, killed_name = _builder(root, key)
    live, live_name = _builder(root, key)
    try:
        killed.kill()  # SIGKILL: no cleanup runs
        killed.wait()
        assert (root / killed_name).is_dir()
        old = root / f".{key}.q1w2e3r4"  # an older format's partial folder (no lock file)
        old.mkdir()
        (old / "meta.json").write_text("{}")
        fresh = root / f".{key}.a5s6d7f8"
        fresh.mkdir()
        hours_ago = time.time() - 2 * folders.LEGACY_PARTIAL_AGE
        for p in (old / "meta.json", old):
            os.utime(p, (hours_ago, hours_ago))
        pruned = bm25.prune(conn)
        assert sorted(pruned.partial) == sorted([killed_name, old.name])
        assert not (root / killed_name).exists()
        assert not (root / (killed_name + folders.LOCK_SUFFIX)).exists()
        assert (root / live_name).is_dir() and fresh.is_dir()
        assert pruned.stale == () and published(root) == [key]
        assert ask(conn, ["lotus"]) == want
    finally:
        live.kill()
        live.wait()
    assert bm25.prune(conn).partial == (live_name,)


def test_a_question_only_reads_and_answers_on_a_read_only_session(
    conn: psycopg.Connection, fresh_db: str, root: Path
) -> None:
    emb = HashEmbedder()
    ingest(conn, frags("lotus", TEXTS), "lotus", emb, progress=False)
    conn.execute("DELETE FROM fragment_stamps")  # as a build ingested before stamps existed
    assert published(root) == []
    with psycopg.connect(fresh_db, autocommit=True) as replica:
        replica.execute("SET default_transaction_read_only = on")
        got = ask(replica, ["lotus"])
        assert got and got == ask(replica, ["lotus"])
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            replica.execute("DELETE FROM fragment_stamps")  # the session really is read-only
    assert conn.execute("SELECT count(*) FROM fragment_stamps").fetchone()[0] == 0
    assert len(published(root)) == 1
    # an unreadable index is rebuilt from the read-only session too
    bm25._open.cache_clear()
    gc.collect()
    (root / published(root)[0] / "meta.json").write_text("broken")
    with psycopg.connect(fresh_db, autocommit=True) as replica:
        replica.execute("SET default_transaction_read_only = on")
        assert ask(replica, ["lotus"]) == got


def test_a_corpus_without_fragments_gets_no_stamp_and_no_index(
    conn: psycopg.Connection, root: Path
) -> None:
    emb = HashEmbedder()
    db.ensure_embedder(conn, emb.id, emb.dim)
    assert ask(conn, ["nosuchcorpus"]) == []
    assert bm25.search(conn, [QUESTION], [5], emb.id, ["nosuchcorpus"]) == [[]]
    assert bm25.build(conn, emb.id, ["nosuchcorpus"]).key == ""
    assert conn.execute("SELECT count(*) FROM fragment_stamps").fetchone()[0] == 0
    assert not root.exists() or published(root) == []
    ingest(conn, frags("lotus", TEXTS), "lotus", emb, progress=False)
    # a searched set with an empty corpus is served by the index of the builds that hold any
    assert ask(conn, ["lotus", "nosuchcorpus"]) == ask(conn, ["lotus"])
    (key,) = published(root)
    manifest = json.loads((root / key / folders.MANIFEST).read_text(encoding="utf-8"))
    assert list(manifest["sets"]) == ["lotus"]
    stamped = conn.execute("SELECT corpus FROM fragment_stamps").fetchall()
    assert stamped == [("lotus",)]


BUILDER = """
import sys
from citegate.store import bm25, db
with db.connect(sys.argv[1], migrate_schema=False) as conn:
    print(bm25.build(conn, sys.argv[2], ["lotus"]).key, flush=True)
"""


def test_three_builders_at_once_leave_one_index_and_no_partial_folder(
    conn: psycopg.Connection, fresh_db: str, root: Path
) -> None:
    emb = HashEmbedder()
    ingest(conn, frags("lotus", TEXTS), "lotus", emb, progress=False)
    env = {**os.environ, "CITEGATE_VAR": str(root.parents[1])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILDER, fresh_db, emb.id],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert keys == {bm25.index_key(emb.id, bm25.stamped_sets(conn, emb.id, ["lotus"]))}
    assert published(root) == list(keys) and sorted(os.listdir(root)) == list(keys)
    folders.verify(root / keys.pop())
    assert ask(conn, ["lotus"])
