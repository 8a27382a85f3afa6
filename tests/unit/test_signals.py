"""Gate signals from hand-built traces: cosine shape, named addresses, rare-term coverage, lexical
rank, the reranker and the two-scale arm; the address parser they rest on; the human reason."""

from __future__ import annotations

import math

import pytest
from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.types import Candidate, RetrievalTrace
from citegate.corpus.sources.address import find_verse_refs, named_verses
from citegate.pipeline import fusion
from citegate.pipeline import signals as sg
from citegate.pipeline.plan import OfflinePlanner
from citegate.pipeline.retrieve import replay
from citegate.studies.gate_roc.compute import STUDY_SIGNALS, study_signals

CFG = PipelineConfig(pre_floor=0.0, reserve_verses=0, reserve_library=0)


def facts(addresses: set[str] = frozenset(), df: dict[str, int] | None = None, n: int = 100):  # noqa: ANN201
    return sg.IndexFacts(("c",), frozenset(addresses), df or {}, n)


def result(question: str, cands: list[Candidate], reranker: str = "none", cfg=CFG):  # noqa: ANN001, ANN201
    trace = RetrievalTrace(
        question,
        OfflinePlanner().plan(question),
        cfg.collection_key(),
        cfg.embedder,
        reranker,
        cands,
    )
    return replay(trace, cfg)


def slim(**fields: object) -> Candidate:
    """A candidate as a cached (slim) trace holds it: no text, a distinct text signature."""
    c = make_candidate(text="", **fields)
    return make_candidate(c.fragment_id, text="", text_sig=f"sig{c.fragment_id}", **fields)


# --------------------------------------------------------------------------- named verses


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("In Chapter 3, Verse 1, what does Arjuna ask?", [(3, 1)]),
        ("chapter 3 verse 1", [(3, 1)]),
        ("Ch. 3, v. 1 and then BG 2.13", [(3, 1), (2, 13)]),
        ("Глава 3, стих 1: о чём?", [(3, 1)]),
        ("В главе 12, стих 5 сказано", [(12, 5)]),
        ("अध्याय ३, श्लोक १ में", [(3, 1)]),
        ("Gita 2:13 and Chapter 2, Verse 13", [(2, 13)]),
        ("Chapter 19, Verse 2", []),  # no chapter 19
        ("In Chapter 4 we read verse 3", []),  # not one address
        ("How does the verse describe it?", []),
    ],
)
def test_named_verses_reads_canonical_and_spelled_addresses(text: str, refs: list) -> None:
    assert named_verses(text) == refs


def test_find_verse_refs_is_unchanged_by_named_verses() -> None:
    # the address lane still reads only canonical forms: retrieval does not change
    assert find_verse_refs("In Chapter 3, Verse 1, what?") == []
    assert find_verse_refs("Ch. 3, v. 1 and BG 2.13") == [(2, 13)]


# --------------------------------------------------------------------------- cosine shape


def test_cosine_signals_read_the_final_notes() -> None:
    pool = [slim(score=s) for s in (0.9, 0.7, 0.5, 0.3)]
    sig = sg.signals(result("What is yoga?", pool), CFG, facts(), {})
    assert list(sig) == list(sg.SIGNALS)
    assert sig["max_cosine"] == pytest.approx(0.9)
    assert sig["topk_mean_cosine"] == pytest.approx((0.9 + 0.7 + 0.5) / 3)
    assert sig["margin_top1_top2"] == pytest.approx(0.2)
    assert math.isnan(sig["ltr_max_prob"])  # no reranker ran


def test_one_note_has_no_margin_and_no_notes_score_zero() -> None:
    one = sg.signals(result("What is yoga?", [make_candidate(score=0.6)]), CFG, facts(), {})
    assert one["topk_mean_cosine"] == pytest.approx(0.6) and math.isnan(one["margin_top1_top2"])
    none = sg.signals(result("What is yoga?", []), CFG, facts(), {})
    assert none["max_cosine"] == 0.0 and none["topk_mean_cosine"] == 0.0
    assert none["lexical_rank"] == 0.0 and none["lexical_coverage"] == 0.0


