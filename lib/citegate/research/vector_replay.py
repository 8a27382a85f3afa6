"""Vectorised replay: one config over every trace of a question set as numpy array operations.

`replay_many(traces, cfg)` gives, question by question, exactly the notes (same fragment ids, same
order), the decision and the max cosine that `citegate.pipeline.retrieve.replay(trace, cfg)` gives
for the production arm; `replay_results` builds the full `RetrievalResult` objects (every round,
every candidate's stage) when a caller needs them. For a config `vectorised` refuses (the RRF arm,
one note per verse, round two always, the named lane) both fall back to the scalar `replay`,
trace by trace.

How: `vector_pack.pack(traces)` flattens the traces once and precomputes what no config changes
(the cap and rank orders, kind groups, languages, the candidate pairs dedup could compare).

A config then costs, per round: masks for the round and the pre-floor and a segmented running
count in cap order (the cap), over every candidate; then, over the candidates the cap kept only
(at most `cap` per question, in rank order): the top-k (a position within the question), the
verse and library reserves (with their floor), dedup, and a segmented max for the gate, whose
thresholds are per-question arrays (the config's, or its `language_thresholds` entry for the
question's language, told once at pack time by `gate.question_language`, as the scalar replay
does). The notes are then simply the selected candidates in rank order (the reserves come from
below the top k, so top-then-reserves *is* rank order). Dedup is greedy and sequential ("keep a
note unless it repeats the text of, or overlaps, an earlier kept one"); a config runs the greedy
as a few rounds over the pack's conflict pairs, all questions at once. Round two is evaluated for
the questions whose round-one gate says `between` when the config allows two rounds.

Pack once, replay many configs: that is what a sweep does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from citegate.core.config import PipelineConfig, collection_mismatch
from citegate.core.errors import ConfigError
from citegate.core.types import (
    Decision,
    RetrievalResult,
    RetrievalTrace,
    RoundResult,
    Stage,
)
from citegate.pipeline.gate import verdict
from citegate.pipeline.retrieve import replay
from citegate.research.vector_pack import PackedTraces, pack


@dataclass(frozen=True)
class VectorResult:
    """What a replay decides for one question: the notes' fragment ids (in note order), the
    decision and the max cosine of the notes (the gate's signal), and the rounds run."""

    notes: tuple[int, ...]
    decision: Decision
    max_score: float
    rounds: int


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
        mismatch = collection_mismatch(coll, want)
        if mismatch:
            raise ConfigError(f"cannot replay: collection settings differ {mismatch}")
        if cfg.max_fanout_rounds > coll["max_fanout_rounds"]:
            raise ConfigError("cannot replay more fanout rounds than the trace collected")


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


def vectorised(cfg: PipelineConfig) -> bool:
    """Whether `cfg` replays as array operations here: the production arm with one note per
    passage, the round-two decision left to the gate and without the named lane. Any other
    config (the rrf_hybrid arm, `verse_notes`, `fanout: always`, `pin_named_verses`, `cap_lexical`) falls back
    to the scalar `replay`, trace by trace: the same results, slower."""
    return (
        cfg.arm != "rrf_hybrid"
        and not cfg.verse_notes
        and cfg.fanout == "gate"
        and not cfg.pin_named_verses
        and not cfg.cap_lexical
    )


def _as_packed(traces: Sequence[RetrievalTrace] | PackedTraces) -> PackedTraces:
    return traces if isinstance(traces, PackedTraces) else pack(traces)


def replay_many(
    traces: Sequence[RetrievalTrace] | PackedTraces, cfg: PipelineConfig
) -> list[VectorResult]:
    """`replay(trace, cfg)`'s notes (fragment ids), decision and max cosine for every trace, in
    order, computed as array operations (pass a `pack`ed set to replay many configs). A config
    `vectorised` refuses falls back to the scalar `replay`, trace by trace."""
    p = _as_packed(traces)
    if not vectorised(cfg):
        return [_from_result(replay(t, cfg)) for t in p.originals]
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
    if not vectorised(cfg):
        return [replay(t, cfg) for t in p.originals]
    check_replayable(p, cfg)
    rounds, second, code = _rounds(p, cfg)
    stages = [_stage_codes(p, r, n + 1) for n, r in enumerate(rounds)]
    out = []
    for q, t in enumerate(p.traces):
        run = stages if second[q] else stages[:1]
        made = tuple(_round_result(p, q, t, n + 1, st, cfg) for n, st in enumerate(run))
        # the trace as collected, as `replay` returns it (the pack's copy hides the named lane)
        out.append(RetrievalResult(made[-1].notes, _DECISION[int(code[q])], made, p.originals[q]))
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
    "vectorised",
    "PackedTraces",
    "VectorResult",
    "check_replayable",
    "pack",
    "replay_many",
    "replay_results",
]
