"""The scale goals read from a scale bench report (`research.scale_goals`): each verdict follows
the measured numbers, per lexical lane and for production's own config, and a size or lane not
measured is said, not passed; the report's per-config retrieve table (`research.scale_report`)."""

from __future__ import annotations

from typing import Any

from citegate.research import scale_goals, scale_report


def _ms(p50: float, p95: float) -> dict[str, float]:
    return {"p50_ms": p50, "p95_ms": p95}


def _size(size: int, recalls: tuple[float, float, float]) -> dict[str, Any]:
    groups = dict(zip(("transcripts", "verses", "library"), recalls, strict=True))
    return {
        "size": size,
        "groups": {g: {"recall_at_16": r} for g, r in groups.items()},
        "text_lanes": {"lexical": _ms(2966.6, 9820.5)},
        "retrieve": {"total": _ms(3181.9, 12104.8)},
        "lexical_tiers": {"1024": _ms(24.8, 82.1), "8192": _ms(94.2, 165.7)},
        "retrieve_tiered": {"total": _ms(215.7, 290.2)},
        "bm25": _ms(2.6, 5.0),
        "retrieve_bm25": {"total": _ms(180.4, 1000.5)},
    }


def _report(*sizes: dict[str, Any]) -> dict[str, Any]:
    return {"settings": {"lexical_budgets": [1024, 8192]}, "sizes": list(sizes)}


def test_each_lane_is_judged_on_its_own_numbers_at_1m() -> None:
    rep = _report(_size(10_000, (1.0, 1.0, 1.0)), _size(1_000_000, (0.995, 0.985, 0.999)))
    got = {(c.goal, c.lane): c for c in scale_goals.checks(rep)}
    lex, ret = "lexical lane p50 / p95", "full retrieve p50 / p95"
    assert got[(lex, "PostgreSQL, no budget (production)")].met is False
    assert got[(lex, "PostgreSQL, budget 1,024")].met is True  # the first budget only
    assert got[(lex, "BM25")].met is True and got[(lex, "BM25")].measured == "2.6 / 5.0 ms"
    assert got[(ret, "PostgreSQL, budget 1,024")].met is True
    assert got[(ret, "BM25")].met is False  # p95 1000.5 ms is over 1 s, however good the p50
    dense = got[("dense recall@16 vs exact", "dense")]
    assert dense.met is True and dense.measured == "lowest 0.985 (verses at 1,000,000)"


def test_one_group_under_the_mark_at_any_size_misses_the_dense_goal() -> None:
    rep = _report(_size(100_000, (1.0, 1.0, 0.949)), _size(1_000_000, (1.0, 1.0, 1.0)))
    dense = scale_goals.recall_check(rep)
    assert dense.met is False and dense.measured == "lowest 0.949 (library at 100,000)"


def test_a_report_without_1m_says_the_latency_goals_were_not_measured() -> None:
    rep = _report(_size(10_000, (1.0, 1.0, 1.0)))
    latency = scale_goals.latency_checks(rep)
    assert [c.met for c in latency] == [None, None]
    assert all("1,000,000 fragments not run" in c.measured for c in latency)
    text = "\n".join(scale_goals.goal_lines(rep))
    assert "| not measured |" in text and "| yes |" in text  # the dense goal still is judged


def test_a_lane_the_bench_skipped_is_not_measured_rather_than_met() -> None:
    size = _size(1_000_000, (1.0, 1.0, 1.0))
    del size["bm25"], size["retrieve_bm25"]
    rep = _report(size)
    rep["settings"]["lexical_budgets"] = []
    lanes = {c.lane for c in scale_goals.latency_checks(rep)}
    assert lanes == {"PostgreSQL, no budget (production)"}
    size["retrieve"] = {}
    ret = [c for c in scale_goals.latency_checks(rep) if c.goal.startswith("full")]
    assert ret[0].met is None and ret[0].measured == "not measured"


PROD = {
    "version": 12,
    "reranker": "ltr/crosslingual@c8510cf10f9b",
    "lexical_backend": "postgres",
    "lexical_budget": 0,
    "lane_k": 40,
    "cap": 60,
    "rerank_top_k": 16,
    "gate": "learned (models/gate-d5549d203337.json)",
    "memory": True,
}


