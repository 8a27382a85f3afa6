"""Schema, constraints and indexes against a real PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citegate.cli import main
from citegate.core.errors import DatabaseError
from citegate.core.fragments import Fragment
from citegate.core.types import KIND_GROUPS
from citegate.pipeline import lanes
from citegate.store import db, tables
from citegate.store.tables import write_batch

pytestmark = pytest.mark.db
EMB = "test/emb-4"


def frag(key: str, **kw: object) -> Fragment:
    base = dict(
        key=key,
        corpus="c",
        kind="verse",
        source_id="s",
        text=f"text {key}",
        lang="en",
        addr_label=f"BG {key}",
    )
    base.update(kw)
    return Fragment(**base)  # type: ignore[arg-type]


def unit(rows: list[list[float]]) -> np.ndarray:
    a = np.array(rows, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_migrations_apply_once(conn: psycopg.Connection) -> None:
    assert db.migrate(conn) == []  # already applied by connect()
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert versions == [p.stem for p in db.migration_files()]


def test_extensions_and_russian_config(conn: psycopg.Connection) -> None:
    facts = db.server_facts(conn)
    assert facts["vector"].startswith("0.8") and "pg_trgm" in facts
    assert facts["russian_config"] == "present"


@pytest.mark.parametrize(
    ("kw", "constraint"),
    [
        (dict(kind="track_transcript", addr_label=None), "transcript_has_span"),
        (dict(kind="track_transcript", track_id="t", start_ms=5000, end_ms=5000), "span_ordered"),
        (dict(kind="track_transcript", track_id="t", start_ms=5000, end_ms=10), "span_ordered"),
        (dict(kind="sermon"), "fragments_kind_check"),
        (dict(text="   "), "fragments_text_check"),
        (dict(addr_label=None), "library_has_address"),
        (dict(track_id="t", start_ms=0, end_ms=10), "transcript_has_span"),
    ],
)
def test_constraints_reject_invalid_rows(
    conn: psycopg.Connection,
    kw: dict,
    constraint: str,
) -> None:
    db.ensure_embedder(conn, EMB, 4)
    bad = frag("1.1", **kw)
    with pytest.raises(psycopg.errors.CheckViolation, match=constraint):
        write_batch(conn, [bad], unit([[1, 0, 0, 0]]), EMB)
    assert conn.execute("SELECT count(*) FROM fragments").fetchone()[0] == 0


def test_vectors_of_two_embedders_never_mix(conn: psycopg.Connection) -> None:
    db.ensure_embedder(conn, EMB, 4)
    db.ensure_embedder(conn, "test/emb-3", 3)
    write_batch(conn, [frag("1.1")], unit([[1, 0, 0, 0]]), EMB)
    write_batch(conn, [frag("1.1")], unit([[1, 0, 0]]), "test/emb-3")
    # a 3-d vector under the 4-d embedder: rejected by its index cast or by the dim check
    with pytest.raises((psycopg.errors.CheckViolation, psycopg.errors.DataException)):
        write_batch(conn, [frag("1.2")], unit([[1, 0, 0]]), EMB)
    with pytest.raises(ValueError, match="registered with dim 4"):
        db.ensure_embedder(conn, EMB, 5)
    idx = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'fragments_hnsw_%'"
        )
    }
    assert set(idx) == {*db.hnsw_index_names(EMB), *db.hnsw_index_names("test/emb-3")}
    verses = idx[db.hnsw_index_name(EMB, "verses")]
    assert "vector(4)" in verses and EMB in verses and "'{verse}'::text[]" in verses
    hits = lanes.dense(conn, unit([[1, 0, 0, 0]])[0], EMB, ["c"], "verses", 10)
    assert len(hits) == 1  # only the 4-d embedder's row


def test_a_larger_graph_is_built_with_its_parameters_and_the_default_with_none(
    conn: psycopg.Connection,
) -> None:
    db.ensure_embedder(conn, EMB, 4)
    db.ensure_embedder(conn, "test/emb-3", 3, db.HnswGraph(8, 32))
    db.ensure_embedder(conn, "test/emb-3", 3, db.HnswGraph(24, 100))  # kept: it exists
    opts = dict(
        conn.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname LIKE 'fragments_hnsw_%'"
        ).fetchall()
    )
    assert all(opts[n] is None for n in db.hnsw_index_names(EMB))
    assert all(opts[n] == ["m=8", "ef_construction=32"] for n in db.hnsw_index_names("test/emb-3"))
    write_batch(conn, [frag("1.1")], unit([[1, 0, 0]]), "test/emb-3")
    assert len(lanes.dense(conn, unit([[1, 0, 0]])[0], "test/emb-3", ["c"], "verses", 10)) == 1


@pytest.mark.parametrize(("m", "efc"), [(1, 64), (16, 20), (101, 400), (16, 1001)])
def test_a_graph_pgvector_would_refuse_is_refused_first(m: int, efc: int) -> None:
    with pytest.raises(ValueError, match="HNSW"):
        db.HnswGraph(m, efc)


def _hnsw_defs(conn: psycopg.Connection) -> dict[str, str]:
    rows = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'fragments_hnsw_%'"
    )
    return {r[0]: r[1] for r in rows}


def test_migration_006_replaces_the_embedder_wide_index_with_those_ensure_embedder_makes(
    conn: psycopg.Connection,
) -> None:
    """A database from before 006 (one HNSW index per embedder) gets exactly the per-group
    indexes a new database gets: same names, same predicates, and the old index dropped."""
    db.ensure_embedder(conn, EMB, 4)
    db.ensure_embedder(conn, "test/emb-3", 3)
    want = _hnsw_defs(conn)
    for name in want:
        conn.execute(f'DROP INDEX "{name}"')
    for eid, dim in ((EMB, 4), ("test/emb-3", 3)):
        conn.execute(
            f'CREATE INDEX "{db.legacy_hnsw_index_name(eid)}" ON fragments USING hnsw '
            f"((embedding::vector({dim})) vector_cosine_ops) WHERE embedder_id = '{eid}'"
        )
    conn.execute("DELETE FROM schema_migrations WHERE version = '006_hnsw_per_kind_group'")
    assert db.migrate(conn) == ["006_hnsw_per_kind_group"]
    assert _hnsw_defs(conn) == want


def test_each_kind_group_is_searched_through_its_own_index(conn: psycopg.Connection) -> None:
    """The planner proves the dense lane's WHERE implies its group's index predicate: with
    sequential scans and sorts off, each group's search is a scan of that group's index (if it
    could not prove it, the query would fail to find a plan or scan another index)."""
    db.ensure_embedder(conn, EMB, 4)
    transcript = {"addr_label": None, "track_id": "t", "start_ms": 0, "end_ms": 1}
    frags = [
        frag("1.1"),
        frag("1.2", kind="commentary"),
        frag("1.3", kind="track_transcript", **transcript),
    ]
    write_batch(conn, frags, unit([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]), EMB)
    for group in KIND_GROUPS:
        before = _group_scans(conn, db.hnsw_index_name(EMB, group))
        with conn.transaction():
            for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                conn.execute(f"SET LOCAL {setting} = off")
            hits = lanes.dense(conn, unit([[1, 1, 1, 0]])[0], EMB, ["c"], group, 10)
        assert len(hits) == 1, group
        assert _group_scans(conn, db.hnsw_index_name(EMB, group)) == before + 1, group


def _group_scans(conn: psycopg.Connection, name: str) -> int:
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = %s",
        (name,),
    ).fetchone()
    return int(row[0])


def test_fragment_reads_by_id_and_by_corpus(
    conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    db.ensure_embedder(conn, EMB, 4)
    vecs = unit([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]])
    write_batch(conn, [frag("1.1"), frag("1.2"), frag("1.3")], vecs, EMB)
    ids = [r[0] for r in conn.execute("SELECT id FROM fragments ORDER BY id")]
    whole = tables.fragment_texts(conn, [*ids, *ids, -1])
    assert whole == dict(zip(ids, ["text 1.1", "text 1.2", "text 1.3"], strict=True))
    monkeypatch.setattr(tables, "TEXTS_CHUNK", 2)  # more ids than one statement takes
    assert tables.fragment_texts(conn, reversed(ids)) == whole
    assert tables.fragment_texts(conn, []) == {}
    sets = tables.fragment_sets(conn, ["c", "none"], EMB)
    assert list(sets) == ["c", "none"] and sets["none"] == "0:" and sets["c"].startswith("3:")


def test_russian_stemming_and_iast_through_simple(conn: psycopg.Connection) -> None:
    db.ensure_embedder(conn, EMB, 4)
    frags = [
        frag("1.1", text="Кришна наставляет Арджуну о бессмертии души.", lang="ru"),
        frag("1.2", text="dharma-kṣhetre kuru-kṣhetre samavetā yuyutsavaḥ"),
    ]
    write_batch(conn, frags, unit([[1, 0, 0, 0], [0, 1, 0, 0]]), EMB)
    ru = lanes.lexical(conn, "душа бессмертна", EMB, ["c"], 5)  # other case forms of both words
    assert [h.fragment_id for h in ru] and ru[0].lane == "lexical"
    assert _key(conn, ru[0].fragment_id) == "1.1"
    iast = lanes.lexical(conn, "kṣhetre yuyutsavaḥ", EMB, ["c"], 5)
    assert [_key(conn, h.fragment_id) for h in iast] == ["1.2"]
    lexemes = conn.execute("SELECT tsv_simple::text FROM fragments WHERE frag_key='1.2'").fetchone()
    assert "yuyutsavaḥ" in lexemes[0]


def _key(conn: psycopg.Connection, fid: int) -> str:
    return conn.execute("SELECT frag_key FROM fragments WHERE id=%s", (fid,)).fetchone()[0]


def test_hnsw_top_k_equals_exact_search_on_small_set(conn: psycopg.Connection) -> None:
    rng = np.random.default_rng(7)
    vecs = unit(rng.normal(size=(300, 16)).tolist())
    db.ensure_embedder(conn, "test/emb-16", 16)
    write_batch(conn, [frag(f"{i}") for i in range(300)], vecs, "test/emb-16")
    plan = conn.execute(
        "EXPLAIN SELECT id FROM fragments WHERE embedder_id = 'test/emb-16' "
        "AND kind = ANY ('{verse}'::text[]) "
        "ORDER BY embedding::vector(16) <=> %s::vector(16) LIMIT 10",
        (vecs[0],),
    ).fetchall()
    # the verses group's partial index is used
    assert db.hnsw_index_name("test/emb-16", "verses") in " ".join(r[0] for r in plan)
    for q in vecs[:20]:
        ann = [h.fragment_id for h in lanes.dense(conn, q, "test/emb-16", ["c"], "verses", 10)]
        exact = [
            h.fragment_id
            for h in lanes.dense(conn, q, "test/emb-16", ["c"], "verses", 10, exact=True)
        ]
        assert ann == exact


def test_mask_url_hides_password() -> None:
    assert db.mask_url("postgresql://u:s3cret@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert db.mask_url("postgresql://postgres:@/postgres?host=/tmp") == (
        "postgresql://postgres:***@/postgres?host=/tmp"
    )


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://u@h/db?password=secret", "postgresql://u@h/db?password=***"),
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:pa/ss@h:5432/db", "postgresql://u:***@h:5432/db"),
        (
            "postgres://u@h/db?sslmode=require&PASSWORD=secret&application_name=me@x",
            "postgres://u@h/db?sslmode=require&PASSWORD=***&application_name=me@x",
        ),
        ("postgresql://u@h/db?sslpassword=secret", "postgresql://u@h/db?sslpassword=***"),
        ("host=h user=u password=secret dbname=d", "host=h user=u password=*** dbname=d"),
        ("host=h password = 'se cret\\'x' dbname=d", "host=h password = *** dbname=d"),
        ("postgresql://h/db?host=/tmp", "postgresql://h/db?host=/tmp"),
    ],
)
def test_mask_url_hides_every_password_form(url: str, masked: str) -> None:
    assert db.mask_url(url) == masked
    assert "secret" not in db.mask_url(url) and "ss@" not in db.mask_url(url)


def test_dead_users_do_not_keep_the_embedded_server_running() -> None:
    folder = Path(tempfile.mkdtemp(prefix="citegate-pg-"))  # like conftest's pg_url, not tmp_path
    pgdata = folder / "pgdata"
    try:
        db.start_embedded(pgdata)  # initdb, as on a first `citegate` command
        db.stop_embedded(pgdata)
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()  # reaped: this pid belongs to no process now, like a command killed with -9
        (pgdata / db.HANDLE_FILE).write_text(json.dumps([dead.pid]), encoding="utf-8")
        url = db.start_embedded(pgdata)
        with psycopg.connect(url) as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
        assert json.loads((pgdata / db.HANDLE_FILE).read_text()) == [os.getpid()]
        db.stop_embedded(pgdata)
        assert not (pgdata / "postmaster.pid").exists()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=3).close()
    finally:
        _kill_server(pgdata)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_new_embedded_server_runs_with_the_machines_sizing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh server restarts once to take shared_buffers and the worker counts; a setting
    changed behind its back is put back on the next start, and read-only-at-start ones wait
    (reported) while another process uses the server."""
    from citegate.store import sizing

    machine = sizing.Machine(memory=4 * sizing.GB, cores=2)
    monkeypatch.setattr(sizing, "this_machine", lambda: machine)
    wanted = sizing.sized_settings(machine)
    folder = Path(tempfile.mkdtemp(prefix="citegate-pg-"))
    pgdata = folder / "pgdata"
    try:
        url = db.start_embedded(pgdata)
        with psycopg.connect(url, autocommit=True) as c:
            assert all(st.ok for st in sizing.states(c, wanted)), sizing.states(c, wanted)
            assert c.execute("SHOW shared_buffers").fetchone() == ("512MB",)
            c.execute("ALTER SYSTEM SET work_mem = '4MB'")
            c.execute("SELECT pg_reload_conf()")
        db.stop_embedded(pgdata)
        url = db.start_embedded(pgdata)
        with psycopg.connect(url, autocommit=True) as c:
            assert c.execute("SHOW work_mem").fetchone() == (wanted["work_mem"],)
            bigger = {**wanted, "shared_buffers": "640MB", "work_mem": "32MB"}
            (pgdata / db.HANDLE_FILE).write_text(json.dumps([os.getpid(), 1]), encoding="utf-8")
            assert db.size_embedded(db._SERVERS[str(pgdata.resolve())], pgdata) == []
            assert sizing.apply_sizing(c, bigger) == ["shared_buffers"]
            c.execute("SELECT 1")  # the reload reaches this connection between statements
            states = {st.name: st for st in sizing.states(c, bigger)}
            assert states["shared_buffers"].pending_restart and not states["shared_buffers"].ok
    finally:
        db.stop_embedded(pgdata)
        _kill_server(pgdata)
        shutil.rmtree(folder, ignore_errors=True)


