"""The scale goals read from a scale bench report (`research.scale_goals`): each verdict follows
the measured numbers, per lexical lane, and a size or lane not measured is said, not passed."""

from __future__ import annotations

from typing import Any

from citegate.research import scale_goals


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
