"""What every part of the bench shares: the corpus it runs on, its sizes, the question file, and
small timing helpers (durations in, percentiles and ratios out)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citegate.core import paths
from citegate.core.fragments import Fragment
from citegate.corpus.sources.gita import read_gita
from citegate.corpus.sources.lectures import read_lectures

CORPUS = "gita"
K = 16
QUESTIONS_FILE = paths.QUESTIONS / "sources" / "gitaverse" / "gitaverse_dev.jsonl"
STAGES = ("plan", "embed", "lanes", "fetch", "rerank", "cut")


@dataclass(frozen=True)
class Sizes:
    """How much work one run does."""

    ingest_frags: int
    questions: int
    ingest_rounds: int = 5  # interleaved (raw, ingest) pairs
    callers: int = 8  # the load part's threads sharing one Service, and its processes
    per_caller: int = 50  # questions each caller of the load part answers


FULL = Sizes(ingest_frags=600, questions=200)
QUICK = Sizes(ingest_frags=150, questions=40, ingest_rounds=3, per_caller=20)


def pcts(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean of durations, in milliseconds."""
    if not seconds:
        return {"p50_ms": math.nan, "p95_ms": math.nan, "mean_ms": math.nan}
    ms = np.asarray(seconds, dtype=float) * 1000.0
    p50, p95 = np.percentile(ms, [50, 95])
    return {"p50_ms": float(p50), "p95_ms": float(p95), "mean_ms": float(ms.mean())}


def ratio(a: float, b: float) -> float:
    """a / b, NaN when b is zero."""
    return float(a) / float(b) if b else math.nan


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(fn(), seconds it took)."""
    clock = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - clock


def read_questions(n: int, path: Path = QUESTIONS_FILE, every: int = 10) -> list[str]:
    """The "question" field of every `every`-th line of the question file, at most `n` of them."""
    with path.open(encoding="utf-8") as fh:
        lines = [line for line in fh if line.strip()]
    return [json.loads(line)["question"] for line in lines[::every]][:n]


def gita_fragments() -> list[Fragment]:
    """The whole `gita` corpus as ingest sees it: the book, then the lecture transcripts."""
    return [*read_gita(), *read_lectures()]
