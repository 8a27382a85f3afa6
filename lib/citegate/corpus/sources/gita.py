"""The `gita` demo corpus: verses in five English translations, word meanings, chapter summaries,
and Arnold's *Song Celestial* (1885), all from `data/corpora/gita`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.core.fragments import Fragment
from citegate.corpus.chunking import pack_text
from citegate.corpus.sources.address import verse_label, verse_tokens

CORPUS = "gita"
BOOK = "Bhagavad Gita"
PRIMARY_TRANSLATOR = "Swami Sivananda"  # its verse fragment also carries the IAST text
_ROMAN = re.compile(r"^CHAPTER ([IVXL]+)\s*$", re.MULTILINE)


def slug(name: str) -> str:
    """`Swami Sivananda` -> `sivananda`: a stable source id for a translator."""
    words = re.sub(r"[^a-z ]", "", name.lower().replace(".", " ")).split()
    titles = {"swami", "shri", "sri", "dr", "s"}
    return "-".join(w for w in words if w not in titles) or "-".join(words)


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, "-", f"not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise InputError(path, "-", "expected a JSON array")
    return data


def _field(path: Path, rec: dict[str, Any], idx: int, name: str, typ: type) -> Any:
    value = rec.get(name) if isinstance(rec, dict) else None
    if not isinstance(value, typ) or isinstance(value, bool):
        raise InputError(path, idx, f"field {name!r} must be {typ.__name__}, got {value!r:.60}")
    return value


def _verse_fragment(c: int, v: int, text: str, source_id: str, **extra: str) -> Fragment:
    return Fragment(
        key=f"verse:{c}.{v}:{source_id}",
        corpus=CORPUS,
        kind="verse",
        source_id=source_id,
        text=text,
        lang=extra.get("lang", "en"),
        book=BOOK,
        loc_token=f"{c}.{v}",
        addr_label=verse_label(c, v),
        tokens=verse_tokens(c, v) + extra.get("tokens", ""),
    )


def read_verses(root: Path) -> Iterator[Fragment]:
    """One `verse` fragment per (verse, English translator); word meanings as `commentary`."""
    vpath, tpath = root / "verse.json", root / "translation.json"
    verses = {}
    for i, rec in enumerate(_load(vpath), 1):
        vid = _field(vpath, rec, i, "id", int)
        verses[vid] = (rec, i)
    for i, rec in enumerate(_load(tpath), 1):
        if rec.get("lang") != "english":
            continue
        vid = _field(tpath, rec, i, "verse_id", int)
        if vid not in verses:
            raise InputError(tpath, i, f"verse_id {vid} not in verse.json")
        vrec, vi = verses[vid]
        c, v = vrec["chapter_number"], vrec["verse_number"]
        author = _field(tpath, rec, i, "authorName", str)
        text = _field(tpath, rec, i, "description", str).strip()
        if author == PRIMARY_TRANSLATOR:
            iast = _field(vpath, vrec, vi, "transliteration", str).strip()
            text = f"{text}\n\n{iast}"
        yield _verse_fragment(c, v, text, slug(author))
    yield from _word_meanings(vpath, verses)


def _word_meanings(
    vpath: Path, verses: dict[int, tuple[dict[str, Any], int]]
) -> Iterator[Fragment]:
    for vid in sorted(verses):
        rec, i = verses[vid]
        c, v = rec["chapter_number"], rec["verse_number"]
        text = _field(vpath, rec, i, "word_meanings", str).strip()
        yield Fragment(
            key=f"commentary:{c}.{v}:word-meanings",
            corpus=CORPUS,
            kind="commentary",
            source_id="gita-word-meanings",
            text=text,
            lang="en",
            book=BOOK,
            loc_token=f"{c}.{v}",
            addr_label=f"{verse_label(c, v)} word meanings",
            tokens=verse_tokens(c, v),
        )


def read_chapter_summaries(root: Path) -> Iterator[Fragment]:
    """English chapter summaries as `prose_chapter`, packed into ~900-character chunks."""
    path = root / "chapters.json"
    for i, rec in enumerate(_load(path), 1):
        ch = _field(path, rec, i, "chapter_number", int)
        text = _field(path, rec, i, "chapter_summary", str)
        for j, chunk in enumerate(pack_text(text), 1):
            yield Fragment(
                key=f"summary:{ch}:{j}",
                corpus=CORPUS,
                kind="prose_chapter",
                source_id="gita-chapter-summaries",
                text=chunk,
                lang="en",
                book=BOOK,
                loc_token=f"{ch}",
                addr_label=f"BG chapter {ch} summary ¶{j}",
                tokens=f"BG {ch} chapter {ch}",
            )


def _roman(s: str) -> int:
    vals = {"I": 1, "V": 5, "X": 10, "L": 50}
    total = 0
    for a, b in zip(s, s[1:] + " ", strict=True):
        total += -vals[a] if vals.get(b, 0) > vals[a] else vals[a]
    return total


def read_arnold(root: Path) -> Iterator[Fragment]:
    """Arnold's *Song Celestial* (1885) by chapter, packed into ~900-character `prose_chapter`s."""
    path = root / "arnold_song_celestial_1885.txt"
    text = path.read_text(encoding="utf-8")
    heads = list(_ROMAN.finditer(text))
    if len(heads) != 18:
        raise InputError(path, "-", f"expected 18 CHAPTER headings, found {len(heads)}")
    for n, m in enumerate(heads):
        body = text[m.end() : heads[n + 1].start() if n + 1 < len(heads) else len(text)]
        ch = _roman(m.group(1))
        for j, chunk in enumerate(pack_text(body.strip()), 1):
            yield Fragment(
                key=f"arnold:{ch}:{j}",
                corpus=CORPUS,
                kind="prose_chapter",
                source_id="arnold-1885",
                text=chunk,
                lang="en",
                book="The Song Celestial",
                loc_token=f"{ch}.{j}",
                addr_label=f"Song Celestial ch. {ch} ¶{j}",
                tokens=f"Arnold BG {ch} chapter {ch}",
            )


def read_gita(root: Path | None = None) -> Iterator[Fragment]:
    """Every fragment of the `gita` corpus, in a stable order."""
    root = Path(root or paths.CORPORA / "gita")
    yield from read_verses(root)
    yield from read_chapter_summaries(root)
    yield from read_arnold(root)
