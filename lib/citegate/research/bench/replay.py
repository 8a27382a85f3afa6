"""Part 4 of the bench: replay throughput (configs × questions per second), scalar `replay` and
vectorised `replay_many` in the same run, ÷ fresh-retrieve throughput, and whether the two agree
on every config × question."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from citegate.core.config import PipelineConfig
from citegate.pipeline.retrieve import RetrievalResult, RetrievalTrace, replay
from citegate.research.bench.common import ratio, timed
from citegate.research.vector_replay import VectorResult, pack, replay_many

VECTOR_REPEATS = 5  # passes of the vectorised grid (the median is reported)
# The replay grid changes cut thresholds only, so every config replays the same traces.
GRID = {
    "pre_floor": (0.0, 0.1, 0.18, 0.3, 0.45, 0.6),
    "rerank_top_k": (8, 16, 32),
    "reserve_floor": (0.3, 0.4),
}


def replay_grid(base: PipelineConfig) -> list[PipelineConfig]:
    """Every combination of the cut thresholds in `GRID`, built with `cfg.replace`."""
    keys = list(GRID)
    return [
        base.replace(**dict(zip(keys, vals, strict=True)))
        for vals in itertools.product(*GRID.values())
    ]


def bench_replay(
    traces: Sequence[RetrievalTrace],
    base: PipelineConfig,
    notes: Sequence[tuple[int, ...]],
    retrieve_q_per_s: dict[str, float],
) -> dict[str, Any]:
    """Replays per second over the config grid, scalar `replay` and vectorised `replay_many`
    in the same run, each as a multiple of fresh retrieves per second; and whether the two
    agree (notes, decision, max cosine) on every config × question."""
    grid = replay_grid(base)
    same = sum(
        tuple(c.fragment_id for c in replay(t, base).notes) == n
        for t, n in zip(traces, notes, strict=True)
    )
    clock = time.perf_counter()
    for cfg in tqdm(grid, desc="replay grid", unit="cfg"):
        for t in traces:
            replay(t, cfg)
    elapsed = time.perf_counter() - clock
    rate = ratio(len(grid) * len(traces), elapsed)
    vec = _bench_vector(traces, grid)
    agree = sum(  # scalar again, untimed: holding every result above would load the GC
        _same_result(replay(t, cfg), v)
        for cfg, got in zip(grid, vec.pop("results"), strict=True)
        for t, v in zip(traces, got, strict=True)
    )
    out: dict[str, Any] = {
        "configs": len(grid),
        "questions": len(traces),
        "replays": len(grid) * len(traces),
        "replay_per_s": rate,
        "replay_matches_retrieve": ratio(same, len(traces)),
        **vec,
        "vector_over_scalar": ratio(vec["vector_per_s"], rate),
        "vector_equals_scalar": ratio(agree, len(grid) * len(traces)),
    }
    for label, qps in retrieve_q_per_s.items():
        out[f"retrieve_per_s_{label}"] = qps
        out[f"replay_over_retrieve_{label}"] = ratio(rate, qps)
        out[f"vector_over_retrieve_{label}"] = ratio(out["vector_per_s"], qps)
    return out


def _bench_vector(
    traces: Sequence[RetrievalTrace], grid: Sequence[PipelineConfig]
) -> dict[str, Any]:
    """Vectorised replay of the grid: `pack`, then the whole grid, each `VECTOR_REPEATS` times
    (one is short) and the medians kept; the rate counts one pack and one pass, the sweep rate
    the pass alone (what each further config costs once the traces are packed)."""
    packs, passes = [], []
    for _ in range(VECTOR_REPEATS):
        packed, seconds = timed(lambda: pack(traces))
        packs.append(seconds)
        results, seconds = timed(lambda p=packed: [replay_many(p, cfg) for cfg in grid])
        passes.append(seconds)
    n = len(grid) * len(traces)
    pack_s, one = float(np.median(packs)), float(np.median(passes))
    return {
        "pack_s": pack_s,
        "vector_pass_s": passes,
        "vector_per_s": ratio(n, pack_s + one),
        "vector_sweep_per_s": ratio(n, one),
        "results": results,
    }


def _same_result(want: RetrievalResult, got: VectorResult) -> bool:
    """Whether the vectorised replay gave the scalar one's notes, decision and max cosine."""
    return (
        got.notes == tuple(c.fragment_id for c in want.notes)
        and got.decision == want.decision
        and got.max_score == want.max_score
    )
