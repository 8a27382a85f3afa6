"""Citation markers and the sentence-level claims of an answer, as the claim check reads them.

An answer is split into sentence-level claims (`split_claims`), each with the citation markers it
carries: numbered (`[1]`, `[2, 3]`, `[S1]`, where `S1` and `1` name the same source) or
address-style (`[BG 2.13]`, `[Gita 2:13]`, all read as the canonical `BG 2.13`), and its
[SOURCED]/[INFERRED] tag when it carries one. The markers and the tag are removed from the claim's
text; `claimcheck` then scores every claim against the notes it cites.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from citegate.corpus.chunking import split_sentences
from citegate.corpus.sources.address import find_verse_refs, verse_label

_BRACKET = re.compile(r"\[([^\[\]\n]{1,60})\]")
_TAG = re.compile(r"\[(SOURCED|INFERRED)\]", re.IGNORECASE)
_TRAILER = re.compile(r"(?:\s*\[[^\[\]\n]*\]|[\s.!?…\"'”’»)])*")
_NUMBERED = re.compile(r"[Ss]?(\d{1,4})")
_ADDRESS = re.compile(r"(?:[^\W\d_]+\.?\s*){0,3}\d{1,2}\s*[.:]\s*\d{1,2}")
_LIST_ITEM = re.compile(r"\s*(?:[-*•]|\d{1,3}[.)]|#{1,6})\s+")
_LINE = re.compile(r"[^\n]+")
_LETTER = re.compile(r"[^\W\d_]")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?…])")


# --------------------------------------------------------------------------- markers


def canonical_marker(part: str) -> str | None:
    """The source id one marker entry names: "1" for `1`/`S1`/`01`, "BG 2.13" for an address
    (`BG 2.13`, `Bg. 2.13`, `Gita 2:13`, `2.13`), None for anything else (`sic`, `SOURCED`)."""
    part = part.strip()
    if m := _NUMBERED.fullmatch(part):
        return str(int(m.group(1)))
    refs = find_verse_refs(part) if _ADDRESS.fullmatch(part) else []
    return verse_label(*refs[0]) if len(refs) == 1 else None


def parse_marker_group(inner: str) -> tuple[str, ...] | None:
    """The ids of one bracket's contents (`2, 3`, `S1; S4`, `BG 2.13`), or None when any entry
    is not an id (then the bracket is ordinary text)."""
    ids = [canonical_marker(p) for p in re.split(r"[,;]", inner)]
    if not ids or any(i is None for i in ids):
        return None
    return tuple(dict.fromkeys(i for i in ids if i is not None))


# --------------------------------------------------------------------------- claims


@dataclass(frozen=True)
class Claim:
    """One sentence of an answer: its text without markers or tag, the source ids it cites (in
    order, unique), its SOURCED/INFERRED tag if any, its span in the answer, and the tag's span."""

    text: str
    markers: tuple[str, ...]
    tag: str | None
    start: int
    end: int
    tag_span: tuple[int, int] | None = None


def _leading_brackets(raw: str) -> list[tuple[int, bool]]:
    """The run of marker or tag brackets that opens `raw`: (end, is a tag) of each."""
    run: list[tuple[int, bool]] = []
    pos = 0
    while m := _BRACKET.match(raw, pos + len(raw[pos:]) - len(raw[pos:].lstrip())):
        tag = _TAG.fullmatch(m.group()) is not None
        if not tag and parse_marker_group(m.group(1)) is None:
            break
        run.append((m.end(), tag))
        pos = m.end()
    return run


def _give_back(answer: str, prev: tuple[int, int], a: int, b: int) -> int:
    """How much of span [a, b)'s opening bracket run closes the previous sentence: markers
    always; a tag only while the previous sentence has none (so "[SOURCED] A [1]. [INFERRED] B."
    keeps B's leading tag, and "A. [1] [SOURCED] B." gives A its trailing one)."""
    taken = 0
    for end, is_tag in _leading_brackets(answer[a:b]):
        if is_tag and _find_tag(answer[prev[0] : a + taken]) is not None:
            break
        taken = end
    return taken


