"""The out-of-scope decline names what was searched: the described scope of a corpus that has
one (the gita's, so production's sentence stays as it is), the names of the corpora otherwise,
"the sources searched" when none is named; never the Bhagavad Gita for a corpus that is not it.
In every language with fixed strings, and through a whole turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FALLBACK_REPLY
from llm_stub import reply, stub_server

from citegate.core.config import PipelineConfig
from citegate.core.types import RetrievalResult
from citegate.models.embed import default_embedder
from citegate.models.llm import ChatClient
from citegate.pipeline import fallback as F
from citegate.pipeline import turn as T

LANGUAGES = sorted(F.DECLINES)
# How each language's fixed strings name the Gita.
GITA_NAMES = ("Gita", "гита", "गीता")


def names_the_gita(text: str) -> bool:
    return any(g.casefold() in text.casefold() for g in GITA_NAMES)


def test_every_language_with_a_decline_has_the_searched_strings() -> None:
    for table in (F.SEARCHED, F.SEARCHED_NONE):
        assert set(table) == set(F.DECLINES) == set(F.SCOPE)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_decline_over_another_corpus_names_it_and_not_the_gita(lang: str) -> None:
    text = F.decline_text(lang, ("bees",))
    assert "bees" in text and not names_the_gita(text)
    assert text == F.DECLINES[lang].format(scope=F.SEARCHED[lang].format(names="bees"))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_decline_over_the_gita_keeps_its_described_scope(lang: str) -> None:
    want = F.DECLINES[lang].format(scope=F.SCOPE[lang])
    assert F.decline_text(lang, ("gita",)) == want
    assert F.decline_text(lang, ("gita-split",)) == want  # a leave-out build is its parent's
    assert names_the_gita(want)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_decline_naming_no_corpus_says_the_sources_searched(lang: str) -> None:
    text = F.decline_text(lang)
    assert F.SEARCHED_NONE[lang] in text and not names_the_gita(text)


def test_a_mix_with_an_undescribed_corpus_names_every_corpus_searched() -> None:
    text = F.decline_text("en", ("gita", "xquad", "gita"))
    assert "the sources searched: gita, xquad" in text
    assert F.SCOPE["en"] not in text


def test_an_unsupported_language_declines_in_english_naming_the_corpus() -> None:
    assert F.decline_text("de", ("bees",)) == F.decline_text("en", ("bees",))


def test_a_turn_over_a_folder_corpus_declines_naming_that_corpus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fake(conn: object, text: str, cfg: object, *_: object) -> RetrievalResult:
        return RetrievalResult((), "insufficient", (), None)  # type: ignore[arg-type]

    monkeypatch.setattr(T, "retrieve", fake)
    cfg = PipelineConfig(corpora=("bees",), fallback_bar="04-run")
    out_of_scope = reply({**FALLBACK_REPLY, "in_scope": False})
    with stub_server([out_of_scope]) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        t = T.answer_turn(None, "How do I bake bread?", cfg, default_embedder(), None, client)  # type: ignore[arg-type]
    assert t.branch == "decline" and t.text == F.decline_text("en", ("bees",))
    assert "bees" in t.text and not names_the_gita(t.text)