def _with_production(size: dict[str, Any], p50: float, p95: float) -> dict[str, Any]:
    stages = {k: _ms(p50 / 10, p95 / 10) for k in scale_report.RETRIEVE_STAGES[:-1]}
    return {**size, "retrieve_production": {**stages, "total": _ms(p50, p95)}}


def test_the_production_goal_is_judged_on_the_production_retrieve_at_1m() -> None:
    rep = _report(_with_production(_size(1_000_000, (1.0, 1.0, 1.0)), 120.4, 480.0))
    rep["settings"]["production_config"] = PROD
    check = scale_goals.production_check(rep)
    assert check.met is True and check.measured == "120.4 / 480.0 ms"
    assert check.target == "<= 150 / 500 ms"
    assert check.lane.startswith(f"production v{PROD['version']} (ltr/crosslingual@c8510cf10f9b,")
    assert check in scale_goals.checks(rep)
    slow = _report(_with_production(_size(1_000_000, (1.0, 1.0, 1.0)), 149.0, 500.1))
    assert scale_goals.production_check(slow).met is False  # the p95 is over, however good the p50
    assert scale_goals.production_check(slow).lane == "production config"  # not named: not guessed


def test_the_production_goal_without_1m_or_without_the_row_is_not_measured() -> None:
    small = _report(_with_production(_size(10_000, (1.0, 1.0, 1.0)), 20.0, 40.0))
    check = scale_goals.production_check(small)
    assert check.met is None and check.measured == "1,000,000 fragments not run"
    skipped = scale_goals.production_check(_report(_size(1_000_000, (1.0, 1.0, 1.0))))
    assert skipped.met is None and skipped.measured == "not measured"


def _rendered(*sizes: dict[str, Any]) -> str:
    """The report of sizes with only what `scale_report.render` reads filled in."""
    group = {"p50_ms": 1.0, "p95_ms": 2.0, "exact_mean_ms": 3.0, "recall_at_16": 1.0}
    group |= {"cos_gap": 0.0, "hnsw_share": 1.0}
    stages = {k: _ms(1.0, 2.0) for k in ("lanes", "fetch", "rerank", "total")}
    bm25 = _ms(2.6, 5.0) | {"overlap_at_16": 0.9, "build_s": 1.0, "index_mb": 2.0}
    rows = [
        s
        | {"load_s": 1.0, "build_s": 1.0, "groups": {"verses": group}, "lexical_tiers": {}}
        | {"text_lanes": s["text_lanes"] | {"address": _ms(1.0, 2.0)}}
        | {"retrieve": stages, "bm25": bm25}
        for s in sizes
    ]
    settings = {"ef_search": "200", "iterative_scan": "relaxed_order", "queries": 8, "k": 16}
    settings |= {"lexical_budgets": [], "groups": ["verses"], "production_config": PROD}
    rep = {"settings": settings, "method": "m", "sizes": rows, "slopes": {}}
    return scale_report.render(rep | {"build_s_extrapolated": {}})


def test_the_report_puts_the_production_row_beside_the_default_and_bm25_retrieves() -> None:
    text = _rendered(_with_production(_size(10_000, (1.0, 1.0, 1.0)), 30.0, 60.0))
    assert "production.yaml version 12" in text and "reranker ltr/crosslingual@c8510c" in text
    assert "lexical backend postgres" in text
    head = "| size | config | memory | lanes | fetch | rerank | cut | gate | whole retrieve |"
    assert head in text
    assert (
        "| 10,000 | default (cosine rerank) |  | 1.0 / 2.0 | 1.0 / 2.0 | 1.0 / 2.0 |  |  |" in text
    )
    assert "| 10,000 | default, BM25 lexical |  |  |  |  |  |  | 180.4 / 1000.5 |" in text
    cells = " | ".join(["3.0 / 6.0"] * 6 + ["30.0 / 60.0"])
    assert f"| 10,000 | production (its lanes, reranker and gate) | {cells} |" in text
    assert (
        f"| production retrieve p50 / p95 | <= 150 / 500 ms | production v{PROD['version']} "
        in text
    )


def test_the_report_has_no_production_table_when_production_was_not_measured() -> None:
    text = _rendered(_size(10_000, (1.0, 1.0, 1.0)))
    assert "production (its lanes" not in text and "A full retrieve per config" not in text
