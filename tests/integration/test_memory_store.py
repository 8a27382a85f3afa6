"""Curated notes in PostgreSQL (`store.memory`): import all or nothing, refusals that leave the
database as it was, --replace, list/show/remove, and the curated-note lane (the command line:
test_memory_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from conftest import fingerprint, notes_yaml, write_file

from citegate.core.errors import EmptyCorpus, InputError
from citegate.corpus.notes import read_notes
from citegate.models.embed import default_embedder
from citegate.store import db
from citegate.store.memory import (
    get_note,
    import_notes,
    list_notes,
    note_hits,
    notes_digest,
    remove_notes,
)

pytestmark = pytest.mark.db


def test_import_writes_notes_and_their_units_and_an_identical_reimport_writes_nothing(
    tiny: tuple[str, str], tmp_path: Path
) -> None:
    url, label = tiny
    nf = read_notes(write_file(tmp_path, notes_yaml(label)))
    emb = default_embedder()
    with db.connect(url) as conn:
        rep = import_notes(conn, nf, emb)
        assert (rep.written, rep.unchanged, rep.units) == (2, False, 5)  # 3 triggers + 2 bodies
        dims = conn.execute("SELECT DISTINCT vector_dims(embedding) FROM curated_note_units")
        assert [r[0] for r in dims] == [384]
        digest = notes_digest(conn, ["tiny"], emb.id)
        again = import_notes(conn, nf, emb)
        assert again.unchanged and notes_digest(conn, ["tiny"], emb.id) == digest
        assert [n.key for n in list_notes(conn, "tiny")] == ["eternal-self", "setting"]
        assert get_note(conn, "tiny", "setting").kind == "memory"


def test_the_notes_lane_ranks_by_best_unit_and_says_which_unit(
    tiny: tuple[str, str], tmp_path: Path
) -> None:
    url, label = tiny
    emb = default_embedder()
    with db.connect(url) as conn:
        import_notes(conn, read_notes(write_file(tmp_path, notes_yaml(label))), emb)
        hits = note_hits(conn, emb.embed_queries(["does the soul die"])[0], emb.id, ["tiny"])
        assert hits[0].note.key == "eternal-self" and hits[0].via == "trigger"
        assert hits[0].similarity == pytest.approx(1.0, abs=1e-4)
        assert hits[0].similarity >= hits[1].similarity
        assert hits[0].body_similarity < hits[0].trigger_similarity
        assert note_hits(conn, emb.embed_queries(["x"])[0], emb.id, ["other"]) == []


def test_a_cite_the_corpus_lacks_is_refused_naming_file_and_record_and_nothing_changes(
    tiny: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = tiny
    before = fingerprint(url)
    nf = read_notes(write_file(tmp_path, notes_yaml("BG 9.99")))
    with db.connect(url) as conn, pytest.raises(InputError) as err:
        import_notes(conn, nf, default_embedder())
    assert "notes.yaml: record 1 (eternal-self): cites 'BG 9.99'" in str(err.value)
    assert fingerprint(url) == before


def test_an_empty_corpus_is_refused(cli_db: str, tmp_path: Path) -> None:
    nf = read_notes(write_file(tmp_path, notes_yaml("A")))
    with db.connect(cli_db) as conn, pytest.raises(EmptyCorpus):
        import_notes(conn, nf, default_embedder())


def test_changed_content_or_another_source_needs_replace(
    tiny: tuple[str, str], tmp_path: Path
) -> None:
    url, label = tiny
    emb = default_embedder()
    with db.connect(url) as conn:
        import_notes(conn, read_notes(write_file(tmp_path, notes_yaml(label))), emb)
    before = fingerprint(url)
    changed = read_notes(write_file(tmp_path, notes_yaml(label, "The self is eternal.")))
    other = read_notes(write_file(tmp_path, notes_yaml(label), "other.yaml"))
    with db.connect(url) as conn:
        with pytest.raises(InputError, match="1 notes changed, 0 gone.*--replace"):
            import_notes(conn, changed, emb)
        with pytest.raises(InputError, match="record 1 .eternal-self.: the key is stored from"):
            import_notes(conn, other, emb)
    assert fingerprint(url) == before
    with db.connect(url) as conn:
        rep = import_notes(conn, other, emb, replace=True)
        assert (rep.written, rep.replaced, rep.removed) == (2, 2, 0)
        assert {n.source for n in list_notes(conn, "tiny")} == {str(other.path.resolve())}


def test_replace_removes_notes_gone_from_the_file(tiny: tuple[str, str], tmp_path: Path) -> None:
    url, label = tiny
    emb = default_embedder()
    one = notes_yaml(label).split("  - key: setting")[0]
    with db.connect(url) as conn:
        import_notes(conn, read_notes(write_file(tmp_path, notes_yaml(label))), emb)
        rep = import_notes(conn, read_notes(write_file(tmp_path, one)), emb, replace=True)
        assert (rep.written, rep.replaced, rep.removed) == (1, 1, 1)
        assert [n.key for n in list_notes(conn)] == ["eternal-self"]
        units = conn.execute("SELECT count(*) FROM curated_note_units").fetchone()[0]
        assert units == 3  # the removed note's units went with it


def test_replace_of_one_notes_file_keeps_the_notes_of_another_of_the_same_name(
    tiny: tuple[str, str], tmp_path: Path
) -> None:
    url, label = tiny
    emb = default_embedder()
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    a = read_notes(write_file(tmp_path / "a", notes_yaml(label)))
    text = notes_yaml(label).replace("eternal-self", "self-b").replace("key: setting", "key: b")
    b = read_notes(write_file(tmp_path / "b", text))
    assert a.source != b.source
    with db.connect(url) as conn:
        import_notes(conn, a, emb)
        assert import_notes(conn, b, emb).written == 2  # b's file is not a's file changed
        one = read_notes(write_file(tmp_path / "b", text.split("  - key: b")[0]))
        rep = import_notes(conn, one, emb, replace=True)
        assert (rep.written, rep.replaced, rep.removed) == (1, 1, 1)
        by_source = {(n.key, n.source) for n in list_notes(conn, "tiny")}
        assert by_source == {
            ("eternal-self", a.source), ("setting", a.source), ("self-b", b.source)
        }  # fmt: skip


def test_remove_by_key_or_source_and_an_unknown_key_removes_nothing(
    tiny: tuple[str, str], tmp_path: Path
) -> None:
    url, label = tiny
    with db.connect(url) as conn:
        import_notes(conn, read_notes(write_file(tmp_path, notes_yaml(label))), default_embedder())
        with pytest.raises(InputError, match="no note of that key"):
            remove_notes(conn, "tiny", ["setting", "nope"])
        assert len(list_notes(conn)) == 2
        assert remove_notes(conn, "tiny", ["setting"]) == 1
        source = str((tmp_path / "notes.yaml").resolve())
        assert remove_notes(conn, "tiny", source=source) == 1
        assert list_notes(conn) == []


def test_control_and_bidi_characters_are_stored_as_written(
    tiny: tuple[str, str], tmp_path: Path
) -> None:
    """Only their display is escaped (`core.terminal.visible`): the stored note keeps them."""
    url, label = tiny
    body = "The self \u202eis\u200b never \x1b[2J\x07born\x9b \u2066and\u2069\ufeff dies."
    text = notes_yaml(label).replace(
        "body: The self is never born and never dies.", f"body: {json.dumps(body)}"
    )
    with db.connect(url) as conn:
        import_notes(conn, read_notes(write_file(tmp_path, text)), default_embedder())
        assert get_note(conn, "tiny", "eternal-self").body == body
        stored = conn.execute("SELECT text FROM curated_note_units WHERE unit = 'body'").fetchall()
        assert (body,) in stored


def test_migration_refuses_an_old_attributions_table_that_holds_rows(fresh_db: str) -> None:
    """A database migrated to 007 whose old `attributions` table someone wrote is refused at
    008, and the row is still there."""
    from citegate.core import paths

    with psycopg.connect(fresh_db, autocommit=True) as c:
        c.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        c.execute("CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at "
                  "timestamptz NOT NULL DEFAULT now())")  # fmt: skip
        for f in sorted(paths.MIGRATIONS.glob("00[1-7]_*.sql")):
            c.execute(f.read_text(encoding="utf-8"))
            c.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (f.stem,))
        c.execute("INSERT INTO attributions (mode, topic, corpus, addr_label, created_by) "
                  "VALUES ('pinned', 't', 'gita', 'BG 2.13', 'someone')")  # fmt: skip
    with (
        pytest.raises(psycopg.errors.RaiseException, match="attributions holds rows"),
        db.connect(fresh_db),
    ):
        pass
    with psycopg.connect(fresh_db) as c:
        assert c.execute("SELECT count(*) FROM attributions").fetchone()[0] == 1


def test_migration_009_renames_the_note_tables_and_keeps_every_row(fresh_db: str) -> None:
    """A database at 008 holding a note and its unit: after 009 the same rows (same ids) are in
    `curated_notes` and `curated_note_units`, a new note takes the next id, and no table,
    sequence, index or constraint keeps the name `attribution`."""
    from citegate.core import paths

    with psycopg.connect(fresh_db, autocommit=True) as c:
        c.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        c.execute("CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at "
                  "timestamptz NOT NULL DEFAULT now())")  # fmt: skip
        for f in sorted(paths.MIGRATIONS.glob("00[1-8]_*.sql")):
            c.execute(f.read_text(encoding="utf-8"))
            c.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (f.stem,))
        c.execute("INSERT INTO embedders (id, dim) VALUES ('e', 2)")
        note_id = c.execute(
            "INSERT INTO attributions (note_key, corpus, kind, lang, triggers, body, cites, "
            "author, written, source, content_hash) VALUES ('k', 'gita', 'pinned', 'en', "
            "'{a trigger}', 'a body', '{BG 2.13}', 'editors', '2026-01-01', 'f.yaml', %s) "
            "RETURNING id",
            ("0" * 64,),
        ).fetchone()[0]
        c.execute(
            "INSERT INTO attribution_units (attribution_id, unit, ord, text, embedder_id, dim, "
            "embedding) VALUES (%s, 'trigger', 0, 'a trigger', 'e', 2, '[1,0]')",
            (note_id,),
        )
    with db.connect(fresh_db) as conn:
        row = conn.execute("SELECT id, note_key, body FROM curated_notes").fetchall()
        assert row == [(note_id, "k", "a body")]
        units = conn.execute("SELECT note_id, text FROM curated_note_units").fetchall()
        assert units == [(note_id, "a trigger")]
        new_id = conn.execute(
            "INSERT INTO curated_notes (note_key, corpus, kind, lang, triggers, body, cites, "
            "author, written, source, content_hash) VALUES ('k2', 'gita', 'memory', 'en', "
            "'{t}', 'b', '{}', 'editors', '2026-01-01', 'f.yaml', %s) RETURNING id",
            ("1" * 64,),
        ).fetchone()[0]
        assert new_id > note_id
        names = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "UNION ALL SELECT conname FROM pg_constraint "
            "WHERE connamespace = 'public'::regnamespace"
        ).fetchall()
        assert not [n for (n,) in names if "attribution" in n]
        assert {"curated_notes_pkey", "curated_note_units_note_id_fkey"} <= {n for (n,) in names}