def test_study_signals_keep_notebook_03s_definitions() -> None:
    pool = [slim(score=0.9, kind="lecture"), slim(score=0.7, kind="verse"), slim(score=0.5)]
    res = result("What is yoga?", pool)
    study = study_signals(res, CFG)
    assert list(study) == list(STUDY_SIGNALS)
    assert sg.cosine_signals(res.notes) == {
        k: sg.signals(res, CFG, facts(), {})[k]
        for k in ("max_cosine", "topk_mean_cosine", "margin_top1_top2")
    }
    assert study["max_rerank"] == pytest.approx(0.9)  # unreranked notes count by their cosine
    assert study["max_verse_cosine"] == pytest.approx(0.7)
    assert study["margin_top1_top2_zero_filled"] == pytest.approx(0.2)
    assert study["rrf_rerank_max"] == 0.0  # no reranker: no rerank scores


def test_a_config_that_does_not_pin_named_verses_never_sees_the_named_lane_in_its_signals() -> None:
    """What only the named lane found is not a candidate of such a config: the RRF signals (and
    the two-scale fusion) of a trace that holds it equal those of the trace without it."""
    q = "In Chapter 2, Verse 13, what passes from body to body?"
    plain = [
        slim(score=0.6, lanes=("dense:verses@r1", "lexical@r1"), rerank_score=0.4),
        slim(score=0.5, rerank_score=0.3),
    ]
    named = slim(score=0.95, lanes=("address:named@r1",), addr_label="BG 2.13", rerank_score=0.9)
    two_scale = CFG.replace(arm="rrf_hybrid", gate="two_scale")
    for cfg in (CFG, two_scale):
        with_lane = result(q, [*plain, named], "ltr/x", cfg=cfg)
        without = result(q, plain, "ltr/x", cfg=cfg)
        assert study_signals(with_lane, cfg) == study_signals(without, cfg)
        assert fusion.gate_signal(with_lane, cfg) == fusion.gate_signal(without, cfg)
    pinned = CFG.replace(pin_named_verses=True)
    seen = study_signals(result(q, [*plain, named], "ltr/x", cfg=pinned), pinned)
    assert seen["max_rerank"] == pytest.approx(0.9)  # pinned, it is a note


def test_the_zero_filled_margin_counts_a_missing_note_as_zero() -> None:
    one = study_signals(result("What is yoga?", [make_candidate(score=0.6)]), CFG)
    assert one["margin_top1_top2_zero_filled"] == pytest.approx(0.6)
    none = study_signals(result("What is yoga?", []), CFG)
    assert none["margin_top1_top2_zero_filled"] == 0.0 and none["max_verse_cosine"] == 0.0
    assert none["max_rerank"] == 0.0 and none["rrf_fusion_max"] == 0.0


# --------------------------------------------------------------------------- addresses


@pytest.mark.parametrize(
    ("question", "named", "found", "absent"),
    [
        ("What is yoga?", 0, 0, 0),
        ("In Chapter 3, Verse 5, what binds?", 1, 1, 0),
        ("In Chapter 8, Verse 27, what is steadfast?", 1, 0, 1),
        ("Compare BG 3.5 with BG 8.27", 1, 0, 0),  # partial: neither every nor none
    ],
)
def test_address_signals_say_whether_the_index_holds_the_named_verse(
    question: str, named: int, found: int, absent: int
) -> None:
    sig = sg.signals(result(question, [make_candidate()]), CFG, facts({"BG 3.5"}), {})
    assert (sig["address_named"], sig["address_found"], sig["address_absent"]) == (
        named,
        found,
        absent,
    )


