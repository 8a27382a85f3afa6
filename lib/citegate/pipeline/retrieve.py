"""The production retrieval: plan → lanes → pre-floor → cap → rerank → top-k → reserves → dedup,
with the coverage gate deciding on a second fanout round.

`retrieve` = `collect` (database and models, once) + `replay` (pure, no database, no model). Every
candidate a config could ever keep is in the trace, so `replay(trace, other_config)` gives exactly
what `retrieve(question, other_config)` would, as long as the collection keys agree. The cut
itself is `citegate.pipeline.cut`; the result types are `citegate.core.types` (also importable
from here).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import psycopg

from citegate.core.config import COLLECTION_KEYS, PipelineConfig, collection_mismatch
from citegate.core.errors import ConfigError
from citegate.core.inputs import clean_question
from citegate.core.types import (
    FORCING_LANES,
    KIND_GROUPS,
    Candidate,
    Decision,
    GateDecision,
    Policy,
    RetrievalResult,
    RetrievalTrace,
    RoundResult,
    Stage,
)
from citegate.models.embed import Embedder
from citegate.models.gate_model import LearnedGate
from citegate.models.rerank import Reranker
from citegate.pipeline import lane_batch, lanes, memory
from citegate.pipeline.cut import (
    cap,
    cut,
    dedup,
    lane_view,
    pre_floor,
    reserves,
    text_signature,
    top_k,
)
from citegate.pipeline.decide import decide
from citegate.pipeline.fusion import rrf_replay
from citegate.pipeline.gate import question_language, verdict
from citegate.pipeline.plan import OfflinePlanner, Planner, keywords
from citegate.store.memory import NoteHit, cited_ids, note_hits
from citegate.store.presence import require_fragments

# The version of what `collect` puts in a trace: which lanes run, how each ranks and breaks ties,
# which index the dense lanes walk, how the candidates are reranked. It is part of the key of every
# cached trace (`research.traces.collection_digest`), beside the collection settings and the
# models, so it must change with any code change that alters the candidates a trace holds for the
# same settings: a cached trace would otherwise be replayed as if this code had collected it. The
# cut, the gate and memory are replayed from the trace and leave it as it is.
RETRIEVAL_VERSION = "7"


def replay(trace: RetrievalTrace, cfg: PipelineConfig) -> RetrievalResult:
    """The result `retrieve` gives under `cfg`, computed from the trace alone. The gate applies
    the thresholds of the question's language (`gate.question_language(trace.question)`). A
    learned gate replays like the coverage gate here (its rounds decide the fanout). With
    `fanout: always` every collected round runs, whatever the gate says of round one."""
    mismatch = collection_mismatch(trace.collection, cfg.collection_key())
    if mismatch:
        raise ConfigError(f"cannot replay: collection settings differ {mismatch}")
    if cfg.max_fanout_rounds > trace.collection["max_fanout_rounds"]:
        raise ConfigError("cannot replay more fanout rounds than the trace collected")
    if cfg.arm == "rrf_hybrid":
        return rrf_replay(trace, cfg)
    language = question_language(trace.question)
    pool = lane_view(trace.candidates, cfg.pin_named_verses)
    rounds: list[RoundResult] = []
    for r in range(1, cfg.max_fanout_rounds + 1):
        notes, stage = cut([c for c in pool if c.round <= r], cfg)
        later = (c for c in pool if c.round > r)
        stage.update((c.fragment_id, Stage.UNUSED_LATER_ROUND) for c in later)
        rounds.append(RoundResult(r, tuple(notes), stage, verdict(notes, cfg, language)))
        if cfg.fanout == "gate" and rounds[-1].gate.decision != GateDecision.BETWEEN:
            break
    decision = rounds[-1].gate.retrieval_decision
    return RetrievalResult(rounds[-1].notes, decision, tuple(rounds), trace)


# ---------------------------------------------------------------- collection (database, models)


def _lane_hits(
    conn: psycopg.Connection,
    rounds: Sequence[tuple[Sequence[str], np.ndarray, int]],
    cfg: PipelineConfig,
    embedder_id: str,
    *,
    batched: bool = True,
) -> list[list[list[lanes.LaneHit]]]:
    """Every lane for every text of every round ((texts, vectors, depth) each): per round, per
    text, its hits. Batched, all rounds are one statement (`lane_batch.batch_hits`); unbatched, each
    lane runs once per text (the path it replaced, kept so a test can show both give the same
    trace). `cfg.exact_dense` makes the dense lanes exact scans instead of HNSW searches."""
    texts = [t for ts, _, _ in rounds for t in ts]
    if not texts:
        return [[] for _ in rounds]
    ks = [k for ts, _, k in rounds for _ in ts]
    vecs = np.vstack([vs for ts, vs, _ in rounds if len(ts)])
    if batched:
        flat = lane_batch.batch_hits(
            conn, texts, vecs, ks, embedder_id, cfg.corpora, cfg.address_trgm,
            exact=cfg.exact_dense, lexical_budget=cfg.lexical_budget,
            lexical_backend=cfg.lexical_backend, lexical_romanise=cfg.lexical_romanise,
        )  # fmt: skip
    else:
        flat = _single_hits(conn, texts, vecs, ks, cfg, embedder_id)
    out, start = [], 0
    for ts, _, _ in rounds:
        out.append(flat[start : start + len(ts)])
        start += len(ts)
    return out


def _tags(
    per_text: Sequence[Sequence[lanes.LaneHit]], tag: str, lex_ranks: dict[int, int] | None = None
) -> dict[int, list[str]]:
    """Fragment id -> its lane tags (`lane@round`), in text order, then lane order (dense groups,
    lexical, address); with `lex_ranks`, each fragment's best lexical rank is recorded too."""
    found: dict[int, list[str]] = {}
    for hits in per_text:
        for h in hits:
            found.setdefault(h.fragment_id, []).append(f"{h.lane}@{tag}")
            if lex_ranks is not None and h.lane == "lexical":
                lex_ranks[h.fragment_id] = min(lex_ranks.get(h.fragment_id, h.rank), h.rank)
    return found