def _kill_server(pgdata: Path) -> None:
    """Stop a server the test left running (only when the code under test failed to)."""
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists():
        os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)
        for _ in range(100):
            if not pid_file.exists():
                break
            time.sleep(0.1)


def test_doctor_never_prints_a_password(
    fresh_db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("DATABASE_URL", fresh_db + "&password=hunter2")  # trust auth ignores it
    assert main(["doctor"]) == 2  # a fresh database: production's corpus holds no fragments
    out, err = capsys.readouterr()
    assert "password=***" in out and "hunter2" not in out + err


def test_doctor_says_when_the_production_lexical_lane_is_slow_for_its_corpora(
    fresh_db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    assert main(["doctor"]) == 2  # a fresh database: production's corpus holds no fragments
    out = capsys.readouterr().out
    assert "lexical lane  production: postgres, unbudgeted, over 0 fragments" in out
    assert "warning:" not in out and "  problem: no fragments of gita" in out
    monkeypatch.setattr(lanes, "SLOW_LEXICAL_ROWS", 0)  # any size is "large" now
    assert main(["doctor"]) == 2
    assert "  warning: the unbudgeted PostgreSQL lane ranks every match" in capsys.readouterr().out


def test_an_unreachable_database_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once the socket closes
    monkeypatch.setenv("DATABASE_URL", f"postgresql://u:s3cretpw@127.0.0.1:{port}/db")
    with (
        pytest.raises(DatabaseError, match="cannot connect to postgresql://u:\\*\\*\\*@"),
        db.connect(),
    ):
        pass
    assert main(["doctor"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "s3cretpw" not in err and "Traceback" not in err
