"""Curated memory in retrieval, without a database: the pre-check, each note's role, the lean
policy, boost, the pinned note as a citable note, and a memory note that can never be cited."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import make_candidate, verse
from llm_stub import completion, reply, stub_server

from citegate.core.config import DESIGN, PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.types import (
    NOTE_KIND,
    GateKind,
    NoteRole,
    Policy,
    QueryPlan,
    RetrievalTrace,
)
from citegate.corpus.notes import Note, NoteKind
from citegate.models.embed import default_embedder
from citegate.models.llm import ChatClient
from citegate.pipeline import memory as M
from citegate.pipeline.claimcheck import check_answer
from citegate.pipeline.compose import compose_closed_book
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.turn import grounded_answer
from citegate.store.memory import NoteHit

CFG = DESIGN.replace(memory_threshold=0.9)


def note(key: str, kind: NoteKind, cites: tuple[str, ...] = ("BG 2.13",), body: str = "") -> Note:
    return Note(
        key=key, corpus="gita", kind=kind, lang="en", triggers=(f"about {key}",),
        body=body or f"The body of {key}.", cites=cites if kind != NoteKind.MEMORY else (),
        author="editors", written="2026-01-01", source="notes.yaml",
    )  # fmt: skip


def hit(n: Note, sim: float, via: str = "trigger") -> NoteHit:
    return NoteHit(n, sim, via, n.triggers[0], sim if via == "trigger" else 0.5,
                   sim if via == "body" else 0.5)  # fmt: skip


def hits(*pairs: tuple[Note, float]) -> list[NoteHit]:
    return sorted((hit(n, s) for n, s in pairs), key=lambda h: (-h.similarity, h.note.key))


PIN_A = note("soul", NoteKind.PINNED, ("BG 2.13", "BG 2.22"))
PIN_B = note("duty", NoteKind.PINNED, ("BG 2.47",))
BOOST = note("devotion", NoteKind.BOOST, ("BG 12.2", "BG 9.22"))
FRAME = note("setting", NoteKind.MEMORY, body="A dialogue on a battlefield.")


def test_the_precheck_goes_lean_only_when_the_best_pinned_note_reaches_the_threshold() -> None:
    assert M.precheck([], 0.9).policy == Policy.WIDE
    assert M.precheck(hits((PIN_A, 0.93)), 0.9).policy == Policy.LEAN
    assert M.precheck(hits((PIN_A, 0.93)), 0.93).policy == Policy.LEAN  # at the threshold
    check = M.precheck(hits((PIN_A, 0.8899), (BOOST, 0.99), (FRAME, 0.99)), 0.89)
    assert check.policy == Policy.WIDE and check.answer is None  # boost/memory never answer
    assert "soul" in check.reason and "<" in check.reason and check.best is not None


def test_each_note_above_the_threshold_takes_its_role_and_only_the_best_pinned_is_cited() -> None:
    found = hits(
        (PIN_A, 0.95), (PIN_B, 0.92), (BOOST, 0.91), (FRAME, 0.9),
        (note("low", NoteKind.MEMORY), 0.5),
    )  # fmt: skip
    out = M.outcome(found, CFG, M.precheck(found, CFG.memory_threshold))
    roles = {u.key: u.role for u in out.uses}
    assert roles == {"soul": NoteRole.CITED, "duty": NoteRole.BELOW,
                     "devotion": NoteRole.BOOST, "setting": NoteRole.FRAMING}  # fmt: skip
    assert out.framing == ("A dialogue on a battlefield.",)
    assert out.policy == Policy.LEAN and out.best_pinned == pytest.approx(0.95)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("can the soul be killed", False),
        ("Can the soul NOT be killed?", True),
        ("why doesn't God incarnate", True),
        ("why doesn\u2019t God incarnate", True),
        ("does Krishna never come to earth", True),
        ("do your duty without expecting results", False),  # "without" asks no opposite
        ("knowledge, nothing else", True),
        ("кто не дорог Кришне", True),
        ("кто дорог Кришне", False),
        ("नहीं", True),
        ("क्या आत्मा मरती नहीं?", True),
        ("क्या आत्मा मरती है?", False),
        ("Nothingness", False),  # a word that merely starts like a negation
    ],
)
def test_negated_reads_negating_words_in_each_language(text: str, want: bool) -> None:
    assert M.negated(text) is want


def test_a_question_negating_the_trigger_it_echoes_is_not_answered_by_memory() -> None:
    trigger = NoteHit(PIN_A, 0.976, "trigger", "what does Krishna say about action", 0.976, 0.8)
    negated = "what does Krishna not say about action"
    assert M.negates(negated, trigger) and not M.negates("what does Krishna say", trigger)
    assert M.precheck([trigger], 0.9, "what does Krishna say about action").answer is trigger
    assert M.precheck([trigger], 0.9).answer is trigger  # a replay from the hits alone
    check = M.precheck([trigger], 0.9, negated)
    assert check.policy == Policy.WIDE and check.answer is None and check.best is trigger
    assert "negates its trigger" in check.reason and "≥" in check.reason
    out = M.outcome([trigger], CFG, check)
    assert out.policy == Policy.WIDE and out.keys(NoteRole.CITED) == ()
    assert out.keys(NoteRole.BELOW) == ("soul",) and out.best_pinned == pytest.approx(0.976)


@pytest.mark.parametrize(
    ("question", "trigger", "want"),
    [
        ("can the soul NOT be killed?", "can the soul be killed", True),
        ("why doesn't God incarnate", "why does God incarnate", True),
        ("what does not happen to the soul", "what happens to the soul", True),  # a form
        ("каких видов веры не бывает", "какие бывают виды веры", True),
        ("почему Арджуна хотел сражаться", "почему Арджуна не хотел сражаться", True),
        # the negation belongs to a phrase the trigger does not hold: no opposite asked
        (
            "What is the significance of Krishna advising not to be 'the cause of action's "
            "fruits'?",
            "what does Krishna say about the fruits of action",
            False,
        ),
        ("кто не дорог Кришне", "кто не дорог Кришне", False),  # both negated
    ],
)
def test_negates_when_the_negation_is_inserted_into_the_echoed_phrase(
    question: str, trigger: str, want: bool
) -> None:
    hit = NoteHit(PIN_A, 0.95, "trigger", trigger, 0.95, 0.5)
    assert M.negates(question, hit) is want


def test_a_body_chunk_is_never_compared_for_negation() -> None:
    body = NoteHit(PIN_A, 0.95, "body", "Weapons do not cut it.", 0.5, 0.95)
    assert not M.negates("Can weapons cut it?", body)
    assert M.precheck([body], 0.9, "Can weapons cut it?").answer is body


def test_the_decision_record_is_the_prechecks_own_reason_and_threshold() -> None:
    check = M.precheck(hits((PIN_A, 0.95), (PIN_B, 0.93)), 0.9)
    by = M.answered_by(check)
    assert (by.kind, by.signal, by.threshold) == (GateKind.MEMORY, 0.95, 0.9)
    assert by.reason == f"{check.reason}: memory answers" and "soul" in by.reason
    with pytest.raises(ValueError, match="no pinned note answers"):
        M.answered_by(M.precheck(hits((PIN_A, 0.85)), 0.9))


def test_framing_is_capped() -> None:
    many = [(note(f"m{i}", NoteKind.MEMORY), 0.95 - i / 100) for i in range(5)]
    found = hits(*many)
    assert len(M.outcome(found, CFG, M.precheck(found, 0.9)).framing) == M.MAX_FRAMING


def test_the_lean_policy_is_one_shallow_round_with_a_small_slate() -> None:
    lean = M.lean_config(DESIGN.replace(lean_lane_k=7, lean_top_k=5))
    assert (lean.max_fanout_rounds, lean.lane_k, lean.rerank_top_k) == (1, 7, 5)
    assert M.policy_config(DESIGN, Policy.WIDE) is DESIGN


def test_memory_config_values_are_checked() -> None:
    with pytest.raises(ConfigError, match="memory_threshold"):
        DESIGN.replace(memory_threshold=1.5)
    with pytest.raises(ConfigError, match="memory_boost"):
        DESIGN.replace(memory_boost=-0.1)
    with pytest.raises(ConfigError, match="lean_top_k"):
        DESIGN.replace(lean_top_k=0)


def _trace(*cands: object) -> RetrievalTrace:
    return RetrievalTrace("q", QueryPlan("q", (), "offline"), {}, "e", "r", list(cands))


def test_boost_raises_only_the_rerank_scores_of_what_a_boost_note_cites() -> None:
    a = replace(verse(13, 0.7), rerank_score=0.2)
    b = replace(verse(14, 0.8), rerank_score=0.3)
    labels = M.boosted_labels(hits((note("b", NoteKind.BOOST, ("BG 2.13",)), 0.95)), CFG)
    out = M.boost(_trace(a, b), labels, 0.25)
    assert [c.rerank_score for c in out.candidates] == pytest.approx([0.45, 0.3])
    assert [c.score for c in out.candidates] == [0.7, 0.8]  # the cosine, the gate's signal
    trace = _trace(a, b)
    assert M.boost(trace, labels, 0.0) is trace
    low = M.boosted_labels(hits((note("b", NoteKind.BOOST, ("BG 2.13",)), 0.85)), CFG)
    assert low == set()  # under the threshold a boost note nudges nothing


def test_a_pinned_note_becomes_a_citable_note_with_its_own_address() -> None:
    c = M.note_candidate(hit(PIN_A, 0.93))
    assert c.kind == NOTE_KIND and c.addr_label == "note:soul" and c.text == PIN_A.body
    assert c.fragment_id < 0 and c.fragment_id == M.note_id("soul", "gita")
    assert M.note_id("soul", "gita") != M.note_id("soul", "xquad")


def test_a_memory_note_is_never_offered_to_the_composer_so_no_marker_can_point_at_it(
    tmp_path: Path,
) -> None:
    notes = [make_candidate(text="Krishna teaches Arjuna about the self."),
             make_candidate(text="The wise do not grieve for the living or the dead.")]  # fmt: skip
    framing = ("SECRET FRAMING: the conversation happens before a battle.",)
    answer = "The conversation happens before a battle [3]. The wise do not grieve [2]."
    with stub_server([reply(completion(answer))]) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        composed = compose_closed_book(client, "Where?", [c.text for c in notes], "en",
                                       framing=framing)  # fmt: skip
        prompt = stub.requests[0]["body"]["messages"][1]["content"]
    assert "SECRET FRAMING" in prompt and "[3]" not in prompt  # shown, never numbered
    assert composed.offered == {"1": notes[0].text, "2": notes[1].text}
    check = check_answer(
        composed.text, composed.offered, lambda cs, ns: np.ones((len(cs), len(ns))), 0.5
    )
    assert check.verdicts[0].fabricated == ("3",)  # a marker at the framing points nowhere


def test_the_extractive_composer_quotes_notes_never_framing() -> None:
    emb = default_embedder()
    notes = [M.note_candidate(hit(PIN_A, 0.95))]
    cfg = PipelineConfig(composer="extractive")
    with RoleClients(cfg) as roles:
        g, _ = grounded_answer("What is the self?", "en", notes, cfg, emb, roles,
                               framing=("FRAMING TEXT never quoted.",))  # fmt: skip
    assert "FRAMING" not in g.composed.text
    assert set(g.composed.offered.values()) <= {PIN_A.body}
