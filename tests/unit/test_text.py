"""core.text: the one copy of the language guesses and stopword lists, and their callers."""

from __future__ import annotations

from citegate.core import text
from citegate.pipeline import fallback, lanes, plan


def test_detect_language_is_the_disclaimer_rule() -> None:
    assert text.detect_language("Что значит dharma?") == "ru"
    assert text.detect_language("What does 'дхарма' mean?") == "en"
    assert text.detect_language("कर्म क्या है?") == "hi"
    assert text.detect_language("") == "en"
    assert fallback.detect_language is text.detect_language


def test_script_language_is_the_ltr_rule() -> None:
    assert text.script_language("What does 'дхарма' mean?") == "ru"  # any Cyrillic
    assert text.script_language("कर्मण्येवाधिकारस्ते") == "hi"
    assert text.script_language("Who is Arjuna?") == "en"


def test_stopword_lists() -> None:
    assert plan.STOPWORDS is text.STOPWORDS
    assert len(text.STOPWORDS) == 144 and {"the", "что", "говорит"} <= text.STOPWORDS
    assert len(text.OVERLAP_STOPWORDS) == 91 and "из-за" in text.OVERLAP_STOPWORDS
    assert lanes.lexical_query("What is the soul of Arjuna") == "soul or Arjuna"
