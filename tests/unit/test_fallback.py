"""The corpus fallback's pure parts: painting the disclaimer, matching it exact vs normalized,
the language rule, admission at the threshold, the prompt variants and the reply parser."""

from __future__ import annotations

import pytest
from conftest import verse

from citegate.pipeline import fallback as F
from citegate.studies.fallback_disclaimer.disclaimer import disclaimer_present

EN, RU = F.DISCLAIMERS["en"], F.DISCLAIMERS["ru"]


@pytest.mark.parametrize("lang", ["en", "ru", "hi", "xx"])
@pytest.mark.parametrize(
    "answer", ["Krishna answers.", "", "  ", EN + " Krishna.", RU + " Кришна."]
)
def test_paint_always_carries_the_exact_disclaimer(lang: str, answer: str) -> None:
    text = F.paint(answer, lang)
    want = F.disclaimer_for(lang)
    assert text.startswith(want) and text.count(want) == 1
    assert disclaimer_present(text, lang) == (True, True)
    assert F.paint(answer, lang) == text  # deterministic


def test_disclaimers_per_language_fall_back_to_english() -> None:
    assert F.disclaimer_for("ru") == RU != EN
    assert F.disclaimer_for("hi") == F.DISCLAIMERS["hi"] != EN
    assert F.disclaimer_for("xx") == EN == F.disclaimer_for("")


@pytest.mark.parametrize(
    ("text", "lang", "want"),
    [
        (f"Sure. {EN} Arjuna doubts.", "en", (True, True)),
        (EN.upper().replace(":", " -"), "en", (False, True)),  # case and punctuation
        (
            "  this answer is NOT from the trusted   sources it comes from general knowledge",
            "en",
            (False, True),
        ),
        ("From general knowledge, not the trusted sources.", "en", (False, True)),  # key words
        ("This answer comes from general knowledge.", "en", (False, False)),  # 'trusted' missing
        ("Arjuna doubts.", "en", (False, False)),
        (RU, "ru", (True, True)),
        (RU.replace("неточным", "неточно"), "ru", (False, True)),  # seen from SmolLM2
        ("Ответ не из проверенного источника, из общего знания.", "ru", (False, True)),
        (EN, "ru", (False, False)),  # the English sentence is not the Russian disclaimer
        ("", "en", (False, False)),
    ],
)
def test_disclaimer_present_exact_vs_normalized(
    text: str, lang: str, want: tuple[bool, bool]
) -> None:
    assert disclaimer_present(text, lang) == want


def test_detect_language() -> None:
    assert F.detect_language("Почему Арджуна не хочет сражаться?") == "ru"
    assert F.detect_language("Что значит dharma?") == "ru"
    assert F.detect_language("What does 'дхарма' mean?") == "en"
    assert F.detect_language("कर्म क्या है?") == "hi"
    assert F.detect_language("What does कर्म mean in the Gita?") == "en"  # more Latin letters
    assert F.detect_language("中文问题") == "en"  # no fixed strings: English
    assert F.detect_language("") == "en"


def test_admission_at_exactly_the_threshold() -> None:
    hits = [verse(1, 0.5), verse(2, 0.4999), verse(3, 0.73), verse(1, 0.5)]
    admitted = F.admit(hits, 0.5)
    assert [c.fragment_id for c in admitted] == [3, 1]  # 0.5 in, 0.4999 out, one per fragment
    assert F.admit(hits, 0.4999)[-1].fragment_id == 2
    assert F.admit([], 0.5) == []


def test_prompt_variants_and_schema() -> None:
    asked = F.fallback_messages("q", "ru", "asked")[0]["content"]
    painted = F.fallback_messages("q", "ru", "asked_painted")[0]["content"]
    not_asked = F.fallback_messages("q", "ru", "not_asked")[0]["content"]
    assert RU in asked and RU in painted and RU not in not_asked and "Russian" in asked
    assert "already shows" in painted and "already shows" not in asked
    assert "disclaimer" not in F.fallback_reply_schema("not_asked")["properties"]
    assert list(F.fallback_reply_schema("asked")["properties"])[:2] == ["in_scope", "disclaimer"]
    with pytest.raises(ValueError, match="unknown prompt variant"):
        F.fallback_messages("q", "en", "shout")


def test_parse_reply_tolerates_raw_newlines_in_strings() -> None:
    value, status = F.parse_reply('{"in_scope": true, "answer": "line one\nline two"}')
    assert status == "ok" and value is not None and value.answer == "line one line two"
