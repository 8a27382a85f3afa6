"""BM25 queries fed generated text (hypothesis): tantivy's query syntax (`:`, quotes, brackets,
`^`, `~`, `*`, `AND`/`OR`/`NOT`), unicode of any plane, NUL and lone surrogates, words longer than
PostgreSQL indexes, empty text. Through the lexical lane (`lanes.lexical`, backend bm25) and the
index's own `bm25.search`, each gives a result (possibly empty) and never raises: a query is
PostgreSQL's lexemes as term queries, never parsed by tantivy. One small index per module on real
PostgreSQL; 500 examples each, a time bound per example far above a normal query's milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citegate.core.fragments import Fragment
from citegate.pipeline import lanes
from citegate.store import bm25, bm25_folders, db
from citegate.store.tables import write_sources

pytestmark = pytest.mark.db

EID = "bm25-fuzz"
CORPUS = "fuzz"
TEXTS = [
    "Krishna speaks to Arjuna about the eternal soul and action",
    'AND OR NOT title:soul "quoted phrase" (group) boost^2 fuzzy~1 wild* -minus +plus',
    "Кришна говорит Арджуне о вечной душе",
    "कर्मण्येवाधिकारस्ते मा फलेषु कदाचन",
    "数据 検索 데이터 🙂 emoji and ＦＵＬＬＷＩＤＴＨ letters",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
]
FUZZ = settings(
    max_examples=500,
    deadline=timedelta(seconds=10),  # a hang, not a slow shared machine, should fail
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
SYNTAX = [
    ":", '"', "(", ")", "[", "]", "{", "}", "^", "~", "*", "?", "\\", "/", "-", "+", "!",
    "AND", "OR", "NOT", "TO", "IN", "&&", "||", "title:", "^2", "~1", "*:*", "'", "''",
    "\x00", "\ud800", "\u200b", "\t", "\n", "soul", "душе", "Krishna", "कर्म",
]  # fmt: skip
WORDS = st.one_of(
    st.sampled_from(SYNTAX),
    st.text(st.characters(codec="utf-8"), max_size=12),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=12),
    st.sampled_from("aя語क").flatmap(lambda c: st.integers(1, 5000).map(lambda n: c * n)),
)
QUERIES = st.one_of(
    st.just(""),
    st.lists(st.characters(codec="utf-8") | st.sampled_from(SYNTAX), max_size=80).map("".join),
    st.lists(WORDS, max_size=40).map(" ".join),
)


@pytest.fixture(scope="module")
def fuzz_conn(
    pg_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[psycopg.Connection]:
    """A database of one small corpus whose BM25 index is built once, under a private var dir."""
    name = "bm25_fuzz"
    mp = pytest.MonkeyPatch()
    mp.setenv("CITEGATE_VAR", str(tmp_path_factory.mktemp("bm25-fuzz-var")))
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    with db.connect(pg_url.replace("/postgres?", f"/{name}?")) as conn:
        db.ensure_embedder(conn, EID, 4)
        frags = [
            Fragment(f"f{i}", CORPUS, "verse", "fz", t, "en", addr_label=f"F {i}")
            for i, t in enumerate(TEXTS)
        ]
        vecs = np.eye(len(TEXTS), 4, dtype=np.float32) + 0.1
        write_sources(conn, frags, vecs, EID, CORPUS, origin=None, lexemes=True)
        assert bm25.build(conn, EID, [CORPUS]).fragments == len(TEXTS)
        # the syntax is matched as words, not parsed: a query of it finds the fragment holding it
        (hits,) = bm25.search(conn, ['title:soul "quoted phrase" boost^2 AND'], [3], EID, [CORPUS])
        assert hits and hits[0][0] == _ids(conn, "f1").pop()
        yield conn
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    mp.undo()


def _ids(conn: psycopg.Connection, key: str = "%") -> set[int]:
    sql = "SELECT id FROM fragments WHERE corpus = %s AND frag_key LIKE %s"
    return {r[0] for r in conn.execute(sql, (CORPUS, key))}


@FUZZ
@given(text=QUERIES, k=st.integers(-2, 20), romanised=st.booleans())
def test_the_bm25_lane_answers_any_query(
    fuzz_conn: psycopg.Connection, text: str, k: int, romanised: bool
) -> None:
    hits = lanes.lexical(fuzz_conn, text, EID, [CORPUS], k, 0, "bm25", romanised)
    assert len(hits) <= max(k, 0)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    scores = [h.lane_score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert {h.fragment_id for h in hits} <= _ids(fuzz_conn)


@FUZZ
@given(texts=st.lists(QUERIES, min_size=1, max_size=3), k=st.integers(-2, 20))
def test_the_index_answers_any_raw_text(
    fuzz_conn: psycopg.Connection, texts: list[str], k: int
) -> None:
    got = bm25.search(fuzz_conn, texts, [k] * len(texts), EID, [CORPUS])
    assert len(got) == len(texts)
    for hits in got:
        assert len(hits) <= max(k, 0)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert len(bm25_folders.published(bm25.index_root())) == 1  # answered from the one index