def _single_hits(
    conn: psycopg.Connection,
    texts: Sequence[str],
    vecs: np.ndarray,
    ks: Sequence[int],
    cfg: PipelineConfig,
    embedder_id: str,
) -> list[list[lanes.LaneHit]]:
    """Every text's lanes, one statement per lane (the unbatched path); texts with equal vectors
    share one dense search at their largest depth, as in the batched statement."""
    which, depths = lane_batch.shared_searches(vecs, ks)
    first = {j: which.index(j) for j in range(len(depths))}
    dense = {
        j: {
            g: lanes.dense(
                conn, vecs[i], embedder_id, cfg.corpora, g, depths[j], exact=cfg.exact_dense
            )
            for g in KIND_GROUPS
        }
        for j, i in first.items()
    }
    out = []
    for text, j, depth in zip(texts, which, ks, strict=True):
        hits = [h for g in KIND_GROUPS for h in dense[j][g][:depth]]
        hits += lanes.lexical(
            conn, text, embedder_id, cfg.corpora, depth, cfg.lexical_budget, cfg.lexical_backend,
            cfg.lexical_romanise,
        )  # fmt: skip
        out.append(
            hits + lanes.address(conn, text, embedder_id, cfg.corpora, depth, cfg.address_trgm)
        )
    return out


def _exact_misses(
    conn: psycopg.Connection,
    qvec: np.ndarray,
    cfg: PipelineConfig,
    embedder_id: str,
    seen: set[int],
    *,
    batched: bool = True,
) -> dict[int, list[str]]:
    """Fragments an exact dense scan of each group finds that no lane found (the ANN misses)."""
    if batched:
        (hits,) = lane_batch.batch_hits(
            conn, [""], qvec[None, :], [cfg.lane_k], embedder_id, cfg.corpora,
            text_lanes=False, exact=True,
        )  # fmt: skip
    else:
        hits = [
            h
            for g in KIND_GROUPS
            for h in lanes.dense(conn, qvec, embedder_id, cfg.corpora, g, cfg.lane_k, exact=True)
        ]
    out: dict[int, list[str]] = {}
    for h in hits:
        if h.fragment_id not in seen:
            out.setdefault(h.fragment_id, []).append(f"exact:{h.lane.removeprefix('dense:')}@r1")
    return out


