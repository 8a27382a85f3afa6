"""Smoke test of `citegate.research.bench` at toy sizes: every part runs and reports finite numbers.

No timing is asserted: the benchmark reports ratios, it does not pass or fail on speed.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from citegate.core.fragments import Fragment
from citegate.research import bench

pytestmark = [pytest.mark.db, pytest.mark.slow]


def toy_corpus(per_kind: int = 6) -> list[Fragment]:
    """A few fragments of every kind, so each kind group of the dense lane has something."""
    taken: dict[str, int] = {}
    out = []
    for f in bench.gita_fragments():
        if taken.get(f.kind, 0) < per_kind:
            taken[f.kind] = taken.get(f.kind, 0) + 1
            out.append(f)
    return out


def finite(v: object) -> bool:
    return isinstance(v, int | float) and math.isfinite(v)


@pytest.fixture(scope="module")
def result() -> Iterator[dict]:
    """One toy benchmark run. Its server lives in a private temp dir, not in pytest's numbered
    tmp dirs, which a concurrent pytest session may rotate away under the running server."""
    sizes = bench.Sizes(ingest_frags=6, questions=3, ingest_rounds=1)
    workdir = Path(tempfile.mkdtemp(prefix="citegate-bench-test-"))
    yield bench.run(sizes, frags=toy_corpus(), workdir=workdir)
    shutil.rmtree(workdir, ignore_errors=True)


def test_every_part_reports_finite_numbers(result: dict) -> None:
    ing = result["ingest"]
    assert ing["written"] == ing["fragments"] == 6
    assert 0.0 < ing["embedder_share_of_ingest"] <= 1.0
    for key in ("raw_frag_per_s", "ingest_frag_per_s", "ingest_over_raw"):
        assert finite(ing[key]) and ing[key] > 0
    rec = result["recall"]
    assert set(rec["groups"]) == {"transcripts", "verses", "library"}
    for stats in [*rec["groups"].values(), rec["overall"]]:
        assert 0.0 <= stats["recall_at_16"] <= 1.0
        assert finite(stats["ann"]["p50_ms"]) and finite(stats["exact"]["p95_ms"])
    for per_ef in rec["ef_sweep"].values():
        for mode in ("planner", "hnsw_forced"):
            assert 0.0 <= per_ef[mode]["recall_at_16"] <= 1.0 and finite(per_ef[mode]["p50_ms"])
    for part in ("retrieve_cold", "retrieve_warm"):
        for stage in (*bench.STAGES, "total", "wall"):
            assert finite(result[part][stage]["p50_ms"]), (part, stage)
    assert (
        set(result["lanes"])
        == set(result["lanes_after_ingest"])
        == {
            "dense:transcripts",
            "dense:verses",
            "dense:library",
            "lexical",
            "address",
        }
    )
    rep = result["replay"]
    assert rep["configs"] == 36 and rep["questions"] == 3
    assert finite(rep["replay_over_retrieve_warm"]) and rep["replay_matches_retrieve"] == 1.0
    assert finite(rep["vector_over_retrieve_warm"]) and rep["vector_equals_scalar"] == 1.0
    env = result["environment"]
    assert env["postgresql"] and env["pgvector"] != "missing" and env["cpu_count"]
    assert set(result["goals"]) == set(bench.GOALS)


def test_report_and_json(result: dict, tmp_path: Path) -> None:
    text = bench.render(result)
    for title in ("1. Ingest", "2. Dense lane", "3. retrieve()", "4. replay()", "5. Environment"):
        assert title in text
    out = tmp_path / "b" / "bench.json"
    bench.write_json(result, out)
    assert json.loads(out.read_text())["replay"]["configs"] == 36


def test_replay_grid_changes_only_cut_thresholds() -> None:
    base = bench.PipelineConfig()
    grid = bench.replay_grid(base)
    assert (
        len(grid) == 6 * 3 * 2
        and len({(c.pre_floor, c.rerank_top_k, c.reserve_floor) for c in grid}) == 36
    )
    assert all(c.collection_key() == base.collection_key() for c in grid)


def test_questions_are_every_tenth_line() -> None:
    qs = bench.read_questions(5)
    assert len(qs) == 5 and all(isinstance(q, str) and q for q in qs)
