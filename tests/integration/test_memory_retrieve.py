"""Curated memory in the real retrieval (PostgreSQL, the bundled embedder): a question echoing a
pinned note's body finds it, takes the lean policy and cites it; a memory note is never among
the notes nor cited; boost raises what it cites; `citegate ask` shows what memory did.

Its own database (the gita build and a handful of notes), so the notes never reach the shared
demo database other tests retrieve from."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from citegate.cli import main
from citegate.core.config import DESIGN
from citegate.core.types import NOTE_KIND, GateKind, NoteRole, Policy
from citegate.corpus.notes import read_notes
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline.retrieve import retrieve
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.turn import answer_turn
from citegate.store import db
from citegate.store.ingest import ingest_corpus
from citegate.store.memory import import_notes

pytestmark = pytest.mark.db

NOTES = textwrap.dedent(
    """\
    format: citegate-notes/1
    corpus: gita
    notes:
      - key: soul-changes-bodies
        kind: pinned
        lang: en
        triggers: [what happens to the soul at death]
        body: >-
          As a person discards worn-out garments and puts on new ones, the embodied self
          leaves worn-out bodies and enters others that are new. The self is never born and
          never dies; weapons do not cut it and fire does not burn it.
        cites: [BG 2.22, BG 2.23]
        author: test editors
        date: "2026-01-01"
      - key: devotion-path
        kind: boost
        lang: en
        triggers: [devotion as the easiest path to Krishna]
        body: Verses 12.2 and 9.22 are the primary sources on loving devotion.
        cites: [BG 12.2, BG 9.22]
        author: test editors
        date: "2026-01-01"
      - key: battlefield-setting
        kind: memory
        lang: en
        triggers: [where does the Gita take place]
        body: The Gita is a dialogue between Krishna and Arjuna on the battlefield of Kurukshetra.
        cites: []
        author: test editors
        date: "2026-01-01"
    """
)
BODY_ECHO = "Like changing old clothes for new ones, what does the embodied one do with its bodies?"


@pytest.fixture(scope="module")
def memory_db(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database holding the gita build and the three notes above."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "memory_demo" WITH (FORCE)')
        admin.execute('CREATE DATABASE "memory_demo"')
    url = pg_url.replace("/postgres?", "/memory_demo?")
    path = tmp_path_factory.mktemp("notes") / "notes.yaml"
    path.write_text(NOTES, encoding="utf-8")
    emb = default_embedder()
    with db.connect(url) as conn:
        ingest_corpus(conn, "gita", emb, progress=False)
        import_notes(conn, read_notes(path), emb)
    return url


@pytest.fixture()
def mconn(memory_db: str) -> Iterator[psycopg.Connection]:
    with db.connect(memory_db) as c:
        yield c


@pytest.fixture(scope="module")
def emb():  # noqa: ANN201
    return default_embedder()


def _cfg(emb, **kw):  # noqa: ANN001, ANN202
    return DESIGN.replace(**{"embedder": emb.id, "memory": True, "memory_threshold": 0.86, **kw})


def test_a_question_echoing_a_pinned_body_goes_lean_and_leads_with_the_note(
    mconn: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    res = retrieve(mconn, BODY_ECHO, _cfg(emb), emb, CosineReranker())
    assert res.memory is not None and res.memory.policy == Policy.LEAN, res.memory
    first = res.notes[0]
    assert first.kind == NOTE_KIND and first.addr_label == "note:soul-changes-bodies"
    labels = [c.addr_label for c in res.notes]
    assert "BG 2.22" in labels and "BG 2.23" in labels  # the verses it cites
    assert res.decision == "answer" and res.decided_by.kind == GateKind.MEMORY
    assert res.trace.collection["max_fanout_rounds"] == 1  # one shallow round
    assert res.memory.keys(NoteRole.CITED) == ("soul-changes-bodies",)


def test_the_wide_policy_keeps_the_pinned_note_and_searches_deeper(
    mconn: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    res = retrieve(mconn, BODY_ECHO, _cfg(emb), emb, CosineReranker(), policy=Policy.WIDE)
    assert res.notes[0].addr_label == "note:soul-changes-bodies"
    assert res.trace.collection["max_fanout_rounds"] == 2
    assert "asked for" in res.memory.reason


def test_an_unrelated_question_stays_wide_and_no_note_is_among_its_notes(
    mconn: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    res = retrieve(mconn, "How do I bake sourdough bread?", _cfg(emb), emb, CosineReranker())
    assert res.memory.policy == Policy.WIDE
    assert all(c.kind != NOTE_KIND for c in res.notes)


def test_a_memory_note_is_framing_never_a_note_or_a_citation(
    mconn: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    cfg = _cfg(emb, memory_threshold=0.80)
    q = "Where does the dialogue between Krishna and Arjuna take place?"
    res = retrieve(mconn, q, cfg, emb, CosineReranker())
    assert "battlefield-setting" in res.memory.keys(NoteRole.FRAMING)
    assert all("battlefield-setting" not in (c.addr_label or "") for c in res.notes)
    with RoleClients(cfg) as roles:
        turn = answer_turn(mconn, q, cfg, emb, CosineReranker(), roles, enable_fallback=False)
    assert "battlefield-setting" not in turn.text
    cited = {n for v in (turn.check.verdicts if turn.check else ()) for n in v.cited}
    shown = turn.notes[: len(turn.notes)]
    assert all(shown[int(n) - 1].kind != NOTE_KIND or
               shown[int(n) - 1].addr_label != "note:battlefield-setting" for n in cited)  # fmt: skip


def test_boost_raises_the_rerank_score_of_what_it_cites(mconn: psycopg.Connection, emb) -> None:  # noqa: ANN001
    q = "Are those who fix their minds on Krishna with supreme faith the best in yoga?"
    plain = retrieve(mconn, q, _cfg(emb, boost_threshold=0.5), emb, CosineReranker())
    boosted = retrieve(
        mconn, q, _cfg(emb, boost_threshold=0.5, memory_boost=0.5), emb, CosineReranker()
    )
    assert "devotion-path" in boosted.memory.keys(NoteRole.BOOST)
    before = {c.fragment_id: c.rerank_score for c in plain.trace.candidates}
    raised = [c for c in boosted.trace.candidates if c.addr_label in ("BG 12.2", "BG 9.22")]
    assert raised and all(c.rerank_score == pytest.approx(before[c.fragment_id] + 0.5)
                          for c in raised)  # fmt: skip


def test_memory_off_leaves_retrieval_as_it_was(mconn: psycopg.Connection, emb) -> None:  # noqa: ANN001
    res = retrieve(mconn, BODY_ECHO, _cfg(emb, memory=False), emb, CosineReranker())
    assert res.memory is None and all(c.kind != NOTE_KIND for c in res.notes)


def test_ask_answers_through_the_pinned_note_and_shows_what_memory_did(
    memory_db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("DATABASE_URL", memory_db)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        f"embedder: {default_embedder().id}\nmemory: true\nmemory_threshold: 0.86\n",
        encoding="utf-8",
    )
    assert main(["ask", BODY_ECHO, "--config", str(cfg), "--answer"]) == 0
    out = capsys.readouterr().out
    assert "memory: lean policy" in out and "note soul-changes-bodies [pinned] cited" in out
    assert "note:soul-changes-bodies" in out.split("answer", 1)[-1]
