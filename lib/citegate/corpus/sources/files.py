"""User-supplied corpora: `citegate ingest --corpus PATH` with subtitle tracks or plain text.

A folder is listed and checked as a whole before anything is read: hidden files and folders (a name
starting with '.', e.g. `.DS_Store`, `.git/`) are skipped and counted, a file over the per-source size
cap, of an unsupported type, or a symbolic link that leads out of the folder rejects the folder. Each
file is one source of the ingest (stored all-or-nothing); fragments are keyed by the file's path
relative to the folder, so `a/intro.txt` and `b/intro.txt` are both ingested.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from citegate.core.errors import InputError
from citegate.core.fragments import Fragment
from citegate.core.inputs import MAX_SOURCE_BYTES, check_size
from citegate.corpus.chunking import pack_text
from citegate.corpus.sources.lectures import track_fragments

TRACK_SUFFIXES = {".srt", ".vtt", ".json"}
TEXT_SUFFIXES = {".txt", ".md"}
DEFAULT_MAX_SOURCE_BYTES = MAX_SOURCE_BYTES  # the one limit on text (`citegate.core.inputs`)


@dataclass(frozen=True)
class SourceFile:
    """One file of a user corpus: where it is and the name its fragments are keyed by."""

    path: Path
    rel: str  # path relative to the folder, POSIX style ('talk.srt', 'part1/intro.txt')

    @property
    def label(self) -> str:
        """The relative path without its suffix: track id and address label of its fragments."""
        return PurePosixPath(self.rel).with_suffix("").as_posix()


@dataclass(frozen=True)
class Listing:
    """The files of a path that will be ingested, and how many hidden files were skipped."""

    root: Path
    files: list[SourceFile]
    hidden: int


def _is_hidden(rel: Path) -> bool:
    return any(part.startswith(".") for part in rel.parts)


def _check_link(entry: Path, root: Path) -> None:
    """Refuse a symbolic link that is broken or resolves outside the folder being ingested."""
    target = entry.resolve()
    if not target.is_relative_to(root.resolve()):
        raise InputError(
            entry,
            "-",
            f"symbolic link leads outside {root} (to {target}); copy the file in instead",
        )
    if not target.exists():
        raise InputError(entry, "-", f"broken symbolic link (to {target})")


def _check_file(entry: Path, max_bytes: int) -> None:
    """Refuse an unsupported file type or a file over the size cap, before anything is read."""
    suffix = entry.suffix.lower()
    if suffix not in TRACK_SUFFIXES | TEXT_SUFFIXES:
        raise InputError(entry, "-", f"unsupported file type {suffix!r} (srt, vtt, json, txt, md)")
    check_size(entry, "-", entry.stat().st_size, max_bytes)


def _refuse_track_clashes(files: list[SourceFile]) -> None:
    """Two track files with one label (`talk.srt`, `talk.vtt`) would share fragment keys."""
    seen: dict[str, SourceFile] = {}
    for f in files:
        if f.path.suffix.lower() not in TRACK_SUFFIXES:
            continue
        if f.label in seen:
            raise InputError(
                f.path,
                "-",
                f"same track name {f.label!r} as {seen[f.label].path}; rename one of the two",
            )
        seen[f.label] = f


def list_sources(path: Path, max_bytes: int = DEFAULT_MAX_SOURCE_BYTES) -> Listing:
    """Check and list the files of `path` (a file or a folder), sorted by relative path."""
    if not path.is_dir():
        _check_file(path, max_bytes)
        return Listing(path.parent, [SourceFile(path, path.name)], 0)
    files: list[SourceFile] = []
    hidden = 0
    for entry in sorted(path.rglob("*")):
        rel = entry.relative_to(path)
        if _is_hidden(rel):
            hidden += int(not entry.is_dir() or entry.is_symlink())
            continue
        if entry.is_symlink():
            _check_link(entry, path)
        if entry.is_dir() or not entry.exists():
            continue  # a linked folder inside `path`: its files are listed under their real path
        _check_file(entry, max_bytes)
        files.append(SourceFile(entry, rel.as_posix()))
    if not files:
        skipped = f" ({hidden} hidden files skipped)" if hidden else ""
        raise InputError(path, "-", f"no files to ingest{skipped}")
    _refuse_track_clashes(files)
    return Listing(path, files, hidden)


def _text_fragments(src: SourceFile, corpus: str, lang: str) -> Iterator[Fragment]:
    path = src.path
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"byte {exc.start}", "not valid UTF-8") from exc
    if "\x00" in text:
        raise InputError(path, f"char {text.index(chr(0))}", "NUL byte in text")
    for j, chunk in enumerate(pack_text(text), 1):
        yield Fragment(
            key=f"text:{src.rel}:{j}",
            corpus=corpus,
            kind="prose_chapter",
            source_id=src.label,
            text=chunk,
            lang=lang,
            book=src.label,
            loc_token=str(j),
            addr_label=f"{src.label} ¶{j}",
            tokens=src.label,
        )


def file_fragments(src: SourceFile, corpus: str, lang: str = "en") -> Iterator[Fragment]:
    """Fragments of one listed file: a subtitle track becomes transcript windows, text is packed."""
    if src.path.suffix.lower() in TRACK_SUFFIXES:
        return track_fragments(src.path, corpus, src.label, src.label, lang)
    return _text_fragments(src, corpus, lang)


def read_path(
    path: Path, corpus: str, lang: str = "en", max_bytes: int = DEFAULT_MAX_SOURCE_BYTES
) -> Iterator[Fragment]:
    """Fragments from a file or a folder, every file in turn (see `list_sources`)."""
    for src in list_sources(path, max_bytes).files:
        yield from file_fragments(src, corpus, lang)
