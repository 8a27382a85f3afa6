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
