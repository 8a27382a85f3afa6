"""The bench's goals: read from `experiments/bench.yaml` (what each ratio means is written there)
and checked on load, then each headline figure of a run held against its goal."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.core.yamlfile import read_yaml
from citegate.research.bench.common import ratio

# The figures `score_goals` computes, so exactly the keys the goal file must hold.
NAMES = (
    "ingest_over_raw",
    "recall_at_16",
    "replay_over_retrieve",
    "vector_equals_scalar",
    "lanes_p50_ms",
    "learned_gate_over_coverage",
    "levers_over_seed",
    "claim_check_p50_ms",
    "shared_service_errors",
    "shared_p95_over_single",
    "concurrent_open_errors",
    "stream_first_event_p50_ms",
    "stream_over_answer",
)
BETTER = ("higher", "lower")


@dataclass(frozen=True)
class Goal:
    """One figure's goal: met at or over `value`, or at or under it when `lower_is_better`."""

    value: float
    lower_is_better: bool

    def met(self, v: float) -> bool:
        """Whether the measured `v` meets the goal."""
        return bool(v <= self.value if self.lower_is_better else v >= self.value)


def load_goals(path: Path = paths.BENCH_GOALS) -> dict[str, Goal]:
    """name -> Goal, in `NAMES` order; a ConfigError naming the file and the key when a goal is
    missing, unknown (a misspelt name) or malformed."""
    doc = read_yaml(path, "bench goals file")
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping of goal name -> {{goal, better}}")
    unknown = sorted(set(map(str, doc)) - set(NAMES))
    if unknown:
        raise ConfigError(f"{path}: unknown goal {unknown[0]!r} (known: {', '.join(NAMES)})")
    missing = [n for n in NAMES if n not in doc]
    if missing:
        raise ConfigError(f"{path}: goal {missing[0]!r} is missing")
    return {n: _goal(path, n, doc[n]) for n in NAMES}


def _goal(path: Path, name: str, entry: Any) -> Goal:
    """One entry `{goal: <number>, better: higher|lower}`, checked."""
    if not isinstance(entry, dict) or set(entry) != {"goal", "better"}:
        raise ConfigError(f"{path}: goal {name!r} must be {{goal: <number>, better: higher|lower}}")
    value, better = entry["goal"], entry["better"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{path}: goal {name!r}: goal must be a number, not {value!r}")
    if better not in BETTER:
        raise ConfigError(f"{path}: goal {name!r}: better must be higher or lower, not {better!r}")
    return Goal(float(value), better == "lower")


def score_goals(
    res: dict[str, Any], goals: dict[str, Goal] | None = None
) -> dict[str, dict[str, Any]]:
    """The headline ratios against their goals (replay is measured against the *warm* retrieve,
    the faster and so the harder baseline); `goals` defaults to `load_goals()`."""
    goals = load_goals() if goals is None else goals
    values = {
        "ingest_over_raw": res["ingest"]["ingest_over_raw"],
        "recall_at_16": res["recall"]["overall"]["recall_at_16"],
        "replay_over_retrieve": res["replay"]["vector_over_retrieve_warm"],
        "vector_equals_scalar": res["replay"]["vector_equals_scalar"],
        "lanes_p50_ms": res["retrieve_warm"]["lanes"]["p50_ms"],
    }
    if "retrieve_levers" in res:
        values["levers_over_seed"] = ratio(
            res["retrieve_levers"]["wall"]["p50_ms"], res["retrieve_warm"]["wall"]["p50_ms"]
        )
    if "answer_stage" in res:
        values["claim_check_p50_ms"] = res["answer_stage"]["check"]["p50_ms"]
    if "load" in res:
        values["shared_service_errors"] = res["load"]["threads_shared"]["errors"]
        values["shared_p95_over_single"] = res["load"]["shared_p95_over_single"]
        values["concurrent_open_errors"] = res["load"]["opens"]["errors"]
    if "stream" in res:
        values["stream_first_event_p50_ms"] = res["stream"]["first_event"]["p50_ms"]
        values["stream_over_answer"] = res["stream"]["stream_over_answer"]
    if "learned_over_coverage" in res.get("gate", {}):
        values["learned_gate_over_coverage"] = res["gate"]["learned_over_coverage"]
    out = {
        k: {"value": v, "goal": goals[k].value, "met": goals[k].met(v), "note": ""}
        for k, v in values.items()
    }
    for g in out.values():
        g["verdict"] = "yes" if g["met"] else "no"
    _add_notes(res, out)
    return out


def _add_notes(res: dict[str, Any], out: dict[str, dict[str, Any]]) -> None:
    """The note of each goal row, and "inconclusive" for an ingest ratio whose spread decides
    nothing (neither yes nor no)."""
    why = res["ingest"].get("inconclusive_because", "")
    if why:
        out["ingest_over_raw"].update(met=None, verdict="inconclusive", note=why)
    else:
        out["ingest_over_raw"]["note"] = "median of interleaved pairs"
    ann = {g: s for g, s in res["recall"]["groups"].items() if s["hnsw_index_scans"] < s["queries"]}
    if ann:
        out["recall_at_16"]["note"] = f"exact scans, not HNSW, in: {', '.join(ann)}"
    n = res.get("corpus_fragments")
    out["lanes_p50_ms"]["note"] = "warm retrieve, ms, at most" + (f"; {n} fragments" if n else "")
