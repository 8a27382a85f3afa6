"""Packing for the vectorised replay (`vector_replay`): every trace of a question set as flat
arrays, with what no config changes precomputed once.

`pack(traces)` concatenates every trace's candidates (question i owns the slice
`starts[i]:starts[i + 1]`) and precomputes the cap order (pinned first, then cosine, then id) and
the rerank rank order (`Candidate.rank_key`) as two global permutations sorted by question first,
the kind groups, each question's gate language (`gate.question_language`), and which candidates
could ever be deduplicated against another: the only candidate pairs that can conflict (same text
digest, or windows of one track overlapping by a positive length, with `cut._overlap`'s float).
It reads each candidate once (one C-level attribute getter) and converts whole columns with
numpy; distinct strings and lane tuples are coded with a hash table.

One known difference: a track window without a full span (start or end None) overlaps nothing
here, where the scalar dedup would raise a TypeError comparing it; collected traces always have
spans on track windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from citegate.core.fragments import LIBRARY_KINDS
from citegate.core.types import NAMED_LANE, Candidate, RetrievalTrace
from citegate.pipeline.cut import lane_view, text_signature
from citegate.pipeline.gate import question_language

TRANSCRIPT = "track_transcript"


@dataclass(frozen=True)
class PackedTraces:
    """Every candidate of a list of traces as flat arrays (see the module docstring).

    Arrays named `*_c` are in cap order (`cap_perm` applied), `*_r` in rank order (`rank_perm`
    applied). Both orders sort by question first, so question i owns positions
    starts[i]:starts[i + 1] in either."""

    traces: tuple[RetrievalTrace, ...]  # as a config without the named lane sees them
    originals: tuple[RetrievalTrace, ...]  # as collected (the scalar fallback replays these)
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


def pack(traces: Sequence[RetrievalTrace]) -> PackedTraces:
    """Flatten `traces` and precompute the config-independent orders and flags. The arrays hold
    the lanes a config without `pin_named_verses` sees (`cut.lane_view`); the configs that need
    more replay the originals one by one (`vector_replay.vectorised`)."""
    originals = tuple(traces)
    traces = [_without_named(t) for t in originals]
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
        originals=originals,
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


def _without_named(t: RetrievalTrace) -> RetrievalTrace:
    """The trace without its named lane (itself when it has none)."""
    if not any(lane.startswith(NAMED_LANE) for c in t.candidates for lane in c.lanes):
        return t
    return replace(t, candidates=lane_view(t.candidates, False))


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


__all__ = ["TRANSCRIPT", "PackedTraces", "pack"]
