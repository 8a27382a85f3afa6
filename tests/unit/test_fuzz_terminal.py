"""`core.terminal.visible` fed generated text (hypothesis): any string, control, bidi, zero-width,
separator and surrogate characters mixed into every script, comes out holding none of them (but
the newline and tab a layout keeps), printable text comes out unchanged, and the JSON form
parses back to the very string. 500 examples per property, the same inputs every run."""

from __future__ import annotations

import json
import unicodedata
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citegate.core.terminal import ESCAPED_CATEGORIES, visible

FUZZ = settings(
    max_examples=500,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
# The characters a terminal obeys or hides, named so that every example may draw them.
HOSTILE = [
    *map(chr, range(0x00, 0x20)),
    "\x7f",
    *map(chr, range(0x80, 0xA0)),
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\ufeff", "\u00ad", "\u061c",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
    "\u2028", "\u2029", "\ud800", "\udfff", "\U000e0001", "\U000e007f",
]  # fmt: skip
ANY_TEXT = st.text(
    st.sampled_from(HOSTILE) | st.characters(codec=None) | st.sampled_from("\\ \n\t")
)
# Text of every other character: letters and marks of any script, digits, punctuation, symbols,
# emoji, spaces (U+00A0, U+3000), private-use and not yet assigned code points.
PRINTABLE = st.text(st.characters(codec=None, exclude_categories=sorted(ESCAPED_CATEGORIES)))


def escaped(ch: str) -> bool:
    """Whether a character is one `visible` must never let through."""
    return unicodedata.category(ch) in ESCAPED_CATEGORIES


@FUZZ
@given(text=ANY_TEXT)
def test_escaped_text_holds_no_control_or_bidi_character(text: str) -> None:
    out = visible(text)
    assert not any(escaped(ch) and ch not in "\n\t" for ch in out), ascii(out)
    one_line = visible(text, keep="")
    assert not any(escaped(ch) for ch in one_line) and "\n" not in one_line
    assert visible(out) == out  # its output is printable text: escaping it again changes nothing


@FUZZ
@given(text=PRINTABLE)
def test_printable_text_round_trips_unchanged(text: str) -> None:
    assert visible(text) == text and visible(text, keep="") == text


@FUZZ
@given(text=ANY_TEXT.map(lambda t: t.replace("\\", "/")))
def test_the_escapes_name_each_character_so_nothing_is_lost(text: str) -> None:
    """Read back as Python escapes, the output is the input (backslashes left out: a literal
    backslash is printable and stays as it is, so it could read as the start of an escape)."""
    out = visible(text, keep="")
    assert out.encode("latin-1", "backslashreplace").decode("unicode_escape") == text


@FUZZ
@given(data=st.dictionaries(st.text(max_size=4), ANY_TEXT, max_size=4))
def test_the_json_form_parses_back_to_the_same_data(data: dict[str, str]) -> None:
    raw = json.dumps(data, ensure_ascii=False, indent=2)
    out = visible(raw, as_json=True)
    assert not any(escaped(ch) and ch != "\n" for ch in out), ascii(out)
    assert json.loads(out) == data
