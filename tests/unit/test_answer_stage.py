"""The answer stage: the extractive composer, the closed-book composer's prompt and abstention
detector, the claim check's verdicts and policy, the model of each role, and whole turns through
each composer (the stub HTTP server speaks the chat API; retrieval is faked; the claim check
scores with the real bundled embedder)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import make_candidate
from llm_stub import DOWN, reply, stub_server

from citegate.core.config import SUPPORT_MODES, PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.types import ClaimStatus, RetrievalResult
from citegate.models.embed import default_embedder
from citegate.models.llm import ChatClient
from citegate.models.llm_server import LOCAL_MODEL_ID
from citegate.pipeline import turn as T
from citegate.pipeline.claimcheck import check_answer, shown_text
from citegate.pipeline.compose import ABSTENTION, abstention, closed_book_messages
from citegate.pipeline.extractive import Sentence, extract, note_sentences, pick, pick_lead
from citegate.pipeline.roles import RoleClients, role_model
from citegate.pipeline.support import MODES

EMB = default_embedder()
SOUL = make_candidate(
    1,
    addr_label="BG 2.22",
    text="As a man casts off worn-out garments and puts on new ones, so the embodied soul "
    "casts off worn-out bodies and enters new ones. Weapons do not cut it.",
)
WAR = make_candidate(
    2,
    addr_label="BG 1.1",
    text="Dhritarashtra said: what did my sons and the sons of Pandu do on the field of "
    "Kurukshetra, assembled and eager to fight?",
)


def table(rows: dict[tuple[str, str], float]) -> Any:
    """A scorer reading fixed scores (claim text, note text) -> score; 0.0 when absent."""

    def score(claims: Sequence[str], notes: Sequence[str]) -> np.ndarray:
        return np.array([[rows.get((c, n), 0.0) for n in notes] for c in claims], dtype=float)

    return score


# --------------------------------------------------------------------------- extractive


def test_pick_caps_each_note_and_keeps_the_notes_order() -> None:
    found = [Sentence(1, 0, "a"), Sentence(1, 1, "b"), Sentence(1, 2, "c"), Sentence(2, 0, "d")]
    chosen = pick(np.array([0.9, 0.8, 0.7, 0.1]), found, k=3, per_note=2)
    assert chosen == [0, 1, 3]  # the third sentence of note 1 loses to note 2 by the cap


def test_note_sentences_skip_fragments_too_short_to_claim_anything() -> None:
    note = make_candidate(text="2.13 Verse. The soul passes into another body at death.")
    assert [s.text for s in note_sentences([note])] == [
        "The soul passes into another body at death."
    ]


def test_extract_answers_with_the_notes_own_sentences_each_with_its_marker() -> None:
    question = "What does the soul do with worn-out bodies?"
    composed = extract(EMB, question, [WAR, SOUL], sentences=1, policy="nearest")
    assert composed.text.endswith("[2]") and "worn-out bodies" in composed.text
    assert composed.offered == {"1": WAR.text, "2": SOUL.text} and composed.status == "ok"
    assert extract(EMB, "anything", []).status == "no sources"


def test_a_transliterated_verse_is_no_claim() -> None:
    note = make_candidate(
        text="Know that Nature and the Spirit are both beginningless.\n\n"
        "prakṛitiṁ puruṣhaṁ chaiva viddhy anādī ubhāv api vikārānśh cha guṇānśh chaiva viddhi"
    )
    assert [s.text for s in note_sentences([note])] == [
        "Know that Nature and the Spirit are both beginningless."
    ]


def test_lead_policy_answers_from_the_named_source_alone() -> None:
    named = make_candidate(
        3,
        addr_label="BG 13.20",
        lanes=("address:exact@r1",),
        text="Prakriti is said to be the cause of cause and effect in the body. Purusha is the "
        "cause of the experience of pleasure and pain.",
    )
    assert named.pinned and not SOUL.pinned
    question = "In Chapter 13, Verse 20, what does the soul do with worn-out bodies?"
    composed = extract(EMB, question, [SOUL, named], sentences=3)
    assert composed.text.split("\n") == [f"{s} [2]" for s in named.text.split(". ", 1)] or all(
        line.endswith("[2]") for line in composed.text.split("\n")
    )
    assert "[1]" not in composed.text  # the nearer unnamed note is not quoted
    nearest = extract(EMB, question, [SOUL, named], sentences=3, policy="nearest")
    assert "[1]" in nearest.text  # what the lead policy replaced


def test_named_policy_answers_from_the_curated_note_memory_chose() -> None:
    note = make_candidate(
        9,
        kind="curated_note",
        addr_label=None,
        frag_key="note:mind",
        text="Arjuna finds the mind fickle and stubborn. Krishna says practice and detachment "
        "bring it under control.",
    )
    question = "Can a fickle and stubborn mind be held?"
    composed = extract(EMB, question, [note, SOUL, WAR], sentences=3)
    assert composed.text.count("[1]") == 2 and "[2]" not in composed.text
    assert "[1]" in extract(EMB, question, [note, SOUL, WAR], sentences=3, policy="nearest").text


def test_named_policy_without_a_named_source_takes_the_nearest_sentences() -> None:
    question = "What does the soul do with worn-out bodies?"
    named = extract(EMB, question, [WAR, SOUL], sentences=1)
    assert named.text == extract(EMB, question, [WAR, SOUL], sentences=1, policy="nearest").text
    assert named.text.endswith("[2]")  # the nearer sentence, though note 1 ranks first
    assert extract(EMB, question, [WAR, SOUL], sentences=1, policy="lead").text.endswith("[1]")


def test_lead_policy_starts_from_the_top_ranked_note() -> None:
    found = [Sentence(1, 0, "a"), Sentence(1, 1, "b"), Sentence(2, 0, "c"), Sentence(3, 0, "d")]
    # note 1 leads with its sentences (its nearest 0.5); only others at least as near join it
    assert pick_lead(np.array([0.4, 0.5, 0.7, 0.45]), found, k=3, per_note=2) == [0, 1, 2]
    assert pick_lead(np.array([0.4, 0.5, 0.7, 0.45]), found, k=3, per_note=1) == [1, 2]
    # a named note (3) is the only source, even when others are nearer
    assert pick_lead(np.array([0.9, 0.8, 0.7, 0.1]), found, k=3, per_note=2, named=[3]) == [3]
    assert pick_lead(np.array([]), [], k=3, per_note=2) == []


def test_an_unknown_extract_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown extract policy"):
        extract(EMB, "q", [SOUL], policy="best")
    with pytest.raises(ConfigError, match="extract_policy"):
        PipelineConfig(extract_policy="best")


# --------------------------------------------------------------------------- closed book


def test_closed_book_prompt_carries_every_rule_and_the_exact_abstention_sentence() -> None:
    system = closed_book_messages("Что такое атман?", ["note"], "ru", 300)[0]["content"]
    assert ABSTENTION["ru"] in system and "Never invent a number" in system
    assert "say that they disagree" in system and "cite both" in system


def test_abstention_is_exact_only_for_the_sentence_alone() -> None:
    assert abstention(f"  {ABSTENTION['en']}\n", "en") == "exact"
    assert abstention(f"{ABSTENTION['en']} But Krishna says more [1].", "en") == "inexact"
    assert abstention(ABSTENTION["en"].upper(), "en") == "inexact"
    assert abstention("The soul is eternal [1].", "en") == ""


# --------------------------------------------------------------------------- claim check


def test_every_verdict_kind_and_the_notes_no_claim_cites() -> None:
    offered = {"1": "n1", "2": "n2", "3": "n3"}
    answer = "Alpha holds [1]. Beta holds [2]. Gamma holds [7]. Delta holds. Eps holds [1][9]."
    scores = table(
        {("Alpha holds.", "n1"): 0.9, ("Beta holds.", "n2"): 0.5, ("Eps holds.", "n1"): 0.95}
    )
    check = check_answer(answer, offered, scores, 0.8)
    status = [v.status for v in check.verdicts]
    assert status == [
        ClaimStatus.SUPPORTED,
        ClaimStatus.UNSUPPORTED,
        ClaimStatus.FABRICATED,
        ClaimStatus.UNCITED,
        ClaimStatus.SUPPORTED,
    ]
    assert check.verdicts[4].fabricated == ("9",) and not check.verdicts[4].shown_ok
    assert check.uncited_notes == ("3",) and check.counts["fabricated_markers"] == 2
    assert check.supported_share == pytest.approx(2 / 5)


def test_flag_policy_shows_every_claim_with_addresses_and_marks() -> None:
    offered = {"1": "n1", "2": "n2"}
    check = check_answer(
        "A is so [1]. B is so [2]. C is so [5].", offered, table({("A is so.", "n1"): 0.9}), 0.8
    )
    text = shown_text(check, {"1": "BG 2.13", "2": "BG 2.14"})
    assert text.splitlines() == [
        "- A is so. [BG 2.13]",
        "- B is so. [BG 2.14] [unsupported: best 0.000]",
        "- C is so. [fabricated citation: 5 never offered]",
    ]


def test_remove_policy_drops_what_is_not_supported_and_records_why() -> None:
    scores = table({("A is so.", "n1"): 0.9})
    check = check_answer("A is so [1]. B is so [1].", {"1": "n1"}, scores, 0.8, policy="remove")
    assert [v.text for v in check.kept] == ["A is so."]
    assert [(v.text, v.status) for v in check.removed] == [("B is so.", ClaimStatus.UNSUPPORTED)]
    assert check.to_dict()["claims"][1]["removed"] is True


def test_the_scorer_is_called_once_with_only_the_cited_notes() -> None:
    seen: list[tuple[list[str], list[str]]] = []

    def scorer(claims: Sequence[str], notes: Sequence[str]) -> np.ndarray:
        seen.append((list(claims), list(notes)))
        return np.ones((len(claims), len(notes)))

    check_answer("A [2]. B [2].", {"1": "n1", "2": "n2", "3": "n3"}, scorer, 0.5)
    assert seen == [(["A.", "B."], ["n2"])]


# --------------------------------------------------------------------------- roles


def test_each_role_names_its_model_or_falls_back_to_llm() -> None:
    cheap, mid, strong = "openrouter/cheap", "openai/mid", "openrouter/vendor/strong"
    cfg = PipelineConfig(llm=cheap, composer_model=mid, fallback_model=strong)
    assert [role_model(cfg, r) for r in ("planner", "outline", "composer", "fallback")] == [
        cheap, cheap, mid, strong,
    ]  # fmt: skip
    assert role_model(PipelineConfig(), "composer") == LOCAL_MODEL_ID
    assert role_model(cfg.replace(composer_model="none"), "composer") == LOCAL_MODEL_ID
    assert role_model(cfg, "composer", override="openai/x") == "openai/x"
    with pytest.raises(ConfigError, match="composer must be one of"):
        PipelineConfig(composer="poet")


# --------------------------------------------------------------------------- whole turns


def run_turn(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    replies: list[Any],
    cfg: PipelineConfig,
    notes: Sequence[Any] = (SOUL, WAR),
    decision: str = "answer",
    question: str = "What does the soul do with worn-out bodies?",
) -> tuple[T.Turn, list[dict[str, Any]]]:
    """A turn over fixed notes with the stub as every role's model."""

    def fake(conn: Any, text: str, c: Any, emb: Any, rr: Any, plan: Any = None) -> RetrievalResult:
        return RetrievalResult(tuple(notes), decision, (), None)  # type: ignore[arg-type]

    monkeypatch.setattr(T, "retrieve", fake)
    with stub_server(replies) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        t = T.answer_turn(None, question, cfg, EMB, None, RoleClients.single(client, cfg))  # type: ignore[arg-type]
    return t, [r["body"] for r in stub.requests]