def collect(
    conn: psycopg.Connection,
    question: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    planner: Planner | None = None,
    *,
    exact_check: bool = False,
    batched_lanes: bool = True,
) -> RetrievalTrace:
    """Run the plan and every lane (both fanout rounds, and the named lane on the question),
    fetch cosines, rerank; build the trace.
    `batched_lanes=False` runs each lane once per text instead of one statement for both rounds
    (same trace; kept for the equality test and the bench). A corpus of `cfg.corpora` that
    holds no fragment for the embedder is refused first (`store.presence.require_fragments`:
    `EmptyCorpus`), so no trace of an empty search is ever made or answered "insufficient"."""
    if embedder.id != cfg.embedder:
        raise ConfigError(f"config names embedder {cfg.embedder!r} but {embedder.id!r} is in use")
    require_fragments(conn, embedder.id, cfg.corpora)
    t: dict[str, float] = {}
    clock = time.perf_counter()
    plan = (planner or OfflinePlanner()).plan(question)
    t["plan"] = time.perf_counter() - clock
    texts1 = plan.texts()
    texts2 = [keywords(question)] if cfg.max_fanout_rounds >= 2 else []
    clock = time.perf_counter()
    vecs = embedder.embed_queries([question, *texts1, *texts2])
    t["embed"] = time.perf_counter() - clock
    clock = time.perf_counter()
    rounds = [(texts1, vecs[1 : 1 + len(texts1)], cfg.lane_k)]
    if texts2:
        rounds.append((texts2 + [question], np.vstack([vecs[-1], vecs[0]]), cfg.lane_k * 2))
    per_round = _lane_hits(conn, rounds, cfg, embedder.id, batched=batched_lanes)
    lex_ranks: dict[int, int] = {}
    r1 = _tags(per_round[0], "r1", lex_ranks)
    r2 = _tags(per_round[1], "r2") if texts2 else {}
    misses = (
        _exact_misses(conn, vecs[0], cfg, embedder.id, set(r1) | set(r2), batched=batched_lanes)
        if exact_check
        else {}
    )
    named = _tags([lanes.named(conn, question, embedder.id, cfg.corpora, cfg.lane_k)], "r1")
    t["lanes"] = time.perf_counter() - clock
    clock = time.perf_counter()
    rows = {r["id"]: r for r in lanes.fetch(conn, vecs[0], [*r1, *r2, *misses, *named])}
    t["fetch"] = time.perf_counter() - clock
    cands = [
        _candidate(
            rows[i],
            r1.get(i, []) + named.get(i, []) + r2.get(i, []) + misses.get(i, []),
            1 if i in r1 or i in named or i in misses else 2,
            i in misses and i not in r1 and i not in named,
            lex_ranks.get(i),
        )
        for i in rows
    ]
    clock = time.perf_counter()
    cands = _rerank(question, cands, cfg, reranker)
    t["rerank"] = time.perf_counter() - clock
    cands.sort(key=lambda c: (c.round, -c.score, c.fragment_id))
    return RetrievalTrace(question, plan, cfg.collection_key(), embedder.id, reranker.id, cands, t)


def _candidate(
    row: dict[str, Any], lane_tags: list[str], rnd: int, missed: bool, lex_rank: int | None
) -> Candidate:
    fields_ = {k: row[k] for k in lanes.FRAGMENT_COLUMNS if k not in ("id", "book", "loc_token")}
    if missed:
        lane_tags = [t for t in lane_tags if t.startswith("exact:")]
    return Candidate(
        text_sig=text_signature(row["text"]),
        text_len=len(row["text"]),
        lex_rank=lex_rank,
        fragment_id=row["id"],
        score=float(row["cosine"]),
        lanes=tuple(lane_tags),
        round=rnd,
        ann_missed=missed,
        **fields_,
    )


def _rerank(
    question: str,
    cands: list[Candidate],
    cfg: PipelineConfig,
    reranker: Reranker,
) -> list[Candidate]:
    """Rerank every candidate at/above the sweep floor (or forced) once, so replays stay exact."""
    if reranker.id != cfg.reranker:
        raise ConfigError(f"config names reranker {cfg.reranker!r} but {reranker.id!r} is in use")
    todo = [
        i
        for i, c in enumerate(cands)
        if not c.ann_missed and (c.forced or c.score >= cfg.rerank_sweep_floor)
    ]
    scores = reranker.score(question, [cands[i] for i in todo]) if todo else []
    out = list(cands)
    for i, s in zip(todo, scores, strict=True):
        out[i] = replace(cands[i], rerank_score=float(s))
    return out


