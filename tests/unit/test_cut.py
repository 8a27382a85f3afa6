"""Each stage of the cut and the coverage gate, on hand-built candidates (no database)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.types import (
    Branch,
    CallStatus,
    Candidate,
    Decision,
    RetrievalTrace,
    Stage,
    Status,
    Step,
)
from citegate.pipeline import gate
from citegate.pipeline.cut import cut, dedup, reserves
from citegate.pipeline.plan import OfflinePlanner
from citegate.pipeline.retrieve import replay

CFG = PipelineConfig()


def cand(
    score: float,
    kind: str = "verse",
    rerank: float | None = None,
    lanes: tuple = ("dense:verses@r1",),
    rnd: int = 1,
    track: tuple | None = None,
    text: str | None = None,
) -> Candidate:
    """A candidate with a cosine; `track` = (track id, start ms, end ms) makes it a window."""
    tid, s, e = track or (None, None, None)
    extra: dict[str, object] = {"addr_label": None} if track else {}
    if text:
        extra["text"] = text
    return make_candidate(
        kind=kind,
        track_id=tid,
        start_ms=s,
        end_ms=e,
        score=score,
        lanes=lanes,
        round=rnd,
        rerank_score=rerank,
        **extra,
    )


def test_forced_hits_survive_the_floor() -> None:
    low_dense, low_lex, low_addr = (
        cand(0.1),
        cand(0.1, lanes=("lexical@r1",)),
        cand(0.05, lanes=("address@r1",)),
    )
    notes, stage = cut([low_dense, low_lex, low_addr], CFG)
    assert stage[low_dense.fragment_id] == "dropped:pre_floor"
    assert {c.fragment_id for c in notes} == {low_lex.fragment_id, low_addr.fragment_id}


def test_floor_boundary_is_inclusive() -> None:
    at, below = cand(0.18), cand(0.1799)
    _, stage = cut([at, below], CFG)
    assert (
        stage[at.fragment_id].startswith("kept") and stage[below.fragment_id] == "dropped:pre_floor"
    )


def test_cap_keeps_top_by_cosine() -> None:
    pool = [cand(0.2 + i / 1000, rerank=1 - i / 1000) for i in range(70)]
    _, stage = cut(pool, CFG)
    dropped = {c.fragment_id for c in pool if stage[c.fragment_id] == "dropped:cap"}
    assert dropped == {c.fragment_id for c in pool[:10]}  # the 10 lowest cosines


def test_cap_lexical_keeps_what_the_lexical_lane_ranked_high_past_the_cap() -> None:
    pool = [cand(0.2 + i / 1000, rerank=1 - i / 1000) for i in range(70)]
    pool[0] = replace(pool[0], lex_rank=3, lanes=("lexical@r1",))  # lowest cosine, lexical #3
    pool[1] = replace(pool[1], lex_rank=30, lanes=("lexical@r1",))  # lexical, ranked too low
    _, seed = cut(pool, CFG)
    _, kept = cut(pool, CFG.replace(cap_lexical=16))
    assert seed[pool[0].fragment_id] == seed[pool[1].fragment_id] == "dropped:cap"
    assert kept[pool[0].fragment_id] != "dropped:cap"
    assert kept[pool[1].fragment_id] == "dropped:cap"
    others = [c.fragment_id for c in pool[2:]]
    capped = [i for i in others if kept[i] == "dropped:cap"]
    assert capped == [i for i in others if seed[i] == "dropped:cap"]  # the cap moves no other


def test_cap_lexical_keeps_the_verse_group_of_a_lexical_hit() -> None:
    pool = [cand(0.2 + i / 1000, rerank=1 - i / 1000) for i in range(70)]
    pool[0] = replace(pool[0], lex_rank=1, lanes=("lexical@r1",), addr_label="BG 9.9")
    pool[1] = replace(pool[1], addr_label="BG 9.9")  # another passage of the same verse
    cfg = CFG.replace(verse_notes=True, cap_lexical=16)
    _, stage = cut(pool, cfg)
    assert stage[pool[0].fragment_id] != "dropped:cap"
    assert stage[pool[1].fragment_id] != "dropped:cap"


def test_ranks_not_scores_decide_the_top_16() -> None:
    # every rerank score is tiny; an absolute threshold would drop all, rank keeps the best 16
    pool = [cand(0.5, kind="commentary", rerank=0.001 * i) for i in range(30)]
    notes, _ = cut(pool, CFG.replace(reserve_library=0, reserve_verses=0))
    assert len(notes) == 16
    assert [c.rerank_score for c in notes] == sorted(
        (0.001 * i for i in range(14, 30)), reverse=True
    )


def test_reserves_admit_a_verse_at_041_not_039() -> None:
    top = [cand(0.9, kind="commentary", rerank=1.0) for _ in range(16)]
    at_041, at_039 = cand(0.41, rerank=0.0), cand(0.39, rerank=0.5)
    extra = reserves(top, [at_039, at_041], CFG)
    assert extra == [at_041]
    notes, stage = cut([*top, at_039, at_041], CFG)
    assert (
        stage[at_041.fragment_id] == "kept:reserve" and stage[at_039.fragment_id] == "dropped:top_k"
    )
    assert len(notes) == 17


def test_reserves_fill_both_groups_up_to_their_counts() -> None:
    top = [
        cand(0.9, kind="track_transcript", rerank=1.0, track=("t", i * 100, i * 100 + 50))
        for i in range(16)
    ]
    rest = [cand(0.5, kind="verse", rerank=0.1 * i) for i in range(3)] + [
        cand(0.5, kind="prose_chapter", rerank=0.1 * i) for i in range(3)
    ]
    extra = reserves(top, rest, CFG)
    assert sorted(c.kind for c in extra) == ["prose_chapter", "prose_chapter", "verse", "verse"]


def test_dedup_collapses_overlapping_windows_of_one_track() -> None:
    a = cand(0.8, "track_transcript", track=("t1", 0, 45_000))
    b = cand(0.7, "track_transcript", track=("t1", 40_000, 85_000))  # 5 s overlap: kept
    c = cand(0.6, "track_transcript", track=("t1", 10_000, 50_000))  # mostly inside a: dropped
    d = cand(0.6, "track_transcript", track=("t2", 0, 45_000))  # other track: kept
    e = cand(0.5, text=a.text.upper())  # repeats a's text: dropped
    kept, dropped = dedup([a, b, c, d, e], CFG.dedup_overlap)
    assert kept == [a, b, d] and dropped == [c, e]


@pytest.mark.parametrize(
    ("max_cos", "lectures", "sufficient", "good", "bail"),
    [
        (0.40, 0, False, False, False),
        (0.3999, 0, False, False, True),
        (0.55, 2, True, True, False),
        (0.55, 1, False, False, False),
        (0.5499, 2, False, False, False),
        (0.65, 0, False, True, False),
        (0.6499, 0, False, False, False),
    ],
)
def test_gate_boundaries(
    max_cos: float, lectures: int, sufficient: bool, good: bool, bail: bool
) -> None:
    notes = [cand(max_cos)] + [
        cand(0.3, "track_transcript", track=("t", i * 1000, i * 1000 + 500))
        for i in range(lectures)
    ]
    v = gate.verdict(notes, CFG)
    assert (v.sufficient, v.good_enough, v.bail_out) == (sufficient, good, bail)


def test_gate_reads_cosine_never_rerank() -> None:
    notes = [cand(0.3, rerank=0.99)]
    assert gate.max_score(notes) == pytest.approx(0.3) and gate.verdict(notes, CFG).bail_out


def trace_of(cands: list[Candidate], cfg: PipelineConfig = CFG) -> RetrievalTrace:
    plan = OfflinePlanner().plan("q")
    return RetrievalTrace("q", plan, cfg.collection_key(), cfg.embedder, cfg.reranker, cands)


def test_second_round_only_between_the_bounds() -> None:
    r1 = [cand(0.5)]
    r2 = [cand(0.7, rnd=2)]
    res = replay(trace_of(r1 + r2), CFG)
    assert [r.round for r in res.rounds] == [1, 2] and res.decision == "answer"
    early = replay(trace_of([cand(0.7), cand(0.8, rnd=2)]), CFG)
    assert len(early.rounds) == 1 and early.decision == "answer"
    bail = replay(trace_of([cand(0.3), cand(0.9, rnd=2)]), CFG)
    assert len(bail.rounds) == 1 and bail.decision == "insufficient"
    one = replay(trace_of(r1 + r2), CFG.replace(max_fanout_rounds=1))
    assert len(one.rounds) == 1 and one.decision == "weak"


def test_replay_refuses_a_different_collection() -> None:
    from citegate.core.errors import ConfigError

    with pytest.raises(ConfigError, match="lane_k"):
        replay(trace_of([cand(0.5)]), CFG.replace(lane_k=5))


def test_every_candidate_gets_a_stage_whose_value_is_the_old_label() -> None:
    pool = [cand(0.9), cand(0.1), cand(0.6, rnd=2), cand(0.8, text="same"), cand(0.7, text="same")]
    pool.append(replace(cand(0.95), ann_missed=True))
    res = replay(trace_of(pool), CFG.replace(max_fanout_rounds=1))
    assert set(res.stage) == {c.fragment_id for c in pool}
    assert all(isinstance(s, Stage) for s in res.stage.values())
    by_id = {c.fragment_id: res.stage[c.fragment_id] for c in pool}
    assert [by_id[c.fragment_id] for c in pool] == [
        "kept:top_k",
        "dropped:pre_floor",
        "unused:later_round",
        "kept:top_k",
        "dropped:dedup",
        "ann_missed",
    ]
    assert [by_id[c.fragment_id].step for c in pool] == [
        Step.TOP_K,
        Step.PRE_FLOOR,
        Step.LATER_ROUND,
        Step.TOP_K,
        Step.DEDUP,
        Step.ANN_MISSED,
    ]
    assert [s.kept for s in by_id.values()] == [True, False, False, True, False, False]
    assert json.dumps({"decision": res.decision, "stage": by_id[pool[0].fragment_id]}) == (
        '{"decision": "answer", "stage": "kept:top_k"}'
    )


def test_outcome_enums_keep_the_recorded_strings() -> None:
    assert [str(s) for s in Stage] == [
        "ann_missed",
        "dropped:pre_floor",
        "dropped:cap",
        "dropped:top_k",
        "kept:top_k",
        "kept:reserve",
        "dropped:dedup",
        "unused:later_round",
        "dropped:not_fused",
        "dropped:context_cap",
        "kept:grouped",
    ]
    assert all(s.step == str(s).split(":")[-1] for s in Stage)
    assert list(Decision) == ["answer", "insufficient", "weak"]
    assert list(Branch) == ["grounded", "fallback", "decline", "error"]
    assert {"answer": 1}[Decision.ANSWER] == 1 and hash(Branch.ERROR) == hash("error")
    parsed = Status.parse("llm_error: chat call failed: HTTP 502")
    assert parsed == Status(CallStatus.LLM_ERROR, "chat call failed: HTTP 502")
    assert str(parsed) == "llm_error: chat call failed: HTTP 502"
    assert Status.parse("no notes") == Status(CallStatus.NO_NOTES)
    assert str(Status(CallStatus.OK)) == "ok"
    with pytest.raises(ValueError):
        Status.parse("surprise: unknown kind")
