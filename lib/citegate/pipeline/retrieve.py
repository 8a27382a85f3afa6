"""The production retrieval: plan → lanes → pre-floor → cap → rerank → top-k → reserves → dedup,
with the coverage gate deciding on a second fanout round.

`retrieve` = `collect` (database and models, once) + `replay` (pure, no database, no model). Every
candidate a config could ever keep is in the trace, so `replay(trace, other_config)` gives exactly
what `retrieve(question, other_config)` would, as long as the collection keys agree.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import psycopg

from citegate.core.config import COLLECTION_KEYS, PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.fragments import LIBRARY_KINDS
from citegate.models.embed import Embedder
from citegate.models.rerank import Reranker
from citegate.pipeline import lanes
from citegate.pipeline.gate import GateVerdict, verdict
from citegate.pipeline.plan import OfflinePlanner, Planner, QueryPlan, clean_question, keywords

FORCING_LANES = ("lexical", "address")
# Bump when lanes or collection change what a trace holds: cached traces are keyed on it.
RETRIEVAL_VERSION = "3"


@dataclass(frozen=True)
class Candidate:
    """A fragment found by at least one lane. `score` is always its true cosine to the question."""

    fragment_id: int
    frag_key: str
    corpus: str
    kind: str
    source_id: str
    track_id: str | None
    start_ms: int | None
    end_ms: int | None
    addr_label: str | None
    text: str
    lang: str
    score: float
    lanes: tuple[str, ...]
    round: int
    rerank_score: float | None = None
    ann_missed: bool = False  # found only by exact search: the HNSW index lost it
    text_sig: str = ""  # digest of the normalized text: dedup works on slim traces too
    text_len: int = 0  # characters of text (slim traces keep it for per-source context caps)
    lex_rank: int | None = None  # best round-1 rank in the lexical lane (for the RRF arm)

    @cached_property
    def forced(self) -> bool:
        """Lexical and address hits pass the cosine pre-floor regardless of their cosine."""
        return any(lane.startswith(FORCING_LANES) for lane in self.lanes)

    @cached_property
    def pinned(self) -> bool:
        """Named by a canonical address in the question ("BG 2.13"): the user asked for this
        source, so it also passes the cap and ranks first."""
        return any(lane.startswith("address:exact") for lane in self.lanes)

    def rank_key(self) -> tuple[bool, float, float, int]:
        """Pinned first, then rerank score, then cosine, then id (deterministic ties)."""
        rr = self.score if self.rerank_score is None else self.rerank_score
        return (not self.pinned, -rr, -self.score, self.fragment_id)


@dataclass(frozen=True)
class RoundResult:
    """The cut and gate of one fanout round."""

    round: int
    notes: tuple[Candidate, ...]
    stage: dict[int, str]
    gate: GateVerdict


@dataclass
class RetrievalTrace:
    """Everything a retrieval saw, enough to replay its cut under another config."""

    question: str
    plan: QueryPlan
    collection: dict[str, Any]
    embedder_id: str
    reranker_id: str
    candidates: list[Candidate]
    timings: dict[str, float] = field(default_factory=dict)

    def slim(self) -> RetrievalTrace:
        """A copy without candidate texts (replay needs only `text_sig`): what the cache stores."""
        cands = [replace(c, text="") for c in self.candidates]
        return RetrievalTrace(
            self.question,
            self.plan,
            self.collection,
            self.embedder_id,
            self.reranker_id,
            cands,
            dict(self.timings),
        )

    def to_frame(self, config: PipelineConfig | None = None) -> Any:
        """One row per candidate: lanes, cosine, rerank, and the stage that kept or dropped it."""
        import pandas as pd

        result = replay(self, config) if config else None
        rows = []
        for c in self.candidates:
            row = {k: v for k, v in asdict(c).items() if k != "text"}
            row["lanes"] = ",".join(c.lanes)
            row["forced"] = c.forced
            row["stage"] = result.stage.get(c.fragment_id, "") if result else ""
            rows.append(row)
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class RetrievalResult:
    """What the pipeline returns: the final notes, the gate decision, and the trace."""

    notes: tuple[Candidate, ...]
    decision: str  # "answer" | "insufficient" | "weak"
    rounds: tuple[RoundResult, ...]
    trace: RetrievalTrace

    @property
    def stage(self) -> dict[int, str]:
        """Fate of every candidate in the last round run."""
        return self.rounds[-1].stage

    @property
    def max_score(self) -> float:
        """Max cosine of the final ranked set (the gate's signal)."""
        return self.rounds[-1].gate.max_score


# ---------------------------------------------------------------- the cut (pure functions)


def pre_floor(pool: Sequence[Candidate], floor: float) -> tuple[list[Candidate], list[Candidate]]:
    """Split into (kept, dropped) by cosine; lexical and address hits are always kept."""
    kept = [c for c in pool if c.forced or c.score >= floor]
    return kept, [c for c in pool if not (c.forced or c.score >= floor)]


def cap(pool: Sequence[Candidate], n: int) -> tuple[list[Candidate], list[Candidate]]:
    """Keep the top n by cosine (pinned address hits first)."""
    ordered = sorted(pool, key=lambda c: (not c.pinned, -c.score, c.fragment_id))
    return ordered[:n], ordered[n:]


def top_k(pool: Sequence[Candidate], k: int) -> tuple[list[Candidate], list[Candidate]]:
    """Keep the first k by rerank *rank* (no absolute rerank threshold exists on purpose)."""
    ordered = sorted(pool, key=Candidate.rank_key)
    return ordered[:k], ordered[k:]


def _group(kind: str) -> str:
    return "verse" if kind == "verse" else "library" if kind in LIBRARY_KINDS else "other"


def reserves(
    top: Sequence[Candidate],
    rest: Sequence[Candidate],
    cfg: PipelineConfig,
) -> list[Candidate]:
    """Candidates from `rest` (in rank order) admitted so that the final notes hold at least
    `reserve_verses` verses and `reserve_library` library passages, each with cosine ≥ the floor."""
    need = {"verse": cfg.reserve_verses, "library": cfg.reserve_library}
    for c in top:
        if _group(c.kind) in need:
            need[_group(c.kind)] -= 1
    admitted = []
    for c in sorted(rest, key=Candidate.rank_key):
        g = _group(c.kind)
        if need.get(g, 0) > 0 and c.score >= cfg.reserve_floor:
            admitted.append(c)
            need[g] -= 1
    return admitted


def text_signature(text: str) -> str:
    """Digest of the case- and whitespace-normalized text (what dedup compares)."""
    return hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


def _overlap(a: Candidate, b: Candidate) -> float:
    if a.track_id is None or a.track_id != b.track_id:
        return 0.0
    inter = min(a.end_ms, b.end_ms) - max(a.start_ms, b.start_ms)  # type: ignore[operator]
    shorter = min(a.end_ms - a.start_ms, b.end_ms - b.start_ms)  # type: ignore[operator]
    return max(inter, 0) / shorter if shorter > 0 else 0.0


def dedup(
    notes: Sequence[Candidate], min_overlap: float
) -> tuple[list[Candidate], list[Candidate]]:
    """Drop a note whose text repeats an earlier one, or a window overlapping an earlier window of
    the same track by at least `min_overlap` of the shorter one. Earlier = better ranked."""
    kept: list[Candidate] = []
    dropped: list[Candidate] = []
    seen_text: set[str] = set()
    for c in notes:
        norm = c.text_sig or text_signature(c.text)
        if norm in seen_text or any(_overlap(c, k) >= min_overlap for k in kept):
            dropped.append(c)
            continue
        seen_text.add(norm)
        kept.append(c)
    return kept, dropped


def cut(pool: Sequence[Candidate], cfg: PipelineConfig) -> tuple[list[Candidate], dict[int, str]]:
    """Apply the cut in the production order; returns the notes and each candidate's fate."""
    stage: dict[int, str] = {c.fragment_id: "ann_missed" for c in pool if c.ann_missed}
    live = [c for c in pool if not c.ann_missed]
    live, dropped = pre_floor(live, cfg.pre_floor)
    stage.update((c.fragment_id, "dropped:pre_floor") for c in dropped)
    live, dropped = cap(live, cfg.cap)
    stage.update((c.fragment_id, "dropped:cap") for c in dropped)
    top, rest = top_k(live, cfg.rerank_top_k)
    extra = reserves(top, rest, cfg)
    stage.update((c.fragment_id, "dropped:top_k") for c in rest)
    stage.update((c.fragment_id, "kept:top_k") for c in top)
    stage.update((c.fragment_id, "kept:reserve") for c in extra)
    notes, dropped = dedup([*top, *extra], cfg.dedup_overlap)
    stage.update((c.fragment_id, "dropped:dedup") for c in dropped)
    return notes, stage


def compact(notes: Sequence[Candidate], cited_ids: Sequence[int]) -> list[Candidate]:
    """Before generation, keep only the notes the plan cites (in citation order, no repeats)."""
    by_id = {c.fragment_id: c for c in notes}
    return [by_id[i] for i in dict.fromkeys(cited_ids) if i in by_id]


def replay(trace: RetrievalTrace, cfg: PipelineConfig) -> RetrievalResult:
    """The result `retrieve` gives under `cfg`, computed from the trace alone."""
    mismatch = {
        k: (trace.collection.get(k), v)
        for k, v in cfg.collection_key().items()
        if k != "max_fanout_rounds" and _norm(trace.collection.get(k)) != _norm(v)
    }
    if mismatch:
        raise ConfigError(f"cannot replay: collection settings differ {mismatch}")
    if cfg.max_fanout_rounds > trace.collection["max_fanout_rounds"]:
        raise ConfigError("cannot replay more fanout rounds than the trace collected")
    if cfg.arm == "rrf_hybrid":
        from citegate.pipeline.arms import rrf_replay

        return rrf_replay(trace, cfg)
    rounds: list[RoundResult] = []
    for r in range(1, cfg.max_fanout_rounds + 1):
        notes, stage = cut([c for c in trace.candidates if c.round <= r], cfg)
        stage.update((c.fragment_id, "unused:later_round") for c in trace.candidates if c.round > r)
        rounds.append(RoundResult(r, tuple(notes), stage, verdict(notes, cfg)))
        if rounds[-1].gate.decision != "between":
            break
    decision = rounds[-1].gate.retrieval_decision
    return RetrievalResult(rounds[-1].notes, decision, tuple(rounds), trace)


def _norm(v: Any) -> Any:
    return list(v) if isinstance(v, tuple | list) else v


# ---------------------------------------------------------------- collection (database, models)


def _lane_hits(
    conn: psycopg.Connection,
    texts: Sequence[str],
    vecs: np.ndarray,
    cfg: PipelineConfig,
    embedder_id: str,
    depth: int,
    tag: str,
    lex_ranks: dict[int, int] | None = None,
) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for text, vec in zip(texts, vecs, strict=True):
        hits = [
            h
            for g in lanes.KIND_GROUPS
            for h in lanes.dense(conn, vec, embedder_id, cfg.corpora, g, depth)
        ]
        hits += lanes.lexical(conn, text, embedder_id, cfg.corpora, depth)
        hits += lanes.address(conn, text, embedder_id, cfg.corpora, depth, cfg.address_trgm)
        for h in hits:
            found.setdefault(h.fragment_id, []).append(f"{h.lane}@{tag}")
            if lex_ranks is not None and h.lane == "lexical":
                lex_ranks[h.fragment_id] = min(lex_ranks.get(h.fragment_id, h.rank), h.rank)
    return found


def _exact_misses(
    conn: psycopg.Connection,
    qvec: np.ndarray,
    cfg: PipelineConfig,
    embedder_id: str,
    seen: set[int],
) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for g in lanes.KIND_GROUPS:
        for h in lanes.dense(conn, qvec, embedder_id, cfg.corpora, g, cfg.lane_k, exact=True):
            if h.fragment_id not in seen:
                out.setdefault(h.fragment_id, []).append(f"exact:{g}@r1")
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
) -> RetrievalTrace:
    """Run the plan and every lane (both fanout rounds), fetch cosines, rerank; build the trace."""
    if embedder.id != cfg.embedder:
        raise ConfigError(f"config names embedder {cfg.embedder!r} but {embedder.id!r} is in use")
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
    lex_ranks: dict[int, int] = {}
    r1 = _lane_hits(
        conn, texts1, vecs[1 : 1 + len(texts1)], cfg, embedder.id, cfg.lane_k, "r1", lex_ranks
    )
    r2: dict[int, list[str]] = {}
    if texts2:
        r2 = _lane_hits(
            conn,
            texts2 + [question],
            np.vstack([vecs[-1], vecs[0]]),
            cfg,
            embedder.id,
            cfg.lane_k * 2,
            "r2",
        )
    misses = (
        _exact_misses(conn, vecs[0], cfg, embedder.id, set(r1) | set(r2)) if exact_check else {}
    )
    t["lanes"] = time.perf_counter() - clock
    clock = time.perf_counter()
    rows = {r["id"]: r for r in lanes.fetch(conn, vecs[0], [*r1, *r2, *misses])}
    t["fetch"] = time.perf_counter() - clock
    cands = [
        _candidate(
            rows[i],
            r1.get(i, []) + r2.get(i, []) + misses.get(i, []),
            1 if i in r1 or i in misses else 2,
            i in misses and i not in r1,
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
) -> RetrievalResult:
    """The production entry point: the final notes, the gate decision and the full trace.
    `QuestionError` for a question with nothing to search (`plan.clean_question`)."""
    question = clean_question(question)
    trace = collect(conn, question, cfg, embedder, reranker, planner, exact_check=exact_check)
    clock = time.perf_counter()
    result = replay(trace, cfg)
    trace.timings["cut"] = time.perf_counter() - clock
    return result


__all__ = [
    "Candidate",
    "RetrievalTrace",
    "RetrievalResult",
    "RoundResult",
    "retrieve",
    "replay",
    "collect",
    "cut",
    "compact",
    "COLLECTION_KEYS",
]
