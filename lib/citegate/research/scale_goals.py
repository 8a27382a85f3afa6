"""The scale goals (lexical and retrieve latency at 1M fragments, dense recall@16) checked against
a scale bench report: each goal, the lane that was measured
for it, the measured value and whether it is met, computed from the report so that the sentence a
reviewer reads ("met at 1M with BM25") is never written by hand.

The goals: at 1M fragments the lexical lane p50 <= 50 ms and p95 <= 200 ms, a full retrieve p50
<= 300 ms and p95 <= 1 s, each per lexical lane the bench measured (the unbudgeted PostgreSQL
lane production runs, the first `lexical_budget`, BM25); a full retrieve under production's own
config (its lanes, reranker and gate: `scale_production`) p50 <= 150 ms and p95 <= 500 ms; dense
recall@16 against exact search >= 0.95 in every kind group at every size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GOAL_SIZE = 1_000_000  # the size the latency goals are stated at
LEXICAL_MS = (50.0, 200.0)  # p50, p95
RETRIEVE_MS = (300.0, 1000.0)  # p50, p95
PRODUCTION_MS = (150.0, 500.0)  # p50, p95 of a retrieve under production's own config
DENSE_RECALL = 0.95  # recall@16 against exact search, every group, every size

Timing = dict[str, float]  # {"p50_ms": ..., "p95_ms": ...}


@dataclass(frozen=True)
class GoalCheck:
    """One goal for one lane: what it asks, what was measured, and whether it is met (None: not
    measured in this report)."""

    goal: str
    target: str
    lane: str
    measured: str
    met: bool | None


def _target(limits: tuple[float, float]) -> str:
    return f"<= {limits[0]:g} / {limits[1]:g} ms"


def _timed(goal: str, limits: tuple[float, float], lane: str, m: Timing | None) -> GoalCheck:
    target = _target(limits)
    if m is None:
        return GoalCheck(goal, target, lane, "not measured", None)
    met = m["p50_ms"] <= limits[0] and m["p95_ms"] <= limits[1]
    return GoalCheck(goal, target, lane, f"{m['p50_ms']:.1f} / {m['p95_ms']:.1f} ms", met)


def lane_timings(
    rep: dict[str, Any], at: dict[str, Any]
) -> list[tuple[str, Timing | None, Timing | None]]:
    """(lane, lexical lane timing, full retrieve timing) for each lexical lane the bench measured
    at one size: the unbudgeted PostgreSQL lane, the first budget, BM25 (None: not measured)."""
    budgets = rep["settings"].get("lexical_budgets") or []
    out = [
        (
            "PostgreSQL, no budget (production)",
            (at.get("text_lanes") or {}).get("lexical"),
            (at.get("retrieve") or {}).get("total"),
        )
    ]
    if budgets:
        out.append(
            (
                f"PostgreSQL, budget {int(budgets[0]):,}",
                (at.get("lexical_tiers") or {}).get(str(budgets[0])),
                (at.get("retrieve_tiered") or {}).get("total"),
            )
        )
    if at.get("bm25"):
        out.append(("BM25", at["bm25"], (at.get("retrieve_bm25") or {}).get("total")))
    return out


def latency_checks(rep: dict[str, Any]) -> list[GoalCheck]:
    """The lexical-lane and full-retrieve goals at GOAL_SIZE, one row per lane measured there."""
    at = next((r for r in rep["sizes"] if r["size"] == GOAL_SIZE), None)
    if at is None:
        return [
            GoalCheck(goal, _target(limits), "any", f"{GOAL_SIZE:,} fragments not run", None)
            for goal, limits in (
                ("lexical lane p50 / p95", LEXICAL_MS),
                ("full retrieve p50 / p95", RETRIEVE_MS),
            )
        ]
    lanes = lane_timings(rep, at)
    out = [_timed("lexical lane p50 / p95", LEXICAL_MS, lane, lex) for lane, lex, _ in lanes]
    out += [_timed("full retrieve p50 / p95", RETRIEVE_MS, lane, ret) for lane, _, ret in lanes]
    return out


def production_lane(rep: dict[str, Any]) -> str:
    """The production config the report measured, in a few words (its version, reranker and
    lexical backend), or "production config" when the report does not say."""
    prod = rep["settings"].get("production_config") or {}
    if not prod:
        return "production config"
    return (
        f"production v{prod.get('version')} ({prod.get('reranker')}, "
        f"{prod.get('lexical_backend')} lexical, gate {prod.get('gate')})"
    )


def production_check(rep: dict[str, Any]) -> GoalCheck:
    """The production retrieve goal at GOAL_SIZE, from the whole call's measured p50/p95."""
    goal, lane = "production retrieve p50 / p95", production_lane(rep)
    at = next((r for r in rep["sizes"] if r["size"] == GOAL_SIZE), None)
    if at is None:
        return GoalCheck(
            goal, _target(PRODUCTION_MS), lane, f"{GOAL_SIZE:,} fragments not run", None
        )
    return _timed(goal, PRODUCTION_MS, lane, (at.get("retrieve_production") or {}).get("total"))


def recall_check(rep: dict[str, Any]) -> GoalCheck:
    """The dense goal: the lowest recall@16 of any group at any size, as the planner ran it."""
    cells = [
        (m["recall_at_16"], r["size"], g) for r in rep["sizes"] for g, m in r["groups"].items()
    ]
    target = f">= {DENSE_RECALL:g} every group, every size"
    if not cells:
        return GoalCheck("dense recall@16 vs exact", target, "dense", "not measured", None)
    low, size, group = min(cells)
    measured = f"lowest {low:.3f} ({group} at {size:,})"
    return GoalCheck("dense recall@16 vs exact", target, "dense", measured, low >= DENSE_RECALL)


def checks(rep: dict[str, Any]) -> list[GoalCheck]:
    """Every goal of the report, latency first."""
    return [*latency_checks(rep), production_check(rep), recall_check(rep)]


def goal_lines(rep: dict[str, Any]) -> list[str]:
    """The goals as a Markdown table for `scale_report.render`."""
    lines = [
        "",
        f"Goals: lexical, retrieve and production retrieve latency at {GOAL_SIZE:,} fragments, "
        "dense recall@16",
        "",
    ]
    lines += ["| goal | target | lane | measured | met |", "|---|---|---|---|---|"]
    for c in checks(rep):
        met = "not measured" if c.met is None else "yes" if c.met else "**no**"
        lines.append(f"| {c.goal} | {c.target} | {c.lane} | {c.measured} | {met} |")
    return lines


__all__ = [
    "DENSE_RECALL",
    "GOAL_SIZE",
    "LEXICAL_MS",
    "PRODUCTION_MS",
    "RETRIEVE_MS",
    "GoalCheck",
    "checks",
    "goal_lines",
    "lane_timings",
    "latency_checks",
    "production_check",
    "production_lane",
    "recall_check",
]
