"""Vectorised replay: one config over every trace of a question set as numpy array operations.

`replay_many(traces, cfg)` gives, question by question, exactly the notes (same fragment ids, same
order), the decision and the max cosine that `citegate.pipeline.retrieve.replay(trace, cfg)` gives
for the production arm; `replay_results` builds the full `RetrievalResult` objects (every round,
every candidate's stage) when a caller needs them. For `cfg.arm == "rrf_hybrid"` both fall back to
the scalar `replay`, trace by trace (the RRF arm is not vectorised).

How: `pack(traces)` concatenates every trace's candidates (question i owns the slice
`starts[i]:starts[i + 1]`) and precomputes what no config changes: the cap order (pinned first, then
cosine, then id) and the rerank rank order (`Candidate.rank_key`) as two global permutations sorted
by question first, the kind groups, and which candidates could ever be deduplicated against another.
A config then costs: masks for the round and the pre-floor, a segmented running count in cap order
(the cap), one in rank order (top-k), two more for the verse and library reserves (with their
floor), a segmented max for the gate, whose thresholds are per-question arrays (the config's, or
its `language_thresholds` entry for the question's language, told once at pack time by
`gate.question_language`, as the scalar replay does). The notes are then simply the selected candidates in rank
order (the reserves come from below the top k, so top-then-reserves *is* rank order). Dedup is
greedy and sequential ("keep a note unless it repeats the text of, or overlaps, an earlier kept
one"); the pack lists the only candidate pairs that can ever conflict (same text digest, or
windows of one track overlapping by a positive length, with `cut._overlap`'s float), and a
config runs the greedy as a few rounds over those pairs, all questions at once. Round two is evaluated for the questions
whose round-one gate says `between` when the config allows two rounds.

Pack once, replay many configs: that is what a sweep does.

One known difference: a track window without a full span (start or end None) overlaps nothing
here, where the scalar dedup would raise a TypeError comparing it; collected traces always have
spans on track windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.fragments import LIBRARY_KINDS
from citegate.core.types import (
    Candidate,
    Decision,
    RetrievalResult,
    RetrievalTrace,
    RoundResult,
    Stage,
)
from citegate.pipeline.cut import text_signature
from citegate.pipeline.gate import question_language, verdict
from citegate.pipeline.retrieve import replay

TRANSCRIPT = "track_transcript"


@dataclass(frozen=True)
class VectorResult:
    """What a replay decides for one question: the notes' fragment ids (in note order), the
    decision and the max cosine of the notes (the gate's signal), and the rounds run."""

    notes: tuple[int, ...]
    decision: Decision
    max_score: float
    rounds: int


@dataclass(frozen=True)
class PackedTraces:
    """Every candidate of a list of traces as flat arrays (see the module docstring).

    Arrays named `*_r` are in rank order (`rank_perm` applied); the others are in trace order."""

    traces: tuple[RetrievalTrace, ...]
    starts: np.ndarray  # question i owns candidates starts[i]:starts[i + 1]
    seg: np.ndarray  # question index of each candidate
    score: np.ndarray
    forced: np.ndarray
    ann_missed: np.ndarray
    round: np.ndarray
    cap_perm: np.ndarray  # trace-order indices sorted by (question, cap order)
    rank_perm: np.ndarray  # trace-order indices sorted by (question, rank order)
    score_r: np.ndarray
    verse_r: np.ndarray
    library_r: np.ndarray
    transcript_r: np.ndarray
    fid_r: np.ndarray
    pairs: _Pairs  # candidate pairs dedup could ever compare and drop, in rank-order indices
    collections: tuple[tuple[dict[str, Any], tuple[int, ...]], ...]  # distinct, and who has it
    languages: np.ndarray  # each question's gate language (`gate.question_language`)

    @property
    def size(self) -> int:
        """How many questions (traces)."""
        return len(self.traces)


# ---------------------------------------------------------------- packing (config-independent)


def pack(traces: Sequence[RetrievalTrace]) -> PackedTraces:
    """Flatten `traces` and precompute the config-independent orders and flags."""
    cands = [c for t in traces for c in t.candidates]
    n = len(cands)
    counts = np.array([len(t.candidates) for t in traces], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    seg = np.repeat(np.arange(len(traces), dtype=np.int64), counts)
    score = np.fromiter((c.score for c in cands), np.float64, n)
    rr = np.fromiter(
        (c.score if c.rerank_score is None else c.rerank_score for c in cands), np.float64, n
    )
    fid = np.fromiter((c.fragment_id for c in cands), np.int64, n)
    kinds = [c.kind for c in cands]
    lanes = [c.lanes for c in cands]
    flags = _lane_flags(cands)
    forced = np.fromiter((flags[ls][0] for ls in lanes), bool, n)
    unpinned = ~np.fromiter((flags[ls][1] for ls in lanes), bool, n)
    # np.lexsort sorts by the LAST key first; it is stable, as `sorted` is.
    cap_perm = np.lexsort((fid, -score, unpinned, seg)).astype(np.int64)
    rank_perm = np.lexsort((fid, -score, -rr, unpinned, seg)).astype(np.int64)
    kind_code = {k: i for i, k in enumerate(dict.fromkeys(kinds))}
    kind = np.fromiter((kind_code[k] for k in kinds), np.int64, n)[rank_perm]
    return PackedTraces(
        traces=tuple(traces),
        starts=starts,
        seg=seg,
        score=score,
        forced=forced,
        ann_missed=np.fromiter((c.ann_missed for c in cands), bool, n),
        round=np.fromiter((c.round for c in cands), np.int64, n),
        cap_perm=cap_perm,
        rank_perm=rank_perm,
        score_r=score[rank_perm],
        verse_r=_kind_is(kind, kind_code, ("verse",)),
        library_r=_kind_is(kind, kind_code, tuple(k for k in LIBRARY_KINDS if k != "verse")),
        transcript_r=_kind_is(kind, kind_code, (TRANSCRIPT,)),
        fid_r=fid[rank_perm],
        pairs=_pairs(cands, seg, rank_perm),
        collections=_collections(traces),
        languages=np.array([question_language(t.question) for t in traces], dtype=object),
    )


def _lane_flags(cands: Sequence[Candidate]) -> dict[tuple[str, ...], tuple[bool, bool]]:
    """(forced, pinned) per distinct lane tuple, read from the candidates' own properties (they
    depend on the lanes alone, and few lane tuples repeat over many candidates)."""
    out: dict[tuple[str, ...], tuple[bool, bool]] = {}
    for c in cands:
        if c.lanes not in out:
            out[c.lanes] = (c.forced, c.pinned)
    return out


def _kind_is(kind: np.ndarray, codes: dict[str, int], names: Sequence[str]) -> np.ndarray:
    """Whether each coded kind is one of `names`."""
    return np.isin(kind, [codes[n] for n in names if n in codes])


def _collections(
    traces: Sequence[RetrievalTrace],
) -> tuple[tuple[dict[str, Any], tuple[int, ...]], ...]:
    """The distinct collection settings of the traces, each with the indices of its traces."""
    groups: dict[str, tuple[dict[str, Any], list[int]]] = {}
    for i, t in enumerate(traces):
        groups.setdefault(repr(sorted(t.collection.items())), (t.collection, []))[1].append(i)
    return tuple((coll, tuple(idx)) for coll, idx in groups.values())


@dataclass(frozen=True)
class _Pairs:
    """Pairs (first, later) of candidates of one question, in rank-order indices (first < later),
    that `cut.dedup` could ever compare and drop: the same text digest, or windows of the same
    track with a positive overlap (`overlap` is `cut._overlap`, the same float). Any other pair
    never conflicts for a `dedup_overlap` above 0."""

    first: np.ndarray
    later: np.ndarray
    same_text: np.ndarray
    overlap: np.ndarray


def _pairs(cands: Sequence[Candidate], seg: np.ndarray, rank_perm: np.ndarray) -> _Pairs:
    """Every candidate pair that can conflict in dedup (`_Pairs`, rank-order indices), found
    with sorts, not loops over pairs of candidates that cannot."""
    n = len(cands)
    track_ids = [c.track_id for c in cands]
    codes: dict[str, int] = {}
    sig = np.array(
        [codes.setdefault(c.text_sig or text_signature(c.text), len(codes)) for c in cands],
        dtype=np.int64,
    ).reshape(n)[rank_perm]
    seg_r = seg[rank_perm]
    text_pairs = _same_key_pairs(seg_r * max(len(codes), 1) + sig)
    tracks: dict[str, int] = {}
    track = np.array(
        [-1 if t is None else tracks.setdefault(t, len(tracks)) for t in track_ids],
        dtype=np.int64,
    ).reshape(n)[rank_perm]
    spans = [_span(c) if t is not None else (0, 0) for c, t in zip(cands, track_ids, strict=True)]
    start = np.array([a for a, _ in spans], dtype=np.int64).reshape(n)[rank_perm]
    end = np.array([b for _, b in spans], dtype=np.int64).reshape(n)[rank_perm]
    window_pairs = _overlapping_pairs(seg_r * max(len(tracks), 1) + track, track >= 0, start, end)
    first = np.concatenate([text_pairs[0], window_pairs[0]])
    later = np.concatenate([text_pairs[1], window_pairs[1]])
    key = np.unique(first * max(n, 1) + later)  # a pair can be both: keep it once, sorted
    first, later = key // max(n, 1), key % max(n, 1)
    inter = np.minimum(end[first], end[later]) - np.maximum(start[first], start[later])
    shorter = np.minimum(end[first] - start[first], end[later] - start[later])
    same_track = (track[first] >= 0) & (track[first] == track[later])
    ok = same_track & (shorter > 0)
    overlap = np.zeros(len(first), dtype=np.float64)
    overlap[ok] = np.maximum(inter[ok], 0) / shorter[ok]
    return _Pairs(first, later, sig[first] == sig[later], overlap)


def _span(c: Candidate) -> tuple[int, int]:
    """(start, end) of a track window; (0, 0), which overlaps nothing, without a full span (the
    scalar dedup would fail with a TypeError comparing such a window)."""
    if c.track_id is None or c.start_ms is None or c.end_ms is None:
        return 0, 0
    return c.start_ms, c.end_ms


def _same_key_pairs(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All index pairs (i < j) with equal `key`."""
    order = np.argsort(key, kind="stable")  # equal keys keep ascending index order
    _, at, count = np.unique(key[order], return_index=True, return_counts=True)
    firsts, laters = [], []
    for lo, m in zip(at[count > 1].tolist(), count[count > 1].tolist(), strict=True):
        a, b = np.triu_indices(m, 1)
        firsts.append(order[lo + a])
        laters.append(order[lo + b])
    if not firsts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(firsts), np.concatenate(laters)


def _overlapping_pairs(
    group: np.ndarray, has: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """All index pairs (i < j) of the same `group` (question × track) whose windows, both of
    positive length, overlap by a positive length."""
    idx = np.flatnonzero(has & (end > start))
    if len(idx) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    span = int(end[idx].max() - start[idx].min()) + 1
    base = start[idx].min()
    order = idx[np.lexsort((start[idx], group[idx]))]
    key = group[order] * (2 * span) + (start[order] - base)
    # later windows (by start) of the same group that start before this one ends
    stop = np.searchsorted(key, group[order] * (2 * span) + (end[order] - base), side="left")
    count = stop - np.arange(len(order)) - 1
    a = np.repeat(np.arange(len(order)), count)
    b = a + 1 + (np.arange(len(a)) - np.repeat(np.cumsum(count) - count, count))
    i, j = order[a], order[b]
    return np.minimum(i, j), np.maximum(i, j)


# ---------------------------------------------------------------- segmented array helpers


def _running(mask: np.ndarray, starts: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Inclusive running count of `mask` within each question's contiguous slice."""
    csum = np.cumsum(mask, dtype=np.int64)
    base = np.concatenate([[0], csum])[starts[:-1]]
    return csum - base[seg]


def _totals(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """How many of `mask` each question's slice holds."""
    csum = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    return csum[starts[1:]] - csum[starts[:-1]]


def _seg_max(values: np.ndarray, mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Max of `values` where `mask`, per question; 0.0 for a question with none (`gate.max_score`)."""
    out = np.zeros(len(starts) - 1, dtype=np.float64)
    if len(values) == 0:
        return out
    masked = np.where(mask, values, -np.inf)
    nonempty = starts[1:] > starts[:-1]
    out[nonempty] = np.maximum.reduceat(masked, starts[:-1][nonempty])
    out[_totals(mask, starts) == 0] = 0.0
    return out


# ---------------------------------------------------------------- one round of the cut


@dataclass(frozen=True)
class _Round:
    """One round's cut for every question: trace-order masks, rank-order selections, the gate."""

    pool: np.ndarray  # candidates of this round or earlier
    floor_ok: np.ndarray  # live and past the pre-floor
    capped: np.ndarray  # kept by the cap
    top_r: np.ndarray
    extra_r: np.ndarray
    final_r: np.ndarray  # the notes (after dedup), rank order
    max_score: np.ndarray
    lectures: np.ndarray


def _cut_round(p: PackedTraces, cfg: PipelineConfig, rnd: int, todo: np.ndarray) -> _Round:
    """The cut of round `rnd` (candidates of rounds ≤ rnd) for every question; dedup runs for the
    questions in `todo` only (the others' `final_r` is not used)."""
    pool = p.round <= rnd
    floor_ok = pool & ~p.ann_missed & (p.forced | (p.score >= cfg.pre_floor))
    in_cap = floor_ok[p.cap_perm]
    capped = np.zeros_like(floor_ok)
    capped[p.cap_perm] = in_cap & (_running(in_cap, p.starts, p.seg) <= cfg.cap)
    cr = capped[p.rank_perm]
    top_r = cr & (_running(cr, p.starts, p.seg) <= cfg.rerank_top_k)
    rest_r = cr & ~top_r
    extra_r = np.zeros_like(top_r)
    for group, want in ((p.verse_r, cfg.reserve_verses), (p.library_r, cfg.reserve_library)):
        need = want - _totals(top_r & group, p.starts)
        ok = rest_r & group & (p.score_r >= cfg.reserve_floor)
        extra_r |= ok & (_running(ok, p.starts, p.seg) <= need[p.seg])
    final_r = _dedup(p, top_r | extra_r, cfg.dedup_overlap, todo)
    return _Round(
        pool,
        floor_ok,
        capped,
        top_r,
        extra_r,
        final_r,
        _seg_max(p.score_r, final_r, p.starts),
        _totals(final_r & p.transcript_r, p.starts),
    )


def _dedup(p: PackedTraces, sel: np.ndarray, min_overlap: float, todo: np.ndarray) -> np.ndarray:
    """`cut.dedup` on the selected notes (rank order) of the questions in `todo`: the greedy
    "keep a note unless it conflicts with an earlier kept one", as rounds over the conflict
    pairs (a note is kept once every earlier conflicting note is settled and none kept)."""
    if min_overlap <= 0:  # every overlap is ≥ 0: only each question's first note survives
        return sel & (_running(sel, p.starts, p.seg) == 1)
    pr = p.pairs
    live = sel[pr.first] & sel[pr.later] & (pr.same_text | (pr.overlap >= min_overlap))
    live &= todo[p.seg[pr.first]]
    first, later = pr.first[live], pr.later[live]
    dropped = np.zeros_like(sel)
    open_ = np.zeros_like(sel)
    open_[first] = open_[later] = True  # notes not yet settled (only those in a conflict)
    while len(first):
        waiting = np.zeros_like(sel)
        waiting[later[open_[first]]] = True
        kept_now = open_ & ~waiting
        open_ &= ~kept_now
        hit = later[kept_now[first]]
        dropped[hit] = True
        open_[hit] = False
        keep = open_[first] & open_[later]
        first, later = first[keep], later[keep]
    return sel & ~dropped


def _thresholds(p: PackedTraces, cfg: PipelineConfig) -> dict[str, np.ndarray]:
    """Each coverage threshold as a per-question array: `cfg.thresholds(language)` of each
    question's language (the global values where the config has no entry for it)."""
    base = cfg.thresholds(None)
    out = {k: np.full(p.size, v, dtype=np.float64) for k, v in base.items()}
    for lang in cfg.language_thresholds:
        rows = p.languages == lang
        if rows.any():
            for k, v in cfg.thresholds(lang).items():
                out[k][rows] = v
    return out


def _decisions(
    r: _Round, cfg: PipelineConfig, t: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(between, decision code) per question: code 0 answer, 1 insufficient, 2 weak; `t`: the
    per-question thresholds (`_thresholds`)."""
    sufficient = (r.max_score >= t["sufficient_score"]) & (r.lectures >= cfg.sufficient_lectures)
    good = sufficient | (r.max_score >= t["good_enough_score"])
    bail = r.max_score < t["bail_out_score"]
    code = np.where(good, 0, np.where(bail, 1, 2))
    return code == 2, code


_DECISION = (Decision.ANSWER, Decision.INSUFFICIENT, Decision.WEAK)


# ---------------------------------------------------------------- replay


def check_replayable(p: PackedTraces, cfg: PipelineConfig) -> None:
    """The checks `replay` makes, once per distinct collection: `ConfigError` if a trace was
    collected under other collection settings or with fewer fanout rounds than `cfg` asks."""
    want = cfg.collection_key()
    for coll, _ in p.collections:
        mismatch = {
            k: (coll.get(k), v)
            for k, v in want.items()
            if k != "max_fanout_rounds" and _norm(coll.get(k)) != _norm(v)
        }
        if mismatch:
            raise ConfigError(f"cannot replay: collection settings differ {mismatch}")
        if cfg.max_fanout_rounds > coll["max_fanout_rounds"]:
            raise ConfigError("cannot replay more fanout rounds than the trace collected")


def _norm(v: Any) -> Any:
    return list(v) if isinstance(v, tuple | list) else v


def _rounds(p: PackedTraces, cfg: PipelineConfig) -> tuple[list[_Round], np.ndarray, np.ndarray]:
    """The rounds run, whether each question went to round two, and its final decision codes."""
    everyone = np.ones(p.size, dtype=bool)
    thresholds = _thresholds(p, cfg)
    first = _cut_round(p, cfg, 1, everyone)
    between, code = _decisions(first, cfg, thresholds)
    if cfg.max_fanout_rounds < 2 or not between.any():
        return [first], np.zeros(p.size, dtype=bool), code
    second = _cut_round(p, cfg, 2, between)
    _, code2 = _decisions(second, cfg, thresholds)
    return [first, second], between, np.where(between, code2, code)


def _as_packed(traces: Sequence[RetrievalTrace] | PackedTraces) -> PackedTraces:
    return traces if isinstance(traces, PackedTraces) else pack(traces)


def replay_many(
    traces: Sequence[RetrievalTrace] | PackedTraces, cfg: PipelineConfig
) -> list[VectorResult]:
    """`replay(trace, cfg)`'s notes (fragment ids), decision and max cosine for every trace, in
    order, computed as array operations (pass a `pack`ed set to replay many configs). The
    rrf_hybrid arm falls back to the scalar `replay`, trace by trace."""
    p = _as_packed(traces)
    if cfg.arm == "rrf_hybrid":
        return [_from_result(replay(t, cfg)) for t in p.traces]
    check_replayable(p, cfg)
    rounds, second, code = _rounds(p, cfg)
    last = rounds[-1]
    final_r = np.where(second[p.seg], last.final_r, rounds[0].final_r) if second.any() else None
    final_r = rounds[0].final_r if final_r is None else final_r
    mx = np.where(second, last.max_score, rounds[0].max_score).tolist()
    ids = p.fid_r[final_r].tolist()
    ends = np.cumsum(_totals(final_r, p.starts)).tolist()
    n_rounds = np.where(second, 2, 1).tolist()
    codes = code.tolist()
    return [
        VectorResult(tuple(ids[e - n : e]), _DECISION[codes[q]], mx[q], n_rounds[q])
        for q, (e, n) in enumerate(zip(ends, _totals(final_r, p.starts).tolist(), strict=True))
    ]


def _from_result(res: RetrievalResult) -> VectorResult:
    return VectorResult(
        tuple(c.fragment_id for c in res.notes), res.decision, res.max_score, len(res.rounds)
    )


def replay_results(
    traces: Sequence[RetrievalTrace] | PackedTraces, cfg: PipelineConfig
) -> list[RetrievalResult]:
    """Full `RetrievalResult`s (every round run, its notes, stages and gate), equal to
    `replay(trace, cfg)` for each trace; slower than `replay_many` (it builds the objects)."""
    p = _as_packed(traces)
    if cfg.arm == "rrf_hybrid":
        return [replay(t, cfg) for t in p.traces]
    check_replayable(p, cfg)
    rounds, second, code = _rounds(p, cfg)
    stages = [_stage_codes(p, r) for r in rounds]
    out = []
    for q, t in enumerate(p.traces):
        run = rounds if second[q] else rounds[:1]
        made = tuple(_round_result(p, q, t, n + 1, r, stages[n], cfg) for n, r in enumerate(run))
        out.append(RetrievalResult(made[-1].notes, _DECISION[int(code[q])], made, t))
    return out


# Stage codes in trace order; 0 = not in the pool of the round (a later round's candidate).
_STAGES = (
    Stage.UNUSED_LATER_ROUND,
    Stage.ANN_MISSED,
    Stage.DROPPED_PRE_FLOOR,
    Stage.DROPPED_CAP,
    Stage.DROPPED_TOP_K,
    Stage.KEPT_TOP_K,
    Stage.KEPT_RESERVE,
    Stage.DROPPED_DEDUP,
)


def _stage_codes(p: PackedTraces, r: _Round) -> np.ndarray:
    """Each candidate's fate in round `r`, as an index into `_STAGES` (trace order)."""
    code = np.zeros(len(p.score), dtype=np.int64)
    code[r.pool & p.ann_missed] = 1
    code[r.pool & ~p.ann_missed & ~r.floor_ok] = 2
    code[r.floor_ok & ~r.capped] = 3
    code[r.capped] = 4
    for mask_r, value in ((r.top_r, 5), (r.extra_r, 6), ((r.top_r | r.extra_r) & ~r.final_r, 7)):
        code[p.rank_perm[mask_r]] = value
    return code


def _round_result(
    p: PackedTraces,
    q: int,
    t: RetrievalTrace,
    rnd: int,
    r: _Round,
    codes: np.ndarray,
    cfg: PipelineConfig,
) -> RoundResult:
    lo, hi = int(p.starts[q]), int(p.starts[q + 1])
    local = (p.rank_perm[lo:hi][r.final_r[lo:hi]] - lo).tolist()
    notes = tuple(t.candidates[i] for i in local)
    stage = {
        c.fragment_id: _STAGES[k] for c, k in zip(t.candidates, codes[lo:hi].tolist(), strict=True)
    }
    return RoundResult(rnd, notes, stage, verdict(notes, cfg, p.languages[q]))


__all__ = [
    "PackedTraces",
    "VectorResult",
    "check_replayable",
    "pack",
    "replay_many",
    "replay_results",
]
