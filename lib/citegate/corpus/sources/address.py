"""Canonical verse addresses: "BG 2.13", "Bg. 2.13", "Gita 2:13", "2.13" all name one verse."""

from __future__ import annotations

import re

_ADDR = re.compile(
    r"(?:\b(?:BG|Bg\.?|B\.G\.|Gita|G[iī]t[aā]|Bhagavad[- ]?G[iī]t[aā]|БГ|Гита|Гиты|Гите)\s*)?"
    r"\b(\d{1,2})\s*[.:]\s*(\d{1,2})\b",
    re.IGNORECASE,
)


def verse_label(chapter: int, verse: int) -> str:
    """The display address of a verse, e.g. `BG 2.13`."""
    return f"BG {chapter}.{verse}"


def verse_tokens(chapter: int, verse: int) -> str:
    """Every canonical spelling of one verse address, indexed for the address lane."""
    c, v = chapter, verse
    return f"BG {c}.{v} Bg. {c}.{v} Gita {c}:{v} {c}.{v} {c}:{v} BG{c}.{v}"


def find_verse_refs(text: str) -> list[tuple[int, int]]:
    """Verse addresses mentioned in free text (chapter 1-18), in order, without duplicates."""
    out: list[tuple[int, int]] = []
    for m in _ADDR.finditer(text):
        ref = (int(m.group(1)), int(m.group(2)))
        if 1 <= ref[0] <= 18 and 1 <= ref[1] <= 78 and ref not in out:
            out.append(ref)
    return out


_DIGITS = str.maketrans("०१२३४५६७८९", "0123456789")
# "Chapter 3, Verse 1", "chapter 3 verse 1", "Ch. 3, v. 1", "Глава 3, стих 1", "अध्याय 3, श्लोक 1".
_SPELLED = re.compile(
    r"\b(?:chapter|chap\.?|ch\.?|глав[аеуыи]?)\s*(\d{1,2})\s*[,;:.]?\s*"
    r"(?:verses?|vv?\.|v\b|стих[аиуе]?|стихи)\s*(\d{1,2})\b"
    r"|अध्याय\s*(\d{1,2})\s*[,;:]?\s*श्लोक\s*(\d{1,2})",
    re.IGNORECASE,
)


def named_verses(text: str) -> list[tuple[int, int]]:
    """Every verse a question names (chapter 1-18, verse 1-78), in order of appearance, without
    duplicates: the canonical references of `find_verse_refs` plus spelled-out ones ("Chapter 3,
    Verse 1", "Ch. 3, v. 1", "Глава 3, стих 1", "अध्याय ३, श्लोक १"; Devanagari digits read as
    digits). A gate signal, not a search key: `find_verse_refs` (which feeds the address lane)
    is left as it is, so retrieval does not change."""
    norm = text.translate(_DIGITS)
    found: list[tuple[int, tuple[int, int]]] = []
    for m in _SPELLED.finditer(norm):
        groups = [g for g in m.groups() if g is not None]
        found.append((m.start(), (int(groups[0]), int(groups[1]))))
    found += [(m.start(), (int(m.group(1)), int(m.group(2)))) for m in _ADDR.finditer(norm)]
    out: list[tuple[int, int]] = []
    for _, ref in sorted(found, key=lambda p: p[0]):
        if 1 <= ref[0] <= 18 and 1 <= ref[1] <= 78 and ref not in out:
            out.append(ref)
    return out
