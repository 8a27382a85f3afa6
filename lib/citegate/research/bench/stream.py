"""The bench's streaming part: how soon a streamed turn shows something, and what streaming costs.

On the bench's database (the `gita` corpus) and production's config searching it (fallback off,
the offline extractive composer), every question is first answered once (warm caches), then,
interleaved per question, answered whole (`Service.answer`) and streamed (`Service.stream`,
read to the end). Reported, per call: the time to the first event (the gate's decision, since
the turn began), the time from that decision to the first claim (compose and check; answered
questions only), the whole streamed turn and the whole answered turn; the headline ratio is the
streamed turn's p50 over the answered turn's (streaming is only a different way to read the
same turn, so it should cost nothing).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from citegate.models.embed import Embedder
from citegate.pipeline.service import Service
from citegate.pipeline.turn import EventKind
from citegate.research.bench.common import CORPUS, pcts, ratio

CONFIG = "production"


def _streamed(svc: Service, question: str) -> tuple[float, float | None, float]:
    """(first event ms, first claim ms after the decision or None, whole turn ms) of one turn."""
    clock = time.perf_counter()
    first = decided = claim = None
    for event in svc.stream(question, fallback=False):
        first = event.at_ms if first is None else first
        if event.kind == EventKind.DECISION:
            decided = event.at_ms
        if event.kind == EventKind.CLAIM and claim is None and decided is not None:
            claim = event.at_ms - decided
    return float(first or 0.0), claim, (time.perf_counter() - clock) * 1000.0


def bench_stream(
    url: str,
    questions: Sequence[str],
    embedder: Embedder,
    *,
    config: str = CONFIG,
    corpora: Sequence[str] = (CORPUS,),
) -> dict[str, Any]:
    """The streaming part (see the module docstring) on the database at `url`."""
    first, claim, streamed, whole = [], [], [], []
    with Service.open(config, corpora=corpora, url=url, embedder=embedder, pool_size=1) as svc:
        for q in questions:
            svc.answer(q, fallback=False)  # warm-up: the same caches for both ways of reading
        for q in questions:
            clock = time.perf_counter()
            svc.answer(q, fallback=False)
            whole.append(time.perf_counter() - clock)
            f, c, s = _streamed(svc, q)
            first.append(f / 1000.0)
            streamed.append(s / 1000.0)
            if c is not None:
                claim.append(c / 1000.0)
    out = {
        "config": config,
        "questions": len(questions),
        "answered": len(claim),
        "first_event": pcts(first),
        "first_claim_after_decision": pcts(claim),
        "streamed_turn": pcts(streamed),
        "answered_turn": pcts(whole),
    }
    out["stream_over_answer"] = ratio(
        out["streamed_turn"]["p50_ms"], out["answered_turn"]["p50_ms"]
    )
    return out


def stream_rows(res: dict[str, Any]) -> list[list[Any]]:
    """The streaming part as report rows: measure, p50, p95."""
    s = res["stream"]
    rows = [
        ["first event (the decision), since the turn began", s["first_event"]],
        [
            f"first claim after the decision ({s['answered']} answered)",
            s["first_claim_after_decision"],
        ],
        ["whole turn, streamed", s["streamed_turn"]],
        ["whole turn, answered", s["answered_turn"]],
    ]
    out = [[name, p["p50_ms"], p["p95_ms"]] for name, p in rows]
    out.append(["p50 streamed / answered", s["stream_over_answer"], ""])
    return out


__all__ = ["bench_stream", "stream_rows"]
