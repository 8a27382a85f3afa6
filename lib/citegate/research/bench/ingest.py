"""Part 1 of the bench: ingest throughput ÷ raw embedder throughput on the same texts, as
interleaved (raw, ingest) pairs on fresh databases with fresh embedding caches, so the embedder
really runs; the median per-pair ratio, its spread, and "inconclusive" when the spread is too wide
to decide the goal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citegate.core.fragments import Fragment
from citegate.models.embed import CachedEmbedder, Embedder
from citegate.research.bench.common import CORPUS, ratio, timed
from citegate.research.bench.goals import load_goals
from citegate.research.bench.server import create_database
from citegate.store import db
from citegate.store.ingest import ingest

# The ingest/raw goal is undecided when the per-pair ratios' IQR exceeds this share of their median.
MAX_IQR_SHARE = 0.2


class _StopwatchEmbedder:
    """Passes calls through to an embedder and adds up the seconds spent inside it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.seconds = 0.0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Timed pass-through."""
        out, s = timed(lambda: self.inner.embed_queries(texts))
        self.seconds += s
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Timed pass-through."""
        out, s = timed(lambda: self.inner.embed_passages(texts))
        self.seconds += s
        return out


@dataclass(frozen=True)
class _IngestRun:
    """One timed ingest: wall seconds, rows written and passages embedded."""

    seconds: float
    model_seconds: float  # of which inside the embedder
    written: int
    embedded: int


def _ingest_once(
    server_url: str, frags: Sequence[Fragment], model: Embedder, cache_path: Path, db_name: str
) -> _IngestRun:
    """One timed ingest on a fresh database with a fresh embedding cache."""
    with db.connect(create_database(server_url, db_name)) as conn:
        watch = _StopwatchEmbedder(model)
        cached = CachedEmbedder(watch, cache_path)
        report, seconds = timed(lambda: ingest(conn, frags, CORPUS, cached))
    return _IngestRun(seconds, watch.seconds, report.written, cached.misses)


def _spread(values: Sequence[float]) -> dict[str, float]:
    """min / q1 / median / q3 / max and the IQR (q3 − q1) of some numbers."""
    q = np.percentile(np.asarray(values, dtype=float), [0, 25, 50, 75, 100])
    keys = ("min", "q1", "median", "q3", "max")
    return {**{k: float(v) for k, v in zip(keys, q, strict=True)}, "iqr": float(q[3] - q[1])}


def ingest_verdict(ratios: Sequence[float], goal: float | None = None) -> str:
    """Why the per-pair ingest/raw ratios cannot decide the goal (default: the `ingest_over_raw`
    goal of `experiments/bench.yaml`), or "" when they can: too few pairs, an IQR wider than
    MAX_IQR_SHARE of the median, or a min–max range crossing the goal."""
    if goal is None:
        goal = load_goals()["ingest_over_raw"].value
    if len(ratios) < 2:
        return "one pair only: no spread to judge"
    s = _spread(ratios)
    if s["iqr"] > MAX_IQR_SHARE * s["median"]:
        return f"ratio IQR {s['iqr']:.3g} > {MAX_IQR_SHARE:.0%} of median {s['median']:.3g}"
    if s["min"] < goal <= s["max"]:
        return f"ratio range {s['min']:.3g}–{s['max']:.3g} crosses the goal {goal:g}"
    return ""


def bench_ingest(
    server_url: str, frags: Sequence[Fragment], model: Embedder, tmp: Path, rounds: int = 5
) -> dict[str, Any]:
    """Raw `embed_passages` throughput vs a full ingest on the same fragments, as `rounds`
    interleaved pairs (raw, ingest, raw, ingest, ...). Every ingest goes to a fresh database with
    a fresh embedding cache, so it really embeds; the raw side calls the uncached embedder. Each
    pair's ratio compares two runs made back to back, so drift in machine load between pairs
    cancels; the headline is the median of the per-pair ratios, reported with its spread, and
    `inconclusive_because` says when that spread is too wide to decide the goal. The embedder's
    share of each ingest's own wall time is a second estimate, immune to drift between runs."""
    texts = [f.text for f in frags]
    model.embed_passages(texts[:8])  # warm-up: first-call costs are not throughput
    raw: list[float] = []
    runs: list[_IngestRun] = []
    for r in range(rounds):
        raw.append(timed(lambda: model.embed_passages(texts))[1])
        runs.append(_ingest_once(server_url, frags, model, tmp / f"emb{r}.sqlite", f"ingest{r}"))
    n, ing = len(texts), [r.seconds for r in runs]
    ratios = [a / b for a, b in zip(raw, ing, strict=True)]
    raw_rates, ing_rates = [n / s for s in raw], [n / s for s in ing]
    ratio_s, raw_s, ing_s = _spread(ratios), _spread(raw_rates), _spread(ing_rates)
    why = ingest_verdict(ratios)
    shares = [r.model_seconds / r.seconds for r in runs]
    return {
        "fragments": n,
        "rounds": rounds,
        "pairs": rounds,
        "written": runs[-1].written,
        "embedded_by_ingest": runs[-1].embedded,
        "embedded_by_ingest_runs": [r.embedded for r in runs],
        "raw_frag_per_s": raw_s["median"],
        "raw_frag_per_s_runs": raw_rates,
        "raw_frag_per_s_spread": raw_s,
        "ingest_frag_per_s": ing_s["median"],
        "ingest_frag_per_s_runs": ing_rates,
        "ingest_frag_per_s_spread": ing_s,
        "ingest_over_raw": ratio_s["median"],
        "ingest_over_raw_pairs": ratios,
        "ingest_over_raw_spread": ratio_s,
        "ingest_over_raw_iqr_share": ratio(ratio_s["iqr"], ratio_s["median"]),
        "ingest_over_raw_best": min(raw) / min(ing),
        "ingest_over_raw_mean": float(np.mean(raw) / np.mean(ing)),
        "conclusive": not why,
        "inconclusive_because": why,
        "embedder_share_of_ingest": max(shares),
        "embedder_share_of_ingest_median": float(np.median(shares)),
    }