def _reattach(answer: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Markers and tags written after a sentence's full stop ("It is so. [1] [SOURCED] Next.")
    open the next span: give them back to the sentence they close."""
    fixed: list[tuple[int, int]] = []
    for a, b in spans:
        n = _give_back(answer, fixed[-1], a, b) if fixed else 0
        if not n:
            fixed.append((a, b))
            continue
        fixed[-1] = (fixed[-1][0], a + n)
        rest = a + n + len(answer[a + n : b]) - len(answer[a + n : b].lstrip())
        if rest < b:
            fixed.append((rest, b))
    return fixed


def _sentence_spans(answer: str) -> list[tuple[int, int]]:
    """(start, end) of every sentence, line by line, list bullets and heading marks skipped."""
    spans: list[tuple[int, int]] = []
    for line in _LINE.finditer(answer):
        item = _LIST_ITEM.match(line.group())
        body_start = line.start() + (item.end() if item else 0)
        body, pos, found = answer[body_start : line.end()], 0, []
        for sentence in split_sentences(body):
            at = body.index(sentence, pos)
            found.append((body_start + at, body_start + at + len(sentence)))
            pos = at + len(sentence)
        spans += _reattach(answer, found)
    return spans


def _find_tag(raw: str) -> tuple[str, tuple[int, int]] | None:
    """The sentence's leading or trailing [SOURCED]/[INFERRED] tag and its span, if any."""
    for m in _TAG.finditer(raw):
        leading = not raw[: m.start()].strip()
        trailing = _TRAILER.fullmatch(raw[m.end() :]) is not None
        if leading or trailing:
            return m.group(1).upper(), m.span()
    return None


def _parse_sentence(answer: str, start: int, end: int) -> Claim:
    """A claim from one sentence span: markers collected and removed, tag recognised and removed."""
    raw = answer[start:end]
    found = _find_tag(raw)
    cut: list[tuple[int, int]] = [found[1]] if found else []
    markers: list[str] = []
    for m in _BRACKET.finditer(raw):
        ids = parse_marker_group(m.group(1))
        if ids is not None:
            markers.extend(i for i in ids if i not in markers)
            cut.append(m.span())
    text = "".join(raw[a:b] for a, b in _keep_spans(len(raw), cut))
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(text.split()))
    tag, span = (found[0], (start + found[1][0], start + found[1][1])) if found else (None, None)
    return Claim(text, tuple(markers), tag, start, end, span)


def _keep_spans(length: int, cut: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The complement of the (non-overlapping) `cut` spans within [0, length)."""
    keep, pos = [], 0
    for a, b in sorted(cut):
        keep.append((pos, a))
        pos = b
    keep.append((pos, length))
    return keep


def _absorb(base: Claim, extra: Claim) -> Claim:
    """`base` with the markers of `extra`, and its tag when `base` has none."""
    markers = tuple(dict.fromkeys(base.markers + extra.markers))
    tag, span = (base.tag, base.tag_span) if base.tag else (extra.tag, extra.tag_span)
    start, end = min(base.start, extra.start), max(base.end, extra.end)
    return replace(base, markers=markers, tag=tag, tag_span=span, start=start, end=end)


def split_claims(answer: str) -> list[Claim]:
    """Sentence-level claims of an answer (`chunking.split_sentences`, per line).

    A sentence with no letters once markers and tag are removed ("[2].", "[SOURCED]") is not a
    claim: it belongs to the previous claim (its tag only when that claim has none), or, before
    the first claim or when the previous one is tagged already, to the next.
    """
    claims: list[Claim] = []
    carry: Claim | None = None
    for start, end in _sentence_spans(answer):
        piece = _parse_sentence(answer, start, end)
        if _LETTER.search(piece.text):
            claims.append(_absorb(piece, carry) if carry else piece)
            carry = None
        elif claims and (piece.tag is None or claims[-1].tag is None):
            claims[-1] = _absorb(claims[-1], piece)
        else:
            carry = _absorb(carry, piece) if carry else piece
    return claims
