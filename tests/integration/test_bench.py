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

from citegate.core.config import PipelineConfig
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
    sizes = bench.Sizes(ingest_frags=6, questions=3, ingest_rounds=3, callers=2, per_caller=3)
    workdir = Path(tempfile.mkdtemp(prefix="citegate-bench-test-"))
    yield bench.run(sizes, frags=toy_corpus(), workdir=workdir)
    shutil.rmtree(workdir, ignore_errors=True)


def test_the_load_part_shares_one_service_and_opens_at_once_without_an_error(
    result: dict,
) -> None:
    load = result["load"]
    assert load["config"] == "production"
    for key in ("single", "threads_shared", "processes"):
        assert load[key]["errors"] == 0, load[key]["error_kinds"]
        assert finite(load[key]["p95_ms"]) and finite(load[key]["calls_per_s"])
    assert load["single"]["calls"] == 3
    assert load["threads_shared"]["calls"] == load["processes"]["calls"] == 2 * 3
    assert load["opens"] == {"opens": 2, "errors": 0, "error_kinds": {}}
    assert finite(load["shared_p95_over_single"])
    for key in ("single", "threads_shared", "processes"):
        assert load[key]["cpu_ms_per_call"] > 0  # the client's CPU, the server's where readable
    assert finite(load["cpu_bound_mean_ms"]) and load["cpu_bound_mean_ms"] > 0
    goals = result["goals"]
    assert goals["shared_service_errors"]["met"] and goals["concurrent_open_errors"]["met"]
    assert "Service.open at once" in bench.render(result)


def test_the_stream_part_times_the_first_event_and_the_whole_turn_both_ways(
    result: dict,
) -> None:
    s = result["stream"]
    assert s["config"] == "production" and s["questions"] == 3
    for key in ("first_event", "streamed_turn", "answered_turn"):
        assert finite(s[key]["p50_ms"]) and finite(s[key]["p95_ms"])
    assert s["first_event"]["p50_ms"] <= s["streamed_turn"]["p50_ms"]
    assert finite(s["stream_over_answer"])
    assert {"stream_first_event_p50_ms", "stream_over_answer"} <= set(result["goals"])
    assert "4e. Streaming" in bench.render(result)


def test_every_part_reports_finite_numbers(result: dict) -> None:
    ing = result["ingest"]
    assert ing["written"] == ing["fragments"] == 6
    assert 0.0 < ing["embedder_share_of_ingest"] <= 1.0
    for key in ("raw_frag_per_s", "ingest_frag_per_s", "ingest_over_raw", "ingest_over_raw_best"):
        assert finite(ing[key]) and ing[key] > 0
    assert ing["pairs"] == 3 and ing["embedded_by_ingest_runs"] == [6, 6, 6]  # each really embeds
    assert len(ing["ingest_over_raw_pairs"]) == len(ing["raw_frag_per_s_runs"]) == 3
    spread = ing["ingest_over_raw_spread"]
    assert spread["min"] <= spread["q1"] <= spread["median"] <= spread["q3"] <= spread["max"]
    assert spread["median"] == ing["ingest_over_raw"]
    goal = result["goals"]["ingest_over_raw"]
    assert ing["conclusive"] == (ing["inconclusive_because"] == "")
    assert goal["verdict"] == (
        "inconclusive" if not ing["conclusive"] else "yes" if goal["met"] else "no"
    )
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
            "named",
            "question, batched",
            "question, per lane",
        }
    )
    rep = result["replay"]
    assert rep["configs"] == 36 and rep["questions"] == 3
    assert finite(rep["replay_over_retrieve_warm"]) and rep["replay_matches_retrieve"] == 1.0
    assert finite(rep["vector_over_retrieve_warm"]) and rep["vector_equals_scalar"] == 1.0
    env = result["environment"]
    assert env["postgresql"] and env["pgvector"] != "missing" and env["cpu_count"]
    gate = result["gate"]  # production ships the learned gate: both gates timed, same reranker
    assert gate["questions"] == 3 and gate["reranker"].startswith("ltr/")
    assert finite(gate["learned_over_coverage"]) and gate["learned_p50_ms"] > 0
    ans = result["answer_stage"]  # compose and claim check after each warm retrieve
    assert ans["questions"] == 3 and ans["claims_per_answer"] > 0
    assert all(finite(ans[k]["p50_ms"]) for k in ("retrieve", "compose", "check", "answer"))
    assert ans["check_over_answer"] >= 1.0  # the check only adds time
    assert set(result["goals"]) == set(bench.load_goals())


def test_report_and_json(result: dict, tmp_path: Path) -> None:
    text = bench.render(result)
    assert "ingest / raw (median of per-pair ratios)" in text and "every pair's ratio" in text
    for title in (
        "1. Ingest",
        "2. Dense lane",
        "3. retrieve()",
        "4. replay()",
        "4b.",
        "4c. The answer stage",
        "5. Environment",
    ):
        assert title in text
    out = tmp_path / "b" / "bench.json"
    bench.write_json(result, out)
    assert json.loads(out.read_text())["replay"]["configs"] == 36


def test_replay_grid_changes_only_cut_thresholds() -> None:
    base = PipelineConfig()
    grid = bench.replay_grid(base)
    assert (
        len(grid) == 6 * 3 * 2
        and len({(c.pre_floor, c.rerank_top_k, c.reserve_floor) for c in grid}) == 36
    )
    assert all(c.collection_key() == base.collection_key() for c in grid)


def test_questions_are_every_tenth_line() -> None:
    qs = bench.read_questions(5)
    assert len(qs) == 5 and all(isinstance(q, str) and q for q in qs)


def test_ingest_verdict_says_when_the_spread_is_too_wide() -> None:
    goal = bench.load_goals()["ingest_over_raw"].value
    assert bench.ingest_verdict([0.95, 0.96, 0.97, 0.96, 0.95], goal) == ""  # tight, above goal
    assert bench.ingest_verdict([0.50, 0.51, 0.52, 0.50, 0.51], goal) == ""  # tight, below goal
    assert "IQR" in bench.ingest_verdict([0.3, 0.5, 0.6, 0.8, 0.85], goal)
    assert "crosses" in bench.ingest_verdict([0.86, 0.88, 0.89, 0.90, 0.93], goal)
    assert "one pair" in bench.ingest_verdict([0.95], goal)


def test_goal_row_reads_inconclusive() -> None:
    res = {
        "ingest": {"ingest_over_raw": 0.6, "inconclusive_because": "ratio IQR 0.3 > 20%"},
        "recall": {"overall": {"recall_at_16": 1.0}, "groups": {}},
        "replay": {"vector_over_retrieve_warm": 2000.0, "vector_equals_scalar": 1.0},
        "retrieve_warm": {"lanes": {"p50_ms": 61.0}},
    }
    g = bench.score_goals(res)
    assert g["lanes_p50_ms"]["verdict"] == "no"  # a latency: over the goal is not met
    res["retrieve_warm"]["lanes"]["p50_ms"] = 59.0
    assert bench.score_goals(res)["lanes_p50_ms"]["verdict"] == "yes"
    assert g["ingest_over_raw"]["verdict"] == "inconclusive" and g["ingest_over_raw"]["met"] is None
    assert g["recall_at_16"]["verdict"] == "yes"
