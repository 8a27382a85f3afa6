"""The dense lane over half-precision vectors (pgvector's `halfvec`), measured beside the float
lane at each scale-bench size (`citegate bench-scale --halfvec`).

A halfvec HNSW index stores each vector in 2 bytes a dimension instead of 4, so the graph is
about half the size and each distance reads half the memory. The bench builds one partial halfvec
index per kind group (the same predicates as the float ones, `db.kinds_array`), runs every query
through it, and scores the hits against the same exact float top-16 as the float lane: recall@16,
the cosine lost (each hit's score is its float cosine, so rounding cannot flatter the gap), p50 /
p95 and the share of queries the halfvec index served (`scale_bench.measure_halfvec`). The indexes
are dropped afterwards: this measures an option, production stays on float vectors.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import psycopg
from psycopg import sql

from citegate.pipeline import lanes
from citegate.store import db

SUFFIX = "_half"


def index_name(embedder_id: str, group: str) -> str:
    """The halfvec twin of a group's HNSW index."""
    return db.hnsw_index_name(embedder_id, group) + SUFFIX


def megabytes(conn: psycopg.Connection, names: Sequence[str]) -> float:
    """The named relations' total size on disk, in MB."""
    row = conn.execute(
        "SELECT coalesce(sum(pg_relation_size(c.oid)), 0) FROM pg_class c WHERE c.relname = ANY(%s)",
        (list(names),),
    ).fetchone()
    return int(row[0]) / 1e6


def scans(conn: psycopg.Connection, names: Sequence[str]) -> int:
    """How many scans the named indexes have served so far (pg_stat_user_indexes)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = ANY(%s)",
        (list(names),),
    ).fetchone()
    return int(row[0])


def build(conn: psycopg.Connection, embedder_id: str, dim: int, groups: Sequence[str]) -> float:
    """Create each group's halfvec partial HNSW index; returns seconds."""
    clock = time.perf_counter()
    for group in groups:
        conn.execute(
            sql.SQL(
                "CREATE INDEX {name} ON fragments USING hnsw "
                "((embedding::halfvec({dim})) halfvec_cosine_ops) "
                "WHERE embedder_id = {eid} AND kind = ANY ({kinds})"
            ).format(
                name=sql.Identifier(index_name(embedder_id, group)),
                dim=sql.Literal(dim),
                eid=sql.Literal(embedder_id),
                kinds=db.kinds_array(group),
            )
        )
    return time.perf_counter() - clock


def drop(conn: psycopg.Connection, embedder_id: str, groups: Sequence[str]) -> None:
    """Remove the halfvec indexes `build` made."""
    for group in groups:
        conn.execute(
            sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.Identifier(index_name(embedder_id, group))
            )
        )


def search(
    conn: psycopg.Connection,
    qvec: np.ndarray,
    embedder_id: str,
    corpora: Sequence[str],
    group: str,
    k: int,
) -> list[lanes.LaneHit]:
    """`lanes.dense` ordered by halfvec distance; each hit's score is its float cosine."""
    dim = int(qvec.shape[0])
    query = sql.SQL(
        "SELECT id, 1 - (embedding::vector({d}) <=> %(q)s::vector({d})) FROM fragments "
        "WHERE embedder_id = {eid} AND corpus = ANY(%(corpora)s) AND kind = ANY ({kinds}) "
        "ORDER BY embedding::halfvec({d}) <=> %(q)s::vector({d})::halfvec({d}) LIMIT %(k)s"
    ).format(d=sql.Literal(dim), eid=sql.Literal(embedder_id), kinds=db.kinds_array(group))
    params = {"q": np.asarray(qvec, dtype=np.float32), "corpora": list(corpora), "k": k}
    rows = conn.execute(query, params, prepare=False).fetchall()
    return [lanes.LaneHit(r[0], f"dense:{group}", i, float(r[1])) for i, r in enumerate(rows, 1)]
