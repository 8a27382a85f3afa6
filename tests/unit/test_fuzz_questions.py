"""Questions and fold options fed generated inputs (hypothesis): `clean_question` (the gate every
entry point takes a question through), the out-of-scope question reader, and the leave-out rules
(`--holdout-by FIELD`, `--folds K`, `--holdout SHARE`) through their validation. Each either gives
a result that keeps the rule it promises or raises the project's user error in one line; nothing
else escapes. 500 examples each, no deadline (the machine is shared), derandomized.
"""

from __future__ import annotations

import json
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citegate.cli import one_line
from citegate.core.errors import CitegateError, InputError, QuestionError
from citegate.core.inputs import MAX_QUESTION_CHARS, clean_question, id_problem
from citegate.corpus.beir import Collection, Document, check_holdout_field, read_out_of_scope
from citegate.corpus.holdout import Folds, Holdout

FUZZ = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
HOSTILE = "\x00\x07\x1b\x7f\u200b\u202e\ufeff\ud800\udfff \t\n\r"
SCRIPTS = "aZ9éжЖक्षअ中文ع٣🙂 .?!"  # Latin, Cyrillic, Devanagari, CJK, Arabic, emoji, punctuation
TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from(HOSTILE + SCRIPTS))
# Up to ~60,000 characters without generating them one by one: a chunk repeated.
HUGE = st.builds(lambda chunk, n: chunk * n, st.text(st.sampled_from(SCRIPTS + HOSTILE), min_size=1, max_size=12), st.integers(0, 5000))  # fmt: skip
NEAR_LIMIT = st.builds(
    lambda pad, tail: "q" * pad + tail,
    st.integers(MAX_QUESTION_CHARS - 8, MAX_QUESTION_CHARS),
    st.text(st.sampled_from(SCRIPTS + HOSTILE), max_size=8),
)
QUESTIONS = TEXT | HUGE | NEAR_LIMIT
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | QUESTIONS
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3)
)


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """A scratch folder shared by the examples of this module (each writes its own file)."""
    with tempfile.TemporaryDirectory(prefix="citegate-fuzz-q-") as tmp:
        yield Path(tmp)


def refusal_is_one_line(exc: CitegateError, *, strict: bool = True) -> None:
    """A user error prints as one printable line; `strict`: its own text holds no line break
    and does not echo a long input back."""
    assert one_line(str(exc)).encode("utf-8")
    if strict:
        assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)[:500]


# ---------------------------------------------------------------- clean_question


@FUZZ
@given(QUESTIONS)
def test_clean_question_keeps_its_promise_or_refuses_in_one_line(text: str) -> None:
    try:
        q = clean_question(text)
    except QuestionError as exc:
        refusal_is_one_line(exc)
        return
    assert 0 < len(q) <= MAX_QUESTION_CHARS and q == q.strip()
    assert "\x00" not in q and not any("\ud800" <= ch <= "\udfff" for ch in q)
    assert all(ch in "\n\t" or unicodedata.category(ch) != "Cc" for ch in q)
    assert any(unicodedata.category(ch)[0] in "LN" for ch in q)
    assert clean_question(q) == q  # cleaning is idempotent


@FUZZ
@given(st.integers(0, 3 * MAX_QUESTION_CHARS), st.sampled_from(["why ", "ж", "क्", "中", "a\x00"]))
def test_the_question_limit_is_exact(n: int, unit: str) -> None:
    text = (unit * n)[:n]
    if n > MAX_QUESTION_CHARS:
        with pytest.raises(QuestionError, match=rf"is {n:,} characters long; the limit is"):
            clean_question(text)
    elif n and "\x00" not in text:
        assert clean_question(text) == text.strip()


# ---------------------------------------------------------------- the out-of-scope reader

OOS_RECORDS = st.lists(
    st.fixed_dictionaries({"text": SCALARS}, optional={"id": SCALARS, "language": SCALARS})
    | JSONISH
    | TEXT,
    max_size=5,
)


def write_lines(path: Path, lines: list[str]) -> None:
    """The lines as UTF-8 (a lone surrogate written as its raw bytes: an undecodable file)."""
    path.write_bytes("\n".join(lines).encode("utf-8", errors="surrogatepass"))


def check_rows(rows: list[tuple[str, str, str]]) -> None:
    """What the reader promises of every question it returns."""
    assert rows and len({r[0] for r in rows}) == len(rows)
    for qid, text, lang in rows:
        assert id_problem(qid) is None and isinstance(lang, str) and lang
        assert text and len(text) <= MAX_QUESTION_CHARS and "\x00" not in text
        assert text == " ".join(text.split())


@FUZZ
@given(OOS_RECORDS, st.sampled_from([".jsonl", ".txt"]))
def test_the_out_of_scope_reader_returns_valid_questions_or_names_the_line(
    folder: Path, records: list[object], suffix: str
) -> None:
    path = folder / f"oos{suffix}"
    write_lines(path, [r if isinstance(r, str) else json.dumps(r) for r in records])
    try:
        rows = read_out_of_scope(path, "en")
    except InputError as exc:
        refusal_is_one_line(exc, strict=False)  # every bad line, one per line, with its number
        assert str(path) in str(exc)
        return
    check_rows(rows)


# ---------------------------------------------------------------- fold options

FIELDS = st.sampled_from(["article", "chapter", "", " ", "a\nb", "\x00", "métadonnée"]) | TEXT


def collection(metadata: list[dict[str, object]]) -> Collection:
    """A collection of one document per metadata mapping."""
    docs = {
        f"d{i}": Document(f"d{i}", "", f"text {i}", meta, i + 1) for i, meta in enumerate(metadata)
    }
    return Collection(Path("/nowhere"), docs, [], {"corpus.jsonl": "0"}, "salted")


METADATA = st.lists(
    st.dictionaries(st.sampled_from(["article", "chapter"]) | TEXT, SCALARS, max_size=3),
    min_size=1,
    max_size=12,
)


@FUZZ
@given(METADATA, st.none() | FIELDS, st.integers(-3, 20))
def test_folds_deal_every_unit_once_or_refuse_in_one_line(
    metadata: list[dict[str, object]], field: str | None, k: int
) -> None:
    coll = collection(metadata)
    try:
        rule = Folds(k, field)
        fold_of = rule.assign(check_holdout_field(coll, rule), "mine")
    except CitegateError as exc:
        refusal_is_one_line(exc)
        return
    assert set(fold_of) == set(coll.documents) and 2 <= k <= len(coll.documents)
    assert set(fold_of.values()) == set(range(1, k + 1))  # no fold build holds out nothing
    if field is not None:  # one field value, one fold
        by_value: dict[str, set[int]] = {}
        for d, i in fold_of.items():
            by_value.setdefault(str(coll.documents[d].metadata[field]), set()).add(i)
        assert all(len(s) == 1 for s in by_value.values())


@FUZZ
@given(METADATA, st.none() | FIELDS, st.floats(allow_nan=True, allow_infinity=True))
def test_a_holdout_keeps_both_sides_or_refuses_in_one_line(
    metadata: list[dict[str, object]], field: str | None, share: float
) -> None:
    coll = collection(metadata)
    try:
        rule = Holdout(share, field)
        held = rule.documents(check_holdout_field(coll, rule))
    except CitegateError as exc:
        refusal_is_one_line(exc)
        return
    assert 0.0 < share < 1.0
    assert held and held < set(coll.documents)  # something held out, something searched
