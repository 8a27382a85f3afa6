"""User-supplied corpora: `citegate ingest --corpus PATH` with subtitle tracks or plain text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from citegate.chunking import pack_text
from citegate.errors import InputError
from citegate.fragments import Fragment
from citegate.sources.lectures import track_fragments

TRACK_SUFFIXES = {".srt", ".vtt", ".json"}
TEXT_SUFFIXES = {".txt", ".md"}


def _text_fragments(path: Path, corpus: str, lang: str) -> Iterator[Fragment]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"byte {exc.start}", "not valid UTF-8") from exc
    if "\x00" in text:
        raise InputError(path, f"char {text.index(chr(0))}", "NUL byte in text")
    for j, chunk in enumerate(pack_text(text), 1):
        yield Fragment(
            key=f"text:{path.name}:{j}",
            corpus=corpus,
            kind="prose_chapter",
            source_id=path.stem,
            text=chunk,
            lang=lang,
            book=path.stem,
            loc_token=str(j),
            addr_label=f"{path.stem} ¶{j}",
            tokens=path.stem,
        )


def read_path(path: Path, corpus: str, lang: str = "en") -> Iterator[Fragment]:
    """Fragments from a file or a folder: subtitle tracks become transcripts, text is packed."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    if not files:
        raise InputError(path, "-", "no files to ingest")
    for f in files:
        if f.suffix.lower() in TRACK_SUFFIXES:
            yield from track_fragments(f, corpus, f.stem, f.stem, lang)
        elif f.suffix.lower() in TEXT_SUFFIXES:
            yield from _text_fragments(f, corpus, lang)
        else:
            raise InputError(
                f, "-", f"unsupported file type {f.suffix!r} (srt, vtt, json, txt, md)"
            )