def retrieve(
    conn: psycopg.Connection,
    question: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    planner: Planner | None = None,
    *,
    exact_check: bool = False,
    gate: LearnedGate | None = None,
    policy: Policy | None = None,
) -> RetrievalResult:
    """The production entry point: the final notes, the gate decision (and which gate made it,
    and why: `result.decided_by`), what curated memory did (`result.memory`) and the full trace.

    With `cfg.memory` on, the curated-note lane runs first and its pre-check picks the policy (`policy`
    forces one: a study compares both on the same question): lean collects one shallow round,
    wide the config's own. Boost notes raise the rerank scores of what they cite before the cut;
    a pinned note that answers leads the final notes with the verses it cites, and the decision
    is then the memory gate's. The coverage rounds decide the fanout; with gate=learned the
    `LearnedGate` then decides (`gate`, else the model file the config names,
    `store.production.load_gate`). `QuestionError` for a question with nothing to search or too
    long to be one (`inputs.clean_question`); `EmptyCorpus` for a corpus without fragments
    (`collect`)."""
    question = clean_question(question)
    hits: list[NoteHit] = []
    seconds = 0.0
    qvec = embedder.embed_queries([question])[0] if cfg.memory else None
    if qvec is not None:
        clock = time.perf_counter()
        hits = note_hits(conn, qvec, embedder.id, cfg.corpora)
        seconds = time.perf_counter() - clock
    check = memory.precheck(hits, cfg.memory_threshold, question)
    mem = memory.outcome(hits, cfg, check, seconds) if cfg.memory else None
    chosen = policy or (mem.policy if mem is not None else Policy.WIDE)
    run_cfg = memory.policy_config(cfg, chosen)
    trace = collect(conn, question, run_cfg, embedder, reranker, planner, exact_check=exact_check)
    if mem is not None:
        trace.timings["memory"] = seconds
    boosted = memory.boost(trace, memory.boosted_labels(hits, cfg), cfg.memory_boost)
    clock = time.perf_counter()
    result = replay(boosted, run_cfg)
    trace.timings["cut"] = time.perf_counter() - clock
    clock = time.perf_counter()
    result = decide(conn, result, run_cfg, gate)
    trace.timings["gate"] = time.perf_counter() - clock
    if mem is None or qvec is None:
        return result
    if chosen != mem.policy:
        mem = replace(mem, policy=chosen, reason=f"{mem.reason} (policy {chosen} asked for)")
    return with_memory(conn, replace(result, memory=mem), check, cfg, embedder.id, qvec)


def with_memory(
    conn: psycopg.Connection,
    result: RetrievalResult,
    check: memory.Precheck,
    cfg: PipelineConfig,
    embedder_id: str,
    qvec: np.ndarray,
) -> RetrievalResult:
    """`result` led by the pinned note that answers (`check.answer`, the pre-check's decision)
    and the verses it cites that the cut did not keep (each address's passage nearest the
    question vector `qvec`), decided by the memory gate; unchanged when no pinned note
    answers."""
    best = check.answer
    if best is None:
        return result
    have = {c.addr_label for c in result.notes}
    missing = [label for label in best.note.cites if label not in have]
    ids = cited_ids(conn, missing, embedder_id, cfg.corpora)
    rows = lanes.fetch(conn, qvec, [i for v in ids.values() for i in v])
    nearest: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (-r["cosine"], r["id"])):
        nearest.setdefault(row["addr_label"], row)
    tag = [f"{memory.NOTE_LANE}@r1"]
    cited = [_candidate(nearest[a], tag, 1, False, None) for a in missing if a in nearest]
    notes = (memory.note_candidate(best), *cited, *result.notes)
    return replace(
        result,
        notes=notes,
        decision=Decision.ANSWER,
        decided_by=memory.answered_by(check),
    )


__all__ = [
    "COLLECTION_KEYS",
    "FORCING_LANES",
    "RETRIEVAL_VERSION",
    "Candidate",
    "RetrievalResult",
    "RetrievalTrace",
    "RoundResult",
    "cap",
    "collect",
    "cut",
    "dedup",
    "pre_floor",
    "replay",
    "reserves",
    "retrieve",
    "text_signature",
    "top_k",
    "with_memory",
]
