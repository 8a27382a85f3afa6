"""One `Service` shared by threads, fed generated batches of questions (hypothesis): known
questions, unicode of any kind with control and bidi characters, empty and over-long text, text
that fails validation. Every question a thread asks gives what the same question gives a single
client (the same branch, text and notes; or the same refusal), whatever the interleaving: a
refused question or a failed statement in one thread never leaves a pooled connection in a state
that changes another thread's answer. One small corpus per module on real PostgreSQL; 500
examples, a time bound per example far above a normal batch's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citegate.pipeline.service import Service
from citegate.store import db

pytestmark = pytest.mark.db

FUZZ = settings(
    max_examples=500,
    deadline=timedelta(seconds=30),  # a deadlock, not a slow shared machine, should fail
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
KNOWN = (
    "Is the self eternal?",
    "Why does Arjuna lay down his bow?",
    "Who is in the opposing army?",
    "What is the capital of France?",
    "Кто такой Арджуна?",
    "अर्जुन कौन है?",
    "]",
    "",
    "   ",
    "?" * 5000,
)
ODD = st.sampled_from(["\u202e", "\u200b", "\x1b[31m", "\x07", "\x00", "\ufeff", "\u2066", "\t"])
QUESTIONS = st.one_of(
    st.sampled_from(KNOWN),
    st.sampled_from(KNOWN),
    st.lists(st.sampled_from(KNOWN[:6]) | ODD, min_size=1, max_size=3).map(" ".join),
    st.text(st.characters(codec="utf-8"), max_size=24),
)  # known questions twice as often: interleavings of the same questions, not only new text
BATCHES = st.lists(QUESTIONS, min_size=2, max_size=6)
TINY = (
    "Arjuna sees his teachers and kinsmen in the opposing army and lays down his bow.\n\n"
    "Krishna teaches that the self is eternal: it is not born and it does not die.\n"
)


@pytest.fixture(scope="module")
def shared(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The design config over a two-paragraph corpus, one `Service` for the whole module."""
    from citegate.models.embed import default_embedder
    from citegate.store.ingest import ingest_corpus

    name = "service_fuzz"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    url = pg_url.replace("/postgres?", f"/{name}?")
    folder = Path(tmp_path_factory.mktemp("service-fuzz")) / "tiny"
    folder.mkdir()
    (folder / "text.txt").write_text(TINY, encoding="utf-8")
    with db.connect(url) as conn:
        ingest_corpus(conn, str(folder), default_embedder(), corpus="tiny", progress=False)
    with Service.open("design", corpora=["tiny"], url=url, pool_size=4) as svc:
        yield svc


def outcome(svc: Service, question: str) -> tuple[object, ...]:
    """What a caller gets: the turn's branch, text and notes, or the refusal's kind and line."""
    try:
        turn = svc.answer(question, fallback=False)
    except Exception as exc:  # the refusal is part of the outcome compared
        return ("refused", type(exc).__name__, str(exc))
    return (turn.branch, turn.text, tuple(c.fragment_id for c in turn.notes))


_ALONE: dict[str, tuple[object, ...]] = {}
_ALONE_LOCK = threading.Lock()


def alone(svc: Service, question: str) -> tuple[object, ...]:
    """The question's outcome for a single client (computed once, one caller at a time)."""
    with _ALONE_LOCK:
        if question not in _ALONE:
            _ALONE[question] = outcome(svc, question)
        return _ALONE[question]


@FUZZ
@given(batch=BATCHES)
def test_threads_sharing_a_service_get_what_a_single_client_gets(
    shared: Service, batch: list[str]
) -> None:
    expected = [alone(shared, q) for q in batch]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: outcome(shared, q), batch))
    assert got == expected
