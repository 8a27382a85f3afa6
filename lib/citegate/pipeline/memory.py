"""Curated memory in retrieval: the notes lane, the pre-check, boost and the pinned note.

Editors keep notes apart from the corpus (`citegate memory import`, `store.memory`): **pinned**
(a citable answer to a specific question), **boost** (a topic that raises the rerank scores of
the fragments it cites) and **memory** (background that shapes framing, never quoted). A note's
trigger phrases and body chunks are embedded together, so a question that echoes the note's
substance finds it as well as one that echoes a trigger; its similarity to a question is its
best cosine over those units (`store.memory.note_hits`, one exact scan of a small table).

The pre-check (`precheck`) is a plain comparison, no LLM: the best pinned note's similarity
against `PipelineConfig.memory_threshold`. At or above it, memory already answers, and the
retrieval takes the lean policy (`lean_config`: one round, `lean_lane_k` deep, `lean_top_k`
notes); below it, the config's own wide policy. Every function here but `search` is pure, so a
study replays the decision for any threshold from the hits alone.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.types import (
    NOTE_KIND,
    Candidate,
    GateKind,
    GateReason,
    MemoryOutcome,
    NoteRole,
    NoteUse,
    Policy,
    RetrievalTrace,
)
from citegate.corpus.notes import NoteKind
from citegate.store.memory import NoteHit, note_hits

NOTE_LANE = "memory:pinned"  # the lane tag of a pinned note and of the verses it cites
MAX_FRAMING = 3  # memory notes handed to the composer as framing, best first

_ROLE = {NoteKind.PINNED: NoteRole.CITED, NoteKind.BOOST: NoteRole.BOOST}


def search(
    conn: psycopg.Connection, qvec: np.ndarray, cfg: PipelineConfig, embedder_id: str
) -> list[NoteHit]:
    """Every note of the searched corpora with its similarity to the question, best first."""
    return note_hits(conn, qvec, embedder_id, cfg.corpora)


def best_pinned(hits: Sequence[NoteHit]) -> NoteHit | None:
    """The pinned note most similar to the question (hits come best first), or None."""
    return next((h for h in hits if h.note.kind == NoteKind.PINNED), None)


def precheck(hits: Sequence[NoteHit], threshold: float) -> tuple[Policy, str]:
    """The policy and why: lean when the best pinned note's similarity reaches `threshold`."""
    best = best_pinned(hits)
    if best is None:
        return Policy.WIDE, "no pinned note in the searched corpora"
    op = "≥" if best.similarity >= threshold else "<"
    why = f"pinned note {best.note.key}: similarity {best.similarity:.4f} {op} {threshold:.4g}"
    return (Policy.LEAN if best.similarity >= threshold else Policy.WIDE), why


def threshold_for(kind: NoteKind, cfg: PipelineConfig) -> float:
    """The similarity from which a note of `kind` takes part: `boost_threshold` for a boost
    note (a topic, not an answer: its own threshold, measured on its own questions),
    `memory_threshold` for pinned and memory notes."""
    return cfg.boost_threshold if kind == NoteKind.BOOST else cfg.memory_threshold


def outcome(hits: Sequence[NoteHit], cfg: PipelineConfig, seconds: float = 0.0) -> MemoryOutcome:
    """What memory does for a question under `cfg`: the policy, and each note at or above its
    threshold (`threshold_for`) in its role (only the best pinned note is cited; memory notes frame, at most
    `MAX_FRAMING` of them)."""
    policy, why = precheck(hits, cfg.memory_threshold)
    best = best_pinned(hits)
    uses, framing = [], []
    for h in hits:
        if h.similarity < threshold_for(h.note.kind, cfg):
            continue
        if h.note.kind == NoteKind.MEMORY:
            if len(framing) >= MAX_FRAMING:
                continue
            framing.append(h.note.body)
            role = NoteRole.FRAMING
        elif h.note.kind == NoteKind.PINNED and h is not best:
            role = NoteRole.BELOW  # another pinned note: the best one answers
        else:
            role = _ROLE[h.note.kind]
        uses.append(NoteUse(h.note.key, str(h.note.kind), h.similarity, h.via, role))
    top = best.similarity if best is not None else 0.0
    return MemoryOutcome(
        policy, why, cfg.memory_threshold, top, tuple(uses), tuple(framing), seconds
    )


