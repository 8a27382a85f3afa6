"""Fresh-database drift: with `exact_dense` the dense lanes, and so the traces, depend
on the stored rows alone, not on the HNSW graph pgvector drew for this build (it draws each
element's level from PostgreSQL's per-process random state) nor on the physical row order; equal
cosines (duplicate texts have identical embeddings) are ranked by fragment id."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from citegate.core.config import PipelineConfig
from citegate.core.fragments import Fragment
from citegate.corpus.questions import load_set
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import lane_batch, lanes
from citegate.pipeline.retrieve import collect
from citegate.research.bench import hnsw_scans
from citegate.store import db
from citegate.store import tables as store

pytestmark = pytest.mark.db

EID = "test/tie-embedder@1"


def _verse(i: int) -> Fragment:
    return Fragment(
        key=f"v{i}", corpus="c", kind="verse", source_id="s", text=f"verse {i}", lang="en",
        addr_label=f"V {i}",
    )  # fmt: skip


def test_exact_dense_ranks_equal_cosines_by_fragment_id(conn: psycopg.Connection) -> None:
    """Six verses in three pairs of identical vectors; the lower id of each pair is rewritten so
    that it lies after its twin in the heap. The exact lane keeps the lower id of the pair that
    straddles the LIMIT and ranks each pair by id, in both the single and the batched statement."""
    q = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    near, mid, far = [1.0, 0.1, 0.0, 0.0], [1.0, 0.5, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]
    vectors = np.array([near, near, mid, mid, far, far], dtype=np.float32)
    db.ensure_embedder(conn, EID, 4)
    store.write_batch(conn, [_verse(i) for i in range(6)], vectors, EID)
    ids = [r[0] for r in conn.execute("SELECT id FROM fragments ORDER BY frag_key")]
    conn.execute("UPDATE fragments SET tokens = 'moved' WHERE id = ANY(%s)", (ids[0::2],))
    heap = [r[0] for r in conn.execute("SELECT id FROM fragments ORDER BY ctid")]
    assert heap.index(ids[0]) > heap.index(ids[1])  # the lower id now comes later in the heap

    want = [ids[0], ids[1], ids[2]]  # pair 1 by id, then the lower id of pair 2 (cut at k=3)
    single = lanes.dense(conn, q, EID, ["c"], "verses", 3, exact=True)
    assert [h.fragment_id for h in single] == want
    (batched,) = lane_batch.batch_hits(
        conn, [""], q[None, :], [3], EID, ["c"], groups=("verses",), text_lanes=False, exact=True
    )
    assert [h.fragment_id for h in batched] == want
    assert [h.rank for h in batched] == [1, 2, 3]


@pytest.fixture()
def rebuilt_copy(pg_url: str, demo_db: str) -> Iterator[str]:
    """A second database holding the demo database's rows under the same ids, built another way:
    a third of the rows rewritten (another heap order) and the HNSW index rebuilt (another random
    graph), as a fresh build of the same data would have."""
    name = f"demo_copy_{np.random.default_rng().integers(1 << 30)}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "demo"')
    url = pg_url.replace("/postgres?", f"/{name}?")
    emb_id = default_embedder().id
    with db.connect(url) as c:
        c.execute("UPDATE fragments SET tokens = tokens WHERE id % 3 = 0")
        for index in db.hnsw_index_names(emb_id):
            c.execute(f'REINDEX INDEX "{index}"')
        c.execute("VACUUM (ANALYZE) fragments")
    yield url
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_exact_dense_traces_do_not_depend_on_the_database_build(
    demo_db: str, rebuilt_copy: str
) -> None:
    """The same questions collected with `exact_dense` on the demo database and on a copy built
    another way give identical traces, and the HNSW index serves none of their scans."""
    emb = default_embedder()
    cfg = PipelineConfig(embedder=emb.id, corpora=("gita",), exact_dense=True)
    assert cfg.collection_key() != cfg.replace(exact_dense=False).collection_key()
    qs = load_set("gita").questions
    texts = [q.text for q in qs[:: max(1, len(qs) // 12)][:12]]
    traces = []
    for url in (demo_db, rebuilt_copy):
        with db.connect(url) as c:
            before = hnsw_scans(c, emb.id)
            traces.append([collect(c, t, cfg, emb, CosineReranker()).candidates for t in texts])
            assert hnsw_scans(c, emb.id) == before
    assert traces[0] == traces[1]
    assert all(traces[0])
