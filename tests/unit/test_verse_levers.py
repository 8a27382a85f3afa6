"""The retrieval levers on hand-built candidates (no database): the named lane
(`pin_named_verses`), one note per verse (`verse_notes`) and `fanout: always`; and the
vectorised replay agreeing with the scalar one for each."""

from __future__ import annotations

from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.types import NAMED_LANE, RetrievalTrace, Stage
from citegate.pipeline.cut import cut, lane_view
from citegate.pipeline.lanes import spelled_labels
from citegate.pipeline.plan import OfflinePlanner
from citegate.pipeline.render import result_dict
from citegate.pipeline.retrieve import replay
from citegate.research.vector_replay import replay_many, replay_results, vectorised

CFG = PipelineConfig()
NAMED = f"{NAMED_LANE}@r1"


def translation(i: int, address: str, score: float, **kw: object) -> object:
    """Translation `i` of a verse (one of several passages sharing its address)."""
    return make_candidate(i, corpus="gita", addr_label=address, score=score, **kw)


def trace(question: str, cands: list, rounds: int = 2) -> RetrievalTrace:
    plan = OfflinePlanner().plan(question)
    coll = CFG.replace(max_fanout_rounds=rounds).collection_key()
    return RetrievalTrace(question, plan, coll, CFG.embedder, CFG.reranker, cands, {})


def test_spelled_labels_reads_the_three_languages_and_skips_canonical_ones() -> None:
    assert spelled_labels("In Chapter 2, Verse 13, what is said?") == ["BG 2.13"]
    assert spelled_labels("Глава 3, стих 5: о чём?") == ["BG 3.5"]
    assert spelled_labels("अध्याय १, श्लोक ५ में क्या है?") == ["BG 1.5"]
    assert spelled_labels("What does BG 2.13 say? And Chapter 2, Verse 13?") == []
    assert spelled_labels("What is the verse about?") == []


def test_without_the_flag_the_named_lane_is_invisible() -> None:
    only_named = translation(1, "BG 2.13", 0.3, lanes=(NAMED,))
    both = translation(2, "BG 2.13", 0.8, lanes=("dense:verses@r1", NAMED))
    named_and_exact = translation(3, "BG 2.13", 0.7, lanes=(NAMED, "exact:verses@r1"))
    view = lane_view([only_named, both, named_and_exact], named=False)
    assert [(c.fragment_id, c.lanes, c.ann_missed) for c in view] == [
        (2, ("dense:verses@r1",), False),
        (3, ("exact:verses@r1",), True),  # an ANN miss, as it was before the lane existed
    ]
    assert not any(c.pinned for c in view)
    assert lane_view([only_named], named=True)[0].pinned


def test_a_pinned_named_verse_passes_floor_and_cap_and_ranks_first() -> None:
    named = translation(1, "BG 2.13", 0.1, lanes=(NAMED,))
    others = [translation(10 + i, f"BG 3.{i}", 0.8 - i / 100) for i in range(20)]
    cfg = CFG.replace(pin_named_verses=True, pre_floor=0.5, cap=5, rerank_top_k=3)
    notes, stage = cut([named, *others], cfg)
    assert notes[0].fragment_id == 1 and stage[1] == Stage.KEPT_TOP_K
    notes, stage = cut([named, *others], cfg.replace(pin_named_verses=False))
    assert 1 not in stage and 1 not in {c.fragment_id for c in notes}


def test_one_note_per_verse_fills_the_slots_with_distinct_verses() -> None:
    # verse A has five translations above every passage of verse B
    a = [translation(i, "BG 1.1", 0.9 - i / 100) for i in range(1, 6)]
    b = [translation(10, "BG 1.2", 0.5), translation(11, "BG 1.2", 0.4)]
    cfg = CFG.replace(rerank_top_k=2, reserve_verses=0, reserve_library=0)
    plain, _ = cut([*a, *b], cfg)
    assert [c.fragment_id for c in plain] == [1, 2]
    grouped, stage = cut([*a, *b], cfg.replace(verse_notes=True))
    assert [c.fragment_id for c in grouped] == [1, 10]  # each verse's best-ranked passage
    assert [stage[i] for i in (2, 3, 4, 5, 11)] == [Stage.KEPT_GROUPED] * 5
    assert all(stage[i].kept for i in (2, 11))