def test_explain_names_the_absent_address() -> None:
    f = facts({"BG 3.5"})
    q = "In Chapter 8, Verse 27, what is steadfast?"
    sig = sg.signals(result(q, [make_candidate(score=0.81234)]), CFG, f, {})
    assert sg.named_labels(q) == ["BG 8.27"]
    reason = sg.explain(sig, sg.named_labels(q), f)
    assert reason.startswith("named address BG 8.27 is not in the index; max cosine 0.812")
    both = sg.explain({"max_cosine": 0.9}, ["BG 3.5", "BG 8.27"], f)
    assert both.startswith("named address BG 8.27 is not in the index (BG 3.5 is)")
    assert sg.explain({"max_cosine": 0.9}, ["BG 3.5"], f).startswith(
        "named address BG 3.5 is in the index"
    )
    assert sg.explain({"max_cosine": 0.5, "ltr_max_prob": 0.25}, [], f) == (
        "max cosine 0.500, reranker max 0.25"
    )


# --------------------------------------------------------------------------- lexical


def test_rare_terms_are_the_lexical_lanes_words_weighted_by_idf() -> None:
    df = {"soul": 50, "eternal": 5, "arjuna": 10, "sleeps": 0}
    f = facts(df=df, n=100)
    assert sg.content_terms("Why is the Soul eternal, Arjuna?") == ["soul", "eternal", "arjuna"]
    rare = sg.rare_terms("Why is the Soul eternal, Arjuna? Who sleeps?", f)
    # "soul" is in 50% of the documents: not rare; "arjuna" in exactly 10%: still rare
    assert rare == pytest.approx(
        {"eternal": math.log(100 / 6), "arjuna": math.log(100 / 11), "sleeps": math.log(100)}
    )


def test_lexical_coverage_is_the_weighted_share_of_rare_terms_in_the_notes() -> None:
    f = facts(df={"soul": 50, "eternal": 5, "arjuna": 10}, n=100)
    a, b = slim(score=0.9), slim(score=0.8)
    texts = {a.fragment_id: "The soul is ETERNAL.", b.fragment_id: "Nothing here"}
    sig = sg.signals(result("Why is the soul eternal, Arjuna?", [a, b]), CFG, f, texts)
    w_e, w_a = math.log(100 / 6), math.log(100 / 11)
    assert sig["lexical_coverage"] == pytest.approx(w_e / (w_e + w_a))
    # whole words only: "arjunas" is not "arjuna"
    assert sg.lexical_coverage("Arjuna?", ["Arjunas fight"], f) == 0.0
    assert sg.lexical_coverage("What is it?", ["anything"], f) == 0.0  # no rare term


def test_lexical_rank_is_the_inverse_best_lexical_rank_of_a_note() -> None:
    pool = [
        make_candidate(score=0.9),
        make_candidate(score=0.5, lanes=("lexical@r1",), lex_rank=4),
        make_candidate(score=0.4, lanes=("lexical@r1",), lex_rank=2),
    ]
    sig = sg.signals(result("What is yoga?", pool), CFG, facts(), {})
    assert sig["lexical_rank"] == pytest.approx(0.5)


# --------------------------------------------------------------------------- reranker, two-scale


def test_ltr_and_two_scale_signals_come_from_the_reranked_trace() -> None:
    pool = [make_candidate(score=0.9 - i / 50, rerank_score=r) for i, r in enumerate((0.2, 0.7))]
    res = result(
        "What is yoga?", pool, reranker="ltr/default", cfg=CFG.replace(reranker="ltr/default")
    )
    sig = sg.signals(res, CFG, facts(), {})
    assert sig["ltr_max_prob"] == pytest.approx(0.7)
    arm = CFG.replace(arm="rrf_hybrid", gate="two_scale")
    expected = fusion.gate_signal(fusion.rrf_replay(res.trace, arm), arm)
    assert sig["two_scale_score"] == pytest.approx(expected) == pytest.approx(0.7)