def test_extractive_turn_calls_no_model_and_every_claim_is_supported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = PipelineConfig(composer="extractive", extract_sentences=2, support_threshold=0.85)
    t, requests = run_turn(monkeypatch, tmp_path, [DOWN], cfg)
    assert requests == [] and t.branch == "grounded" and t.check is not None
    assert t.check.verdicts and all(v.status == ClaimStatus.SUPPORTED for v in t.check.verdicts)
    assert "[BG 2.22]" in t.text and "[1]" not in t.text  # the server's addresses, not numbers


def test_generative_fabricated_marker_is_flagged_never_hidden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    answer = "The soul casts off worn-out bodies [1]. Arjuna had nine brothers [4]."
    t, requests = run_turn(
        monkeypatch,
        tmp_path,
        [reply(answer)],
        PipelineConfig(composer="generative", composer_bar="06-run"),
    )
    assert requests[0]["temperature"] == pytest.approx(0.1)
    assert t.branch == "grounded" and "[fabricated citation: 4 never offered]" in t.text
    assert t.check is not None and t.check.counts["fabricated_markers"] == 1


def test_generative_abstention_makes_the_corpus_insufficient(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = PipelineConfig(composer="generative", composer_bar="06-run", enable_corpus_fallback=False)
    t, _ = run_turn(monkeypatch, tmp_path, [reply(ABSTENTION["en"])], cfg)
    assert t.corpus_insufficient and t.reason == "composer: abstained" and t.abstained == "exact"
    assert t.branch == "decline" and t.text.startswith(ABSTENTION["en"]) and t.check is None
    assert t.text.endswith("not an answer): BG 2.22, BG 1.1.")  # the notes as pointers


def test_remove_policy_that_leaves_nothing_makes_the_corpus_insufficient(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = PipelineConfig(
        composer="generative",
        composer_bar="06-run",
        unsupported_claims="remove",
        enable_corpus_fallback=False,
    )
    t, _ = run_turn(monkeypatch, tmp_path, [reply("Bananas are yellow.")], cfg)
    assert t.corpus_insufficient and t.reason == "claim check: no claim left"
    assert t.check is not None and [v.status for v in t.check.removed] == [ClaimStatus.UNCITED]


def test_a_failed_composer_call_is_a_model_error_not_an_abstention(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    t, _ = run_turn(
        monkeypatch, tmp_path, [DOWN], PipelineConfig(composer="generative", composer_bar="06-run")
    )
    assert (
        t.branch == "error" and t.model_error.startswith("composer:") and not t.corpus_insufficient
    )


def test_a_paragraph_break_ends_a_sentence() -> None:
    note = make_candidate(
        text="So the soul passes into another body.\n\ndehino smin yatha dehe kaumaram"
    )
    assert [s.text for s in note_sentences([note])] == [
        "So the soul passes into another body.",
        "dehino smin yatha dehe kaumaram",
    ]


def test_the_config_names_every_support_mode_the_scorer_knows() -> None:
    assert SUPPORT_MODES == MODES
    with pytest.raises(ConfigError, match="support_mode must be one of"):
        PipelineConfig(support_mode="qp-paragraph")
