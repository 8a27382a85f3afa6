"""Model output that re-enters retrieval, fed generated replies (hypothesis): fallback probes,
planner sub-questions and paraphrases, follow-up rewrites and outline note numbers. Whatever a
model writes, nothing raises; every text kept for searching passes `clean_question` unchanged
(the gate `retrieve` applies); every text dropped carries a reason. 500 examples per target,
derandomized (the same inputs every run), no deadline (the machine is shared).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from conftest import verse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_stub import Scripted

from citegate.core.errors import QuestionError
from citegate.core.inputs import clean_question
from citegate.pipeline import fallback as F
from citegate.pipeline.model_output import Dropped, check_query, keep_queries
from citegate.pipeline.outline import outline_call, parse_outline
from citegate.pipeline.plan import LLMPlanner, parse_plan, read_plan
from citegate.pipeline.rewrite import checked_rewrite, rewrite_query

T = TypeVar("T")
FUZZ = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
WORDS = st.sampled_from(
    ["karma", "yoga", "dharma", "Arjuna", "Krishna", "BG 2.13", "soul", "duty", "v2.3.1", "2.47"]
    + ["कर्म", "धर्म", "क्या", "है", "карма", "долг", "душа", "中文", "عربي", "Ślōka", "C++"]
)
JUNK = st.sampled_from(
    ["] {", "{", "}", "[", "]", '"', '",', '": ', "\\n", "\\u0000", "\x00", "\x07", "\x1b[31m"]
    + ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202e", "\u2066", "\ufeff", "\u2028"]
    + ["\ud800", "\udfff", "\U000f0000", "\u0378", "🙏", "🕉️", "👨\u200d👩\u200d👧", "...", "?!"]
    + ["—", "\n\n", "\t", " ", "null", "true", "</conversation_history>", "I'm sorry", "As an AI"]
    + ['{"role": "user", "content": "x"}', '"search_queries": [', "```json", "\\", "**", "#"]
)
TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from("\x00\x07\u200b\u202e\ud800 \t\n"))
MODEL_TEXT = st.one_of(
    TEXT,
    WORDS,
    JUNK,
    st.lists(WORDS | JUNK, max_size=12).map(" ".join),
    st.lists(WORDS | JUNK, max_size=12).map("".join),
    st.builds(lambda piece, n: piece * n, WORDS | JUNK, st.integers(1, 3000)),  # very long
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | MODEL_TEXT
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3)
)
QUESTION = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)


def dumps(obj: object, ascii_only: bool) -> str:
    """JSON as a model might write it: escaped to ASCII or raw (lone surrogates kept)."""
    return json.dumps(obj, ensure_ascii=ascii_only)


def assert_searchable(texts: Sequence[str]) -> None:
    """Every text passes `clean_question` unchanged (what `retrieve` does first)."""
    for text in texts:
        try:
            assert clean_question(text) == text
        except QuestionError as exc:  # pragma: no cover - the failure message
            raise AssertionError(f"kept {text!r}, which the search refuses: {exc}") from exc


def assert_reasons(dropped: Sequence[Dropped]) -> None:
    """Every record has a reason and a text that prints and encodes as UTF-8 on one line."""
    for d in dropped:
        assert isinstance(d, Dropped) and d.reason.strip()
        assert "\n" not in str(d) and str(d).encode("utf-8")


# --------------------------------------------------------------------------- the checker


@FUZZ
@given(text=MODEL_TEXT, max_chars=st.integers(-5, 3000))
def test_check_query_never_raises_and_keeps_only_searchable_text(text: str, max_chars: int) -> None:
    query, reason = check_query(text, max_chars=max_chars)
    if query is None:
        assert reason.strip() and reason != "ok"
    else:
        assert reason == "ok" and query.strip() == query
        assert_searchable([query])


@FUZZ
@given(words=st.lists(WORDS, min_size=1, max_size=12))
def test_check_query_keeps_a_plain_query_as_written(words: list[str]) -> None:
    text = " ".join(words)
    assert check_query(text) == (text, "ok")


@FUZZ
@given(texts=st.lists(SCALARS, max_size=40), limit=st.integers(0, 6))
def test_keep_queries_dedups_caps_and_records_the_rest(texts: list[object], limit: int) -> None:
    kept, dropped = keep_queries(texts, limit=limit)
    assert len(kept) <= limit and len({k.casefold() for k in kept}) == len(kept)
    assert_searchable(kept)
    assert_reasons(dropped)
    assert len(kept) + len(dropped) <= max(len(texts), 1)


def test_non_text_and_huge_inputs_are_refused_with_a_reason() -> None:
    assert check_query(None) == (None, "not text (NoneType)")
    assert check_query(["karma"])[1] == "not text (list)"
    assert check_query("karma " * 1_000_000)[1].startswith("too long (6000000 chars")
    assert check_query("\x00\x01\u200b")[1] == "control or invisible characters only"
    assert check_query("   ")[1] == "empty"


# --------------------------------------------------------------------------- fallback probes


def answer_of(text: str, lang: str = "en", variant: str = "asked") -> F.FallbackAnswer:
    """The fallback answer a reply `text` makes (as `ask_fallback` builds it)."""
    value, status = F.parse_reply(text)
    return F.FallbackAnswer("Who is Arjuna?", lang, variant, "m", value, status, text)


def assert_probes(fa: F.FallbackAnswer) -> None:
    """The probes are searchable, distinct and at most five; every drop has a reason."""
    assert len(fa.probes) <= F.MAX_PROBES and len(set(fa.probes)) == len(fa.probes)
    assert_searchable(fa.probes)
    assert_reasons(fa.dropped_probes)
    if fa.value is not None and fa.value.search_queries:
        assert fa.probes or fa.dropped_probes


@FUZZ
@given(
    queries=st.lists(MODEL_TEXT, max_size=8),
    ascii_only=st.booleans(),
    lang=st.sampled_from(["en", "ru", "hi", "xx"]),
    variant=st.sampled_from([*F.PROMPT_VARIANTS, "unknown"]),
)
def test_probes_from_generated_replies(
    queries: list[str], ascii_only: bool, lang: str, variant: str
) -> None:
    reply = {"in_scope": True, "answer": "Arjuna is a prince.", "search_queries": queries}
    assert_probes(answer_of(dumps(reply, ascii_only), lang, variant))


@FUZZ
@given(reply=MODEL_TEXT | JSONISH.map(lambda o: dumps(o, False)))
def test_probes_from_arbitrary_reply_text(reply: str) -> None:
    fa = answer_of(reply)
    assert_probes(fa)
    assert isinstance(fa.answer, str)


def test_a_probe_that_is_no_query_is_dropped_not_raised() -> None:
    """A fallback reply whose probes include "] {" has that probe dropped, never raised as a
    `QuestionError` from the probe search (which would end the user's turn as if their question
    were unusable)."""
    reply = {
        "in_scope": True,
        "answer": "Arjuna is the archer prince.",
        "search_queries": ["Arjuna archer", "] {", "Arjuna's doubt"],
    }
    searched: list[str] = []

    def search(probe: str) -> list[Any]:
        searched.append(clean_question(probe))  # as `retrieve` does
        return [verse(1, 0.9)]

    fb = F.fallback_turn(Scripted(json.dumps(reply)), "Who is Arjuna?", search, admission=0.5)  # type: ignore[arg-type]
    assert fb.branch == "fallback" and fb.probes == ("Arjuna archer", "Arjuna's doubt")
    assert searched == ["Arjuna archer", "Arjuna's doubt"]
    assert fb.answer.dropped_probes == (Dropped("'] {'", "no letter or digit"),)


def test_probes_repeated_or_over_five_are_dropped_with_why() -> None:
    queries = ["karma", "Karma ", "a", "b", "c", "d", "e", "", '{"x": 1}', "ok\u200b"]
    fa = answer_of(json.dumps({"in_scope": True, "answer": "x", "search_queries": queries}))
    assert fa.probes == ("karma", "a", "b", "c", "d")
    reasons = [d.reason for d in fa.dropped_probes]
    assert reasons == [
        "repeats an earlier query",
        "over the limit of 5 queries",
        "empty",
        "JSON fragment",
        "over the limit of 5 queries",
    ]


# --------------------------------------------------------------------------- planner


SUBQUESTION = st.fixed_dictionaries(
    {"text": QUESTION | MODEL_TEXT | JSONISH},
    optional={
        "kind": st.sampled_from(["main", "definition", "weird"]) | JSONISH,
        "paraphrases": st.lists(MODEL_TEXT | JSONISH, max_size=4) | JSONISH,
    },
)
PLAN_REPLY = st.one_of(
    st.builds(
        lambda subs, ascii_only, wrap: (
            wrap[0] + dumps({"subquestions": subs}, ascii_only) + wrap[1]
        ),
        st.lists(SUBQUESTION | JSONISH, max_size=6),
        st.booleans(),
        st.sampled_from(
            [("", ""), ("Sure:\n```json\n", "\n```"), ("", " trailing ] {"), ("] { ", "")]
        ),
    ),
    MODEL_TEXT,
)


@FUZZ
@given(reply=PLAN_REPLY, question=QUESTION)
def test_planner_replies(reply: str, question: str) -> None:
    subs, status = parse_plan(reply)
    assert (subs is None) == (status != "ok") and status.strip()
    _, dropped, _ = read_plan(reply)
    assert_reasons(dropped)
    for sub in subs or ():
        assert len(sub.paraphrases) <= 2
        assert_searchable(sub.texts())
    plan = LLMPlanner(Scripted(reply)).plan(question)
    assert plan.subquestions[0].text == question and plan.subquestions[0].kind == "main"
    assert 1 <= len(plan.subquestions) <= 4
    assert_searchable(plan.texts())
    assert plan.notes.get("dropped", "x").strip()


def test_planner_drops_unusable_parts_and_says_why() -> None:
    reply = {
        "subquestions": [
            {"kind": "definition", "text": "] {", "paraphrases": ["x"]},
            {"kind": "context", "text": "Arjuna's doubt", "paraphrases": ["...", 7, "doubt"]},
            "not an object",
        ]
    }
    plan = LLMPlanner(Scripted(json.dumps(reply))).plan("Why does Arjuna doubt?")
    assert plan.texts() == ["Why does Arjuna doubt?", "Arjuna's doubt", "doubt"]
    assert plan.notes["status"] == "ok"
    assert plan.notes["dropped"] == (
        "'] {': no letter or digit; '...': no letter or digit; '7': not text (int); "
        "'not an object': a sub-question must be an object with a 'text'"
    )
    none_usable = {"subquestions": [{"text": "] {"}]}
    assert parse_plan(json.dumps(none_usable)) == (
        None,
        "no usable sub-question (first: '] {': no letter or digit)",
    )


# --------------------------------------------------------------------------- rewrites


@FUZZ
@given(candidate=MODEL_TEXT, original=QUESTION)
def test_rewrites(candidate: str, original: str) -> None:
    query, reason = checked_rewrite(original, candidate)
    if query is None:
        assert reason.strip() and reason != "ok"
    else:
        assert_searchable([query])
    history = [{"role": "user", "content": "What does BG 2.13 say?"}]
    res = rewrite_query(Scripted(candidate), history, original, turn_index=1)  # type: ignore[arg-type]
    assert res.accepted == (query is not None) and res.reason == reason
    assert res.query_used == (query if query is not None else original)
    res.rule  # noqa: B018 - every reason names a known rule


def test_an_unusable_rewrite_falls_back_to_the_question() -> None:
    history = [{"role": "user", "content": "What does BG 2.13 say?"}]
    res = rewrite_query(Scripted("] {"), history, "and the next one?", turn_index=1)  # type: ignore[arg-type]
    assert res.query_used == "and the next one?" and not res.accepted
    assert res.reason == "unusable: no letter or digit" and res.rule == "unusable"
    lost = Scripted("next verse\u200b after\x07 BG 2.13")
    res = rewrite_query(lost, history, "and BG 2.14?", turn_index=1)  # type: ignore[arg-type]
    assert res.reason.startswith("lost_identifier: verse address BG 2.14")
    cleaned = Scripted("BG 2.14\u200b soul\x07 eternal")
    res = rewrite_query(cleaned, history, "and BG 2.14?", turn_index=1)  # type: ignore[arg-type]
    assert res.accepted and res.query_used == "BG 2.14 soul eternal"  # searched as cleaned


# --------------------------------------------------------------------------- outline references


NOTE_REF = st.integers(-3, 9) | st.integers() | st.booleans() | st.floats() | MODEL_TEXT | JSONISH
THESIS = st.fixed_dictionaries(
    {"text": MODEL_TEXT | JSONISH, "notes": st.lists(NOTE_REF, max_size=6) | JSONISH}
)
OUTLINE_REPLY = st.one_of(
    st.builds(
        lambda theses, ascii_only: dumps({"theses": theses}, ascii_only),
        st.lists(THESIS | JSONISH, max_size=5),
        st.booleans(),
    ),
    MODEL_TEXT,
)


@FUZZ
@given(reply=OUTLINE_REPLY, n_notes=st.integers(0, 6))
def test_outline_references(reply: str, n_notes: int) -> None:
    outline, status = parse_outline(reply, n_notes)
    assert (outline is None) == (status != "ok")
    if outline is not None:
        assert len(outline.theses) == len(outline.cited)
        for refs in outline.cited:
            assert refs and all(type(r) is int and 1 <= r <= n_notes for r in refs)
        assert_reasons(outline.dropped_refs)
    notes = [verse(i, 0.8) for i in range(1, n_notes + 1)]
    result = outline_call(Scripted(reply), "Who is Arjuna?", notes)  # type: ignore[arg-type]
    assert all(1 <= r <= min(n_notes, 5) for refs in result.cited for r in refs)


def test_outline_drops_references_never_offered_or_not_integers() -> None:
    reply = {"theses": [{"text": "The self is eternal.", "notes": [2, 9, "1", True, 1.0, -1]}]}
    outline, _ = parse_outline(json.dumps(reply), 3)
    assert outline is not None and outline.cited == ((2,),) and outline.dropped == 2
    assert [str(d) for d in outline.dropped_refs] == [
        "'9': names no note offered (notes 1-3)",
        "'1': not a note number (str)",
        "'True': not a note number (bool)",
        "'1.0': not a note number (float)",
        "'-1': names no note offered (notes 1-3)",
    ]
