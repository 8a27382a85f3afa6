"""A question that negates a pinned note's trigger is not answered by memory, in the real
retrieval (PostgreSQL, the bundled embedder): the embedder puts the negated echo as close to the
trigger as the echo itself, so the similarity alone would let the note answer the opposite
question.

Its own database (the gita build and the demo notes, `data/memory/gita-notes.yaml`), so the
notes never reach the shared demo database other tests retrieve from."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from citegate.core import paths
from citegate.core.config import DESIGN, PipelineConfig
from citegate.core.types import NOTE_KIND, GateKind, NoteRole, Policy
from citegate.corpus.notes import read_notes
from citegate.models.embed import Embedder, default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import memory
from citegate.pipeline.retrieve import retrieve
from citegate.store import db
from citegate.store.ingest import ingest_corpus
from citegate.store.memory import import_notes, note_hits

pytestmark = pytest.mark.db

ECHO = "What does Krishna say about the fruits of action?"
NEGATED = "Is it true that Krishna does NOT say anything about the fruits of action?"
# production's memory threshold (notebook 07's pre-check at precision >= 0.95)
THRESHOLD = 0.9252
DEMO_NOTES = paths.DATA / "memory" / "gita-notes.yaml"
# Negated echoes of the demo's pinned triggers (the trigger each echoes, then the question).
NEGATED_ECHOES = (
    ("can the soul be killed", "Is it true that the soul can NOT be killed?"),
    ("can the soul be killed", "can the soul not be killed"),
    ("is the atman indestructible", "is the atman not indestructible"),
    ("does the soul take a new body", "does the soul not take a new body"),
    ("does the soul take a new body", "Is it true that the soul does not take a new body?"),
    ("what happens to the soul when the body dies", "what does not happen to the soul when the body dies"),
    ("what does Krishna say about the fruits of action", NEGATED),
    ("what does Krishna say about the fruits of action", "what does Krishna not say about the fruits of action"),
    ("how does anger arise", "how does anger not arise"),
    ("where does rain come from according to the Gita", "where does rain not come from according to the Gita"),
    ("why does God incarnate", "why doesn't God incarnate"),
    ("when does Krishna come to earth", "when does Krishna never come to earth"),
    ("what does knowledge do to karma", "what does knowledge not do to karma"),
    ("how should one sit for meditation", "how should one not sit for meditation"),
    ("how to control the restless mind", "how not to control the restless mind"),
    ("is spiritual effort wasted if one falls short", "is spiritual effort not wasted if one falls short"),
    ("does the last thought decide the next life", "does the last thought not decide the next life"),
    ("what offering does Krishna accept", "what offering does Krishna not accept"),
    ("what is the final teaching of the Gita", "what is not the final teaching of the Gita"),
    ("who is a sthitaprajna", "who is not a sthitaprajna"),
    ("кто дорог Кришне", "кто не дорог Кришне"),
    ("что такое три гуны", "что не такое три гуны"),
    ("что Кришна говорит о терпении", "что Кришна не говорит о терпении"),
    ("какие бывают виды веры", "каких видов веры не бывает"),
)  # fmt: skip


@pytest.fixture(scope="module")
def negation_db(pg_url: str) -> str:
    """A database holding the gita build and the demo notes."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "memory_negation" WITH (FORCE)')
        admin.execute('CREATE DATABASE "memory_negation"')
    url = pg_url.replace("/postgres?", "/memory_negation?")
    emb = default_embedder()
    with db.connect(url) as conn:
        ingest_corpus(conn, "gita", emb, progress=False)
        import_notes(conn, read_notes(DEMO_NOTES), emb)
    return url


@pytest.fixture()
def nconn(negation_db: str) -> Iterator[psycopg.Connection]:
    with db.connect(negation_db) as c:
        yield c


@pytest.fixture(scope="module")
def emb() -> Embedder:
    return default_embedder()


def _cfg(emb: Embedder) -> PipelineConfig:
    """The design config with memory on at production's threshold."""
    return DESIGN.replace(embedder=emb.id, memory=True, memory_threshold=THRESHOLD)


def test_the_echo_of_the_trigger_is_answered_by_memory(
    nconn: psycopg.Connection, emb: Embedder
) -> None:
    res = retrieve(nconn, ECHO, _cfg(emb), emb, CosineReranker())
    assert res.memory is not None and res.memory.policy == Policy.LEAN
    assert res.decided_by is not None and res.decided_by.kind == GateKind.MEMORY
    assert res.notes[0].addr_label == "note:right-to-action-not-fruits"


def test_a_negated_echo_is_decided_by_the_configs_gate_not_by_memory(
    nconn: psycopg.Connection, emb: Embedder
) -> None:
    res = retrieve(nconn, NEGATED, _cfg(emb), emb, CosineReranker())
    assert res.memory is not None
    assert res.memory.best_pinned >= THRESHOLD  # the cosine alone would let memory answer
    assert res.memory.policy == Policy.WIDE and "negates its trigger" in res.memory.reason
    assert res.memory.keys(NoteRole.CITED) == ()
    assert res.decided_by is not None and res.decided_by.kind == GateKind.COVERAGE
    assert all(c.kind != NOTE_KIND for c in res.notes)
    assert res.trace.collection["max_fanout_rounds"] == 2  # the wide policy


def test_every_negated_echo_of_the_demo_triggers_reaches_the_threshold_yet_memory_stays_out(
    nconn: psycopg.Connection, emb: Embedder
) -> None:
    cfg = _cfg(emb)
    vectors = emb.embed_queries([q for _, q in NEGATED_ECHOES])
    for (trigger, question), qvec in zip(NEGATED_ECHOES, vectors, strict=True):
        hits = note_hits(nconn, qvec, emb.id, cfg.corpora)
        best = memory.best_pinned(hits)
        assert best is not None and best.unit == trigger, question
        assert best.similarity >= THRESHOLD, question  # the cosine alone would answer it
        assert memory.precheck(hits, THRESHOLD, question).answer is None, question
        assert memory.precheck(hits, THRESHOLD, trigger).answer is best  # the trigger itself is