def lean_config(cfg: PipelineConfig) -> PipelineConfig:
    """The lean policy of `cfg`: one round, lanes `lean_lane_k` deep, `lean_top_k` notes."""
    return cfg.replace(
        max_fanout_rounds=1,
        lane_k=cfg.lean_lane_k,
        rerank_top_k=min(cfg.rerank_top_k, cfg.lean_top_k),
    )


def policy_config(cfg: PipelineConfig, policy: Policy) -> PipelineConfig:
    """The config retrieval collects with under `policy`."""
    return lean_config(cfg) if policy == Policy.LEAN else cfg


def boosted_labels(hits: Sequence[NoteHit], cfg: PipelineConfig) -> set[str]:
    """The addresses cited by the boost notes at or above `boost_threshold`."""
    return {
        label
        for h in hits
        if h.note.kind == NoteKind.BOOST and h.similarity >= cfg.boost_threshold
        for label in h.note.cites
    }


def boost(trace: RetrievalTrace, labels: set[str], amount: float) -> RetrievalTrace:
    """The trace with `amount` added to the rerank score of every candidate at a boosted address
    (the cosine, the gate's signal, is never touched). Unchanged when nothing is boosted."""
    if not labels or amount <= 0:
        return trace
    cands = [
        replace(c, rerank_score=(c.score if c.rerank_score is None else c.rerank_score) + amount)
        if c.addr_label in labels
        else c
        for c in trace.candidates
    ]
    return replace(trace, candidates=cands)


def note_id(key: str, corpus: str) -> int:
    """A pinned note's id among the notes: negative, so it never collides with a fragment id."""
    digest = hashlib.sha256(f"{corpus}\0{key}".encode()).hexdigest()
    return -int(digest[:12], 16) - 1


def note_candidate(hit: NoteHit) -> Candidate:
    """A pinned note as a final note: citable, addressed `note:<key>`, its body as text, its
    similarity (a cosine to the question) as score."""
    n = hit.note
    return Candidate(
        fragment_id=note_id(n.key, n.corpus),
        frag_key=n.address,
        corpus=n.corpus,
        kind=NOTE_KIND,
        source_id=n.source,
        track_id=None,
        start_ms=None,
        end_ms=None,
        addr_label=n.address,
        text=n.body,
        lang=n.lang,
        score=hit.similarity,
        lanes=(f"{NOTE_LANE}@r1",),
        round=1,
        text_len=len(n.body),
    )


def cited_ids(
    conn: psycopg.Connection, labels: Sequence[str], embedder_id: str, corpora: Sequence[str]
) -> dict[str, list[int]]:
    """Address -> ids of the fragments at that address in the searched corpora."""
    if not labels:
        return {}
    rows = conn.execute(
        "SELECT addr_label, id FROM fragments WHERE embedder_id = %s AND corpus = ANY(%s) "
        "AND addr_label = ANY(%s) ORDER BY id",
        (embedder_id, list(corpora), list(labels)),
    ).fetchall()
    out: dict[str, list[int]] = {}
    for label, fid in rows:
        out.setdefault(label, []).append(fid)
    return out


def answered_by(hits: Sequence[NoteHit], cfg: PipelineConfig) -> GateReason:
    """The decision record when a pinned note answers: the memory gate, its similarity and
    threshold."""
    best = best_pinned(hits)
    assert best is not None
    _, why = precheck(hits, cfg.memory_threshold)
    return GateReason(
        GateKind.MEMORY, f"{why}: memory answers", best.similarity, cfg.memory_threshold
    )


def timed_search(
    conn: psycopg.Connection, qvec: np.ndarray, cfg: PipelineConfig, embedder_id: str
) -> tuple[list[NoteHit], float]:
    """`search` and the seconds it took."""
    clock = time.perf_counter()
    hits = search(conn, qvec, cfg, embedder_id)
    return hits, time.perf_counter() - clock


__all__ = [
    "MAX_FRAMING",
    "NOTE_LANE",
    "answered_by",
    "best_pinned",
    "boost",
    "boosted_labels",
    "threshold_for",
    "cited_ids",
    "lean_config",
    "note_candidate",
    "note_id",
    "outcome",
    "policy_config",
    "precheck",
    "search",
    "timed_search",
]