def test_a_group_takes_one_cap_place_and_shares_its_notes_fate() -> None:
    a = [translation(i, "BG 1.1", 0.9 - i / 100) for i in range(1, 4)]
    b = [translation(10, "BG 1.2", 0.5), translation(11, "BG 1.2", 0.45)]
    c = [translation(20, "BG 1.3", 0.4)]
    cfg = CFG.replace(cap=2, rerank_top_k=1, reserve_verses=0, reserve_library=0)
    notes, stage = cut([*a, *b, *c], cfg.replace(verse_notes=True))
    assert [n.fragment_id for n in notes] == [1]
    assert stage[10] == stage[11] == Stage.DROPPED_TOP_K  # inside the cap (2 groups), below k
    assert stage[20] == Stage.DROPPED_CAP
    _, plain = cut([*a, *b, *c], cfg)
    assert plain[10] == Stage.DROPPED_CAP  # without groups, three passages of A fill the cap


def test_non_verse_kinds_stay_one_note_each() -> None:
    talks = [make_candidate(i, kind="prose_chapter", addr_label="Ch 1", score=0.8) for i in (1, 2)]
    notes, _ = cut(talks, CFG.replace(verse_notes=True))
    assert sorted(c.fragment_id for c in notes) == [1, 2]


def test_fanout_always_uses_round_two_even_when_round_one_is_good_enough() -> None:
    r1 = translation(1, "BG 1.1", 0.9)
    r2 = translation(2, "BG 1.2", 0.95, lanes=("dense:verses@r2",), round=2)
    t = trace("what is said?", [r1, r2])
    assert len(replay(t, CFG).rounds) == 1 and replay(t, CFG).rounds[0].stage[2] == (
        Stage.UNUSED_LATER_ROUND
    )
    both = replay(t, CFG.replace(fanout="always"))
    assert len(both.rounds) == 2 and {c.fragment_id for c in both.notes} == {1, 2}


def test_vectorised_replay_falls_back_to_scalar_for_the_levers_and_agrees() -> None:
    cands = [
        translation(1, "BG 2.13", 0.2, lanes=(NAMED,)),
        *[translation(10 + i, f"BG 3.{i % 4}", 0.9 - i / 50) for i in range(12)],
        translation(40, "BG 4.1", 0.95, lanes=("dense:verses@r2",), round=2),
    ]
    traces = [trace("In Chapter 2, Verse 13, what?", cands)]
    for cfg in [
        CFG,
        CFG.replace(pin_named_verses=True),
        CFG.replace(verse_notes=True, rerank_top_k=3),
        CFG.replace(fanout="always"),
    ]:
        scalar = replay(traces[0], cfg)
        (fast,) = replay_many(traces, cfg)
        assert fast.notes == tuple(c.fragment_id for c in scalar.notes), cfg
        assert replay_results(traces, cfg)[0] == scalar, cfg  # the trace as collected too
    assert vectorised(CFG) and not vectorised(CFG.replace(verse_notes=True))
    # the seed config never sees the named-only passage, vectorised or not
    assert 1 not in replay_many(traces, CFG)[0].notes


def test_a_verse_note_lists_the_passages_it_cites_through_it() -> None:
    a = [translation(i, "BG 1.1", 0.9 - i / 100, source_id=f"t{i}") for i in range(1, 4)]
    t = trace("what is said?", [*a, translation(10, "BG 1.2", 0.5)])
    res = replay(t, CFG.replace(verse_notes=True))
    notes = {n["fragment_id"]: n["grouped"] for n in result_dict(res)["notes"]}
    assert notes == {
        1: [{"fragment_id": 2, "source_id": "t2"}, {"fragment_id": 3, "source_id": "t3"}],
        10: [],
    }
