"""Vectorised replay: one config over every trace of a question set as numpy array operations.

`replay_many(traces, cfg)` gives, question by question, exactly the notes (same fragment ids, same
order), the decision and the max cosine that `citegate.pipeline.retrieve.replay(trace, cfg)` gives
for the production arm; `replay_results` builds the full `RetrievalResult` objects (every round,
every candidate's stage) when a caller needs them. For `cfg.arm == "rrf_hybrid"` both fall back to
the scalar `replay`, trace by trace (the RRF arm is not vectorised).

How: `pack(traces)` concatenates every trace's candidates (question i owns the slice
`starts[i]:starts[i + 1]`) and precomputes what no config changes: the cap order (pinned first,
then cosine, then id) and the rerank rank order (`Candidate.rank_key`) as two global permutations
sorted by question first, the kind groups, and which candidates could ever be deduplicated against
another. It reads each candidate once (one C-level attribute getter) and converts whole columns
with numpy; distinct strings and lane tuples are coded with a hash table.

A config then costs, per round: masks for the round and the pre-floor and a segmented running
count in cap order (the cap), over every candidate; then, over the candidates the cap kept only
(at most `cap` per question, in rank order): the top-k (a position within the question), the
verse and library reserves (with their floor), dedup, and a segmented max for the gate, whose
thresholds are per-question arrays (the config's, or its `language_thresholds` entry for the
question's language, told once at pack time by `gate.question_language`, as the scalar replay
does). The notes are then simply the selected candidates in rank order (the reserves come from
below the top k, so top-then-reserves *is* rank order). Dedup is greedy and sequential ("keep a
note unless it repeats the text of, or overlaps, an earlier kept one"); the pack lists the only
candidate pairs that can ever conflict (same text digest, or windows of one track overlapping by
a positive length, with `cut._overlap`'s float), and a config runs the greedy as a few rounds over
those pairs, all questions at once. Round two is evaluated for the questions whose round-one gate
says `between` when the config allows two rounds.

Pack once, replay many configs: that is what a sweep does.

One known difference: a track window without a full span (start or end None) overlaps nothing
here, where the scalar dedup would raise a TypeError comparing it; collected traces always have
spans on track windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
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

    Arrays named `*_c` are in cap order (`cap_perm` applied), `*_r` in rank order (`rank_perm`
    applied). Both orders sort by question first, so question i owns positions
    starts[i]:starts[i + 1] in either."""

    traces: tuple[RetrievalTrace, ...]
    starts: np.ndarray  # question i owns candidates starts[i]:starts[i + 1]
    counts: np.ndarray  # candidates per question
    cap_perm: np.ndarray  # trace-order indices sorted by (question, cap order)
    rank_perm: np.ndarray  # trace-order indices sorted by (question, rank order)
    cap_of_rank: np.ndarray  # the cap-order position of each rank-order position
    score_c: np.ndarray
    forced_c: np.ndarray
    alive_c: np.ndarray  # not ann_missed
    round_c: np.ndarray
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
    cands = list(chain.from_iterable(t.candidates for t in traces))
    n = len(cands)
    cols = _columns(cands)
    counts = np.array([len(t.candidates) for t in traces], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    seg = np.repeat(np.arange(len(traces), dtype=np.int64), counts)
    score = cols[:, _SCORE].astype(np.float64)
    rr, has_rr = _rerank(cols[:, _RR], score)
    fid = cols[:, _FID].astype(np.int64)
    forced, pinned = _lane_flags(cands, cols[:, _LANES])
    cap_perm, rank_perm = _orders(seg, ~pinned, score, rr if has_rr else None, fid)
    kind, kinds = _factorize(cols[:, _KIND])
    kind_code = {k: i for i, k in enumerate(kinds)}
    kind = kind[rank_perm]
    cap_of_rank = np.empty(n, dtype=np.int64)
    cap_of_rank[cap_perm] = np.arange(n, dtype=np.int64)
    return PackedTraces(
        traces=tuple(traces),
        starts=starts,
        counts=counts,
        cap_perm=cap_perm,
        rank_perm=rank_perm,
        cap_of_rank=cap_of_rank[rank_perm],
        score_c=score[cap_perm],
        forced_c=forced[cap_perm],
        alive_c=~cols[:, _ANN].astype(bool)[cap_perm],
        round_c=cols[:, _ROUND].astype(np.int64)[cap_perm],
        score_r=score[rank_perm],
        verse_r=_kind_is(kind, kind_code, ("verse",)),
        library_r=_kind_is(kind, kind_code, tuple(k for k in LIBRARY_KINDS if k != "verse")),
        transcript_r=_kind_is(kind, kind_code, (TRANSCRIPT,)),
        fid_r=fid[rank_perm],
        pairs=_pairs(cands, cols, seg, rank_perm),
        collections=_collections(traces),
        languages=np.array([question_language(t.question) for t in traces], dtype=object),
    )


# What `pack` reads of each candidate, in one C-level getter (one attribute walk per candidate).
_FIELDS = (
    "fragment_id",
    "score",
    "rerank_score",
    "kind",
    "lanes",
    "round",
    "ann_missed",
    "text_sig",
    "track_id",
    "start_ms",
    "end_ms",
)
_FID, _SCORE, _RR, _KIND, _LANES, _ROUND, _ANN, _SIG, _TRACK, _START, _END = range(len(_FIELDS))
_GET = attrgetter(*_FIELDS)


def _columns(cands: Sequence[Candidate]) -> np.ndarray:
    """The `_FIELDS` of every candidate as an (n, fields) object array: one getter call per
    candidate, then numpy converts whole columns (no per-field Python loop)."""
    width = len(_FIELDS)
    flat = np.fromiter(chain.from_iterable(map(_GET, cands)), object, len(cands) * width)
    return flat.reshape(len(cands), width)


def _rerank(col: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, bool]:
    """The rank order's score (`rerank_score`, or the cosine where there is none, as
    `Candidate.rank_key`), and whether any candidate has a rerank score."""
    none = np.equal(col, None)
    if none.all():
        return score, False
    rr = score.copy()
    rr[~none] = col[~none].astype(np.float64)
    return rr, True


def _factorize(col: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """(code per row, distinct values in first-seen order) of an object column; None gets -1.
    pandas' hash table hashes each value once, in C: the fastest for lane tuples (a tuple caches
    no hash) and for short strings."""
    import pandas as pd  # heavy: only a pack needs it

    codes, uniques = pd.factorize(col)
    return np.asarray(codes, dtype=np.int64), list(uniques)


def _dict_codes(col: np.ndarray) -> tuple[np.ndarray, int]:
    """(code per row, how many distinct) of an object column of strings, None -1, with a dict:
    faster than `_factorize` for long strings such as text digests, whose hash Python computes
    once and caches in the string (pandas hashes their UTF-8 bytes on every call)."""
    values = col.tolist()
    code: dict[Any, int] = dict.fromkeys(values, -1)
    distinct = [v for v in code if v is not None]
    code.update(zip(distinct, range(len(distinct)), strict=True))
    return np.fromiter(map(code.__getitem__, values), np.int64, len(values)), len(distinct)


def _orders(
    seg: np.ndarray, unpinned: np.ndarray, score: np.ndarray, rr: np.ndarray | None, fid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(cap_perm, rank_perm): every candidate sorted by question, then the cap order (pinned,
    cosine down, id) or the rank order (pinned, rerank score down, cosine down, id; the cap
    order itself when no candidate has a rerank score other than its cosine, as with the `none`
    reranker). Both refine one stable (cosine, id) sort."""
    base = np.lexsort((fid, -score))
    group = _small(seg * 2 + unpinned)[base]  # question, then pinned first
    cap_perm = base[np.argsort(group, kind="stable")].astype(np.int64)
    if rr is None or np.array_equal(rr, score):
        return cap_perm, cap_perm
    return cap_perm, base[np.lexsort((-rr[base], group))].astype(np.int64)


def _small(values: np.ndarray) -> np.ndarray:
    """Non-negative ints in the smallest integer dtype that holds them (numpy sorts 16-bit
    keys by radix, stably, in linear time)."""
    top = int(values.max()) if len(values) else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    return values


def _lane_flags(cands: Sequence[Candidate], col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forced, pinned) per candidate, read from one candidate's own properties per distinct lane
    tuple (they depend on the lanes alone, and few lane tuples repeat over many candidates)."""
    codes, uniques = _factorize(col)
    first = np.zeros(len(uniques), dtype=np.int64)
    first[codes] = np.arange(len(codes))  # one candidate of each tuple (any: same lanes)
    reps = [cands[i] for i in first.tolist()]
    forced = np.array([c.forced for c in reps], dtype=bool)
    pinned = np.array([c.pinned for c in reps], dtype=bool)
    return forced[codes], pinned[codes]


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
    question: np.ndarray  # whose candidates they are
    same_text: np.ndarray
    overlap: np.ndarray


def _pairs(
    cands: Sequence[Candidate], cols: np.ndarray, seg: np.ndarray, rank_perm: np.ndarray
) -> _Pairs:
    """Every candidate pair that can conflict in dedup (`_Pairs`, rank-order indices), found
    with sorts, not loops over pairs of candidates that cannot."""
    n = len(cands)
    sig_col = cols[:, _SIG]
    unsigned = np.flatnonzero(~sig_col.astype(bool))  # falsy, as `c.text_sig or ...` tests
    if len(unsigned):  # `cut.dedup` digests the text of a candidate without `text_sig`
        sig_col = sig_col.copy()
        sig_col[unsigned] = [text_signature(cands[i].text) for i in unsigned.tolist()]
    sig, distinct = _dict_codes(sig_col)
    sig = sig[rank_perm]
    seg_r = seg[rank_perm]
    text_pairs = _same_key_pairs(seg_r * max(distinct, 1) + sig)
    track, tracks = _factorize(cols[:, _TRACK])  # -1: no track
    start, end = _spans(cols, track)
    track, start, end = track[rank_perm], start[rank_perm], end[rank_perm]
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
    return _Pairs(first, later, seg_r[first], sig[first] == sig[later], overlap)


def _spans(cols: np.ndarray, track: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each track window; (0, 0), which overlaps nothing, without a track or a
    full span (the scalar dedup would fail with a TypeError comparing such a window)."""
    start, end = cols[:, _START], cols[:, _END]
    full = (track >= 0) & ~np.equal(start, None) & ~np.equal(end, None)
    out_start = np.zeros(len(track), dtype=np.int64)
    out_end = np.zeros(len(track), dtype=np.int64)
    out_start[full] = start[full].astype(np.int64)
    out_end[full] = end[full].astype(np.int64)
    return out_start, out_end


def _same_key_pairs(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All index pairs (i < j) with equal `key`."""
    order = np.argsort(key, kind="stable")  # equal keys keep ascending index order
    sorted_key = key[order]
    # for each position, how many later positions hold the same key
    stop = np.searchsorted(sorted_key, sorted_key, side="right")
    return _later_pairs(order, stop)


def _later_pairs(order: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (order[a], order[b]) for every a < b < stop[a], as (smaller, larger) index."""
    count = stop - np.arange(len(order)) - 1
    a = np.repeat(np.arange(len(order)), count)
    b = a + 1 + (np.arange(len(a)) - np.repeat(np.cumsum(count) - count, count))
    i, j = order[a], order[b]
    return np.minimum(i, j), np.maximum(i, j)


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
    return _later_pairs(order, stop)


# ---------------------------------------------------------------- segmented array helpers


def _seg_sum(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """How many of `mask` each question's slice bounds[i]:bounds[i + 1] holds."""
    csum = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    return csum[bounds[1:]] - csum[bounds[:-1]]


def _within(mask: np.ndarray, bounds: np.ndarray, counts: np.ndarray, limit: Any) -> np.ndarray:
    """Where `mask`'s inclusive running count within each question's slice is at most `limit`
    (a number, or one per question): the running count is the global cumulative sum less the
    sum before the slice, compared here without subtracting per element."""
    csum = np.cumsum(mask, dtype=np.int64)
    before = np.concatenate([[0], csum])[bounds[:-1]]
    return mask & (csum <= np.repeat(before + limit, counts))


def _seg_max(values: np.ndarray, mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Max of `values` where `mask`, per question; 0.0 for a question with none (`gate.max_score`)."""
    out = np.zeros(len(bounds) - 1, dtype=np.float64)
    if len(values) == 0:
        return out
    masked = np.where(mask, values, -np.inf)
    nonempty = bounds[1:] > bounds[:-1]
    out[nonempty] = np.maximum.reduceat(masked, bounds[:-1][nonempty])
    out[_seg_sum(mask, bounds) == 0] = 0.0
    return out


# ---------------------------------------------------------------- one round of the cut


@dataclass(frozen=True)
class _Round:
    """One round's cut for every question. The floor and the cap run over every candidate (cap
    order); what follows runs over the candidates the cap kept only: `kept` (their rank-order
    positions, ascending, so in rank order), question i owning kept[bounds[i]:bounds[i + 1]]."""

    floor_ok_c: np.ndarray  # in the pool, not ann_missed, past the pre-floor (cap order)
    capped_c: np.ndarray  # kept by the cap (cap order)
    kept: np.ndarray
    bounds: np.ndarray
    top: np.ndarray  # over `kept`: in the rerank top k
    extra: np.ndarray  # over `kept`: admitted by a reserve
    final: np.ndarray  # over `kept`: the notes (after dedup)
    max_score: np.ndarray
    lectures: np.ndarray


def _cut_round(p: PackedTraces, cfg: PipelineConfig, rnd: int, todo: np.ndarray) -> _Round:
    """The cut of round `rnd` (candidates of rounds ≤ rnd) for every question; dedup runs for the
    questions in `todo` only (the others' `final` is not used)."""
    ok_c = (p.round_c <= rnd) & p.alive_c & (p.forced_c | (p.score_c >= cfg.pre_floor))
    capped_c = _within(ok_c, p.starts, p.counts, cfg.cap)
    kept = np.flatnonzero(capped_c[p.cap_of_rank])
    bounds = np.searchsorted(kept, p.starts)
    counts = np.diff(bounds)
    top = np.arange(len(kept)) - np.repeat(bounds[:-1], counts) < cfg.rerank_top_k
    score = p.score_r[kept]
    extra = np.zeros_like(top)
    for group_r, want in ((p.verse_r, cfg.reserve_verses), (p.library_r, cfg.reserve_library)):
        group = group_r[kept]
        need = want - _seg_sum(top & group, bounds)
        extra |= _within(~top & group & (score >= cfg.reserve_floor), bounds, counts, need)
    final = _dedup(p, kept, bounds, counts, top | extra, cfg.dedup_overlap, todo)
    return _Round(
        ok_c,
        capped_c,
        kept,
        bounds,
        top,
        extra,
        final,
        _seg_max(score, final, bounds),
        _seg_sum(final & p.transcript_r[kept], bounds),
    )


def _dedup(
    p: PackedTraces,
    kept: np.ndarray,
    bounds: np.ndarray,
    counts: np.ndarray,
    sel: np.ndarray,
    min_overlap: float,
    todo: np.ndarray,
) -> np.ndarray:
    """`cut.dedup` on the selected notes `sel` (over `kept`, rank order) of the questions in
    `todo`: the greedy "keep a note unless it conflicts with an earlier kept one", as rounds over
    the conflict pairs (a note is kept once every earlier conflicting note is settled and none
    kept)."""
    if min_overlap <= 0:  # every overlap is ≥ 0: only each question's first note survives
        return _within(sel, bounds, counts, 1)
    sel_r = np.zeros(len(p.score_r), dtype=bool)
    sel_r[kept[sel]] = True
    pr = p.pairs
    live = sel_r[pr.first] & sel_r[pr.later] & (pr.same_text | (pr.overlap >= min_overlap))
    live &= todo[pr.question]
    first, later = pr.first[live], pr.later[live]
    if not len(first):
        return sel
    dropped = np.zeros_like(sel_r)
    open_ = np.zeros_like(sel_r)
    open_[first] = open_[later] = True  # notes not yet settled (only those in a conflict)
    while len(first):
        waiting = np.zeros_like(sel_r)
        waiting[later[open_[first]]] = True
        kept_now = open_ & ~waiting
        open_ &= ~kept_now
        hit = later[kept_now[first]]
        dropped[hit] = True
        open_[hit] = False
        keep = open_[first] & open_[later]
        first, later = first[keep], later[keep]
    return sel & ~dropped[kept]


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
    notes = [_note_ids(p, r) for r in rounds]
    used = np.where(second, 1, 0).tolist()
    mx = np.where(second, rounds[-1].max_score, rounds[0].max_score).tolist()
    codes = code.tolist()
    out = []
    for q, r in enumerate(used):
        ids, ends = notes[r]
        out.append(VectorResult(ids[ends[q] : ends[q + 1]], _DECISION[codes[q]], mx[q], r + 1))
    return out


def _note_ids(p: PackedTraces, r: _Round) -> tuple[tuple[int, ...], list[int]]:
    """Every question's note fragment ids, concatenated in note order, and where each
    question's run starts (question i's are [ends[i]:ends[i + 1]])."""
    ids = tuple(p.fid_r[r.kept[r.final]].tolist())
    ends = np.concatenate([[0], np.cumsum(_seg_sum(r.final, r.bounds))]).tolist()
    return ids, ends


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
    stages = [_stage_codes(p, r, n + 1) for n, r in enumerate(rounds)]
    out = []
    for q, t in enumerate(p.traces):
        run = stages if second[q] else stages[:1]
        made = tuple(_round_result(p, q, t, n + 1, st, cfg) for n, st in enumerate(run))
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


def _stage_codes(p: PackedTraces, r: _Round, rnd: int) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's fate in round `rnd`, as an index into `_STAGES` (trace order), and the
    notes as a rank-order mask."""
    pool_c = p.round_c <= rnd
    code_c = np.zeros(len(p.score_c), dtype=np.int64)
    code_c[pool_c & ~p.alive_c] = 1
    code_c[pool_c & p.alive_c & ~r.floor_ok_c] = 2
    code_c[r.floor_ok_c & ~r.capped_c] = 3
    code_c[r.capped_c] = 4
    code_r = code_c[p.cap_of_rank]
    for mask, value in ((r.top, 5), (r.extra, 6), ((r.top | r.extra) & ~r.final, 7)):
        code_r[r.kept[mask]] = value
    code = np.empty_like(code_r)
    code[p.rank_perm] = code_r
    final_r = np.zeros(len(code_r), dtype=bool)
    final_r[r.kept[r.final]] = True
    return code, final_r


def _round_result(
    p: PackedTraces,
    q: int,
    t: RetrievalTrace,
    rnd: int,
    stages: tuple[np.ndarray, np.ndarray],
    cfg: PipelineConfig,
) -> RoundResult:
    codes, final_r = stages
    lo, hi = int(p.starts[q]), int(p.starts[q + 1])
    local = (p.rank_perm[lo:hi][final_r[lo:hi]] - lo).tolist()
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
