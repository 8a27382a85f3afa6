"""Hindi (Devanagari) fixed strings: a Hindi question is told "I don't know", declined and shown
the fallback's disclaimer in Hindi, and the disclaimer check reads the Hindi disclaimer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import FALLBACK_REPLY, verse
from llm_stub import Scripted, reply, stub_server

from citegate.core.config import PipelineConfig
from citegate.core.text import detect_language
from citegate.core.types import Candidate, RetrievalResult
from citegate.models.embed import default_embedder
from citegate.models.llm import ChatClient
from citegate.pipeline import fallback as F
from citegate.pipeline import turn as T
from citegate.pipeline.compose import ABSTENTION, abstention, closed_book_messages
from citegate.studies.fallback_disclaimer.disclaimer import DISCLAIMER_KEYS, disclaimer_present

HI = F.DISCLAIMERS["hi"]
QUESTION = "अर्जुन युद्ध क्यों नहीं करना चाहता था?"
PER_LANGUAGE = {
    "DISCLAIMERS": F.DISCLAIMERS,
    "DISCLAIMER_KEYS": DISCLAIMER_KEYS,
    "DECLINES": F.DECLINES,
    "NOT_FOUND": F.NOT_FOUND,
    "NO_ANSWER": F.NO_ANSWER,
    "SCOPE": F.SCOPE,
    "SEARCHED": F.SEARCHED,
    "SEARCHED_NONE": F.SEARCHED_NONE,
    "LANGUAGE_NAMES": F.LANGUAGE_NAMES,
    "ABSTENTION": ABSTENTION,
}


def no_search(probe: str) -> list[Candidate]:
    """A probe search that finds nothing."""
    return []


@pytest.mark.parametrize("name", PER_LANGUAGE)
def test_every_fixed_string_table_has_hindi(name: str) -> None:
    assert set(PER_LANGUAGE[name]) == {"en", "ru", "hi"}


@pytest.mark.parametrize(
    "table",
    [F.DISCLAIMERS, F.DECLINES, F.NOT_FOUND, F.NO_ANSWER, F.SCOPE, F.SEARCHED, F.SEARCHED_NONE],
)
def test_the_hindi_strings_are_devanagari(table: Mapping[str, str]) -> None:
    assert detect_language(table["hi"]) == "hi"


def test_hindi_is_supported_and_detected() -> None:
    assert F.fixed_strings_language("hi") == "hi" and detect_language(QUESTION) == "hi"
    assert F.decline_text("hi", ("gita",)) == F.DECLINES["hi"].format(scope=F.SCOPE["hi"])
    assert "{" not in F.decline_text("hi", ("gita",))
    assert F.SCOPE["hi"] in F.decline_text("hi", ("gita",))


@pytest.mark.parametrize("lang", ["en", "ru", "hi"])
def test_every_disclaimer_key_is_in_its_own_disclaimer(lang: str) -> None:
    words = F.normalize(F.DISCLAIMERS[lang]).split()
    for key in DISCLAIMER_KEYS[lang]:
        assert any(w.startswith(key) for w in words), key


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (HI, (True, True)),
        (f"ठीक है। {HI} अर्जुन को संदेह था।", (True, True)),
        (HI.replace("।", "").replace(":", " -"), (False, True)),  # punctuation only
        ("यह जवाब विश्वसनीय स्रोतों से नहीं, सामान्य ज्ञान से लिया गया है।", (False, True)),  # keys
        ("यह उत्तर सामान्य ज्ञान पर आधारित है।", (False, False)),  # 'not from trusted sources' lost
        (F.NOT_FOUND["hi"], (False, False)),
        (F.DISCLAIMERS["en"], (False, False)),  # the English sentence is not the Hindi one
    ],
)
def test_disclaimer_present_reads_the_hindi_disclaimer(text: str, want: tuple[bool, bool]) -> None:
    assert disclaimer_present(text, "hi") == want


def test_a_hindi_question_out_of_scope_is_declined_in_hindi() -> None:
    client = Scripted(json.dumps({"in_scope": False, "answer": "", "search_queries": []}))
    fb = F.fallback_turn(client, "क्रिकेट विश्व कप किसने जीता?", no_search, admission=0.5)  # type: ignore[arg-type]
    assert fb.branch == "decline" and fb.text == F.decline_text("hi")
    assert fb.text.startswith("क्षमा करें")


def test_a_hindi_fallback_answer_carries_the_hindi_disclaimer() -> None:
    memory = {
        "in_scope": True,
        "disclaimer": "",
        "answer": "अर्जुन अपने संबंधियों से युद्ध नहीं करना चाहता था।",
        "search_queries": ["अर्जुन का विषाद", "] {"],
    }
    client = Scripted(json.dumps(memory, ensure_ascii=False))
    searched: list[str] = []

    def search(probe: str) -> list[Candidate]:
        searched.append(probe)
        return [verse(1, 0.9)]

    fb = F.fallback_turn(client, QUESTION, search, admission=0.5)  # type: ignore[arg-type]
    assert fb.branch == "fallback" and fb.disclaimer == HI
    assert fb.text.startswith(HI) and disclaimer_present(fb.text, "hi") == (True, True)
    assert searched == ["अर्जुन का विषाद"] and len(fb.answer.dropped_probes) == 1
    system = client.messages[0]["content"]
    assert "in Hindi" in system and HI in system


def test_an_unusable_hindi_reply_says_so_in_hindi() -> None:
    fa = F.FallbackAnswer(QUESTION, "hi", "asked", "m", None, "parse_failure: x", "{")
    assert fa.answer == F.NO_ANSWER["hi"]


def test_the_composer_abstains_in_hindi() -> None:
    system = closed_book_messages(QUESTION, ["note"], "hi", 100)[0]["content"]
    assert F.NOT_FOUND["hi"] in system
    assert abstention(F.NOT_FOUND["hi"], "hi") == "exact"
    assert abstention(f"{F.NOT_FOUND['hi']} [1]", "hi") == "inexact"


def test_a_hindi_question_gets_i_dont_know_in_hindi(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def insufficient(*_: Any) -> RetrievalResult:
        return RetrievalResult((), "insufficient", (), None)  # type: ignore[arg-type]

    monkeypatch.setattr(T, "retrieve", insufficient)
    cfg = PipelineConfig(composer="outline", enable_corpus_fallback=False)
    with stub_server([reply(FALLBACK_REPLY)]) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        t = T.answer_turn(None, QUESTION, cfg, default_embedder(), None, client)  # type: ignore[arg-type]
        assert stub.requests == []
    assert t.lang == "hi" and t.branch == "decline" and t.text.startswith(F.NOT_FOUND["hi"])
