"""Corpus builds: the full demo corpora, the split builds that hold parts out, and the registry
of imported corpora (`citegate data import-beir`).

A split build omits a deterministic share of the gita chapters (and of the XQuAD articles); questions
whose gold lies only in the held-out part are the honest hard negatives (`out_of_corpus`) of a
coverage gate. The draw is `citegate.corpus.holdout`'s, the mechanism every split build uses. Each
build has an id: its name plus a digest of the data files and the split.

An imported corpus `NAME` (and its split `NAME-split`) lives in `$CITEGATE_VAR/imports/NAME/`:
`build.json` (source folder, file digests, holdout rule, build ids), the question sets as JSONL
with their MANIFEST.json, and a data card stub. `load_set` finds those sets after the shipped ones.
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.core.fragments import Fragment
from citegate.corpus.holdout import HOLDOUT_SALT, held_out
from citegate.corpus.sources.gita import read_gita
from citegate.corpus.sources.lectures import read_lectures
from citegate.corpus.sources.xquad import load_xquad, read_xquad

SPLIT_SALT = HOLDOUT_SALT
HELDOUT_GITA_CHAPTERS = 4  # of 18
HELDOUT_XQUAD_ARTICLES = 12  # of 48
READER_VERSION = "1"  # bump when a reader or chunker changes what it emits
# The loc_token prefix of an imported fragment ("doc#3": chunk 3 of its document); its addr_label
# is the document id, which is what an imported question's gold names.
DOC_LOC_PREFIX = "doc#"
SPLIT_SUFFIX = "-split"


@cache
def heldout_gita_chapters() -> frozenset[int]:
    """The gita chapters left out of `gita-split` (the lowest salted hashes)."""
    return held_out(range(1, 19), "gita", HELDOUT_GITA_CHAPTERS)


@cache
def heldout_xquad_articles() -> frozenset[str]:
    """The XQuAD article titles left out of `xquad-split`."""
    titles = [a["title"] for a in load_xquad("en")[1]]
    return held_out(titles, "xquad", HELDOUT_XQUAD_ARTICLES)


def fragment_chapter(f: Fragment) -> int | None:
    """The gita chapter a library fragment belongs to (None for lecture transcripts)."""
    if f.kind == "track_transcript" or not f.loc_token:
        return None
    return int(f.loc_token.split(".")[0])


def _gita_all() -> Iterator[Fragment]:
    yield from read_gita()
    yield from read_lectures()


def _gita_split() -> Iterator[Fragment]:
    held = heldout_gita_chapters()
    for f in _gita_all():
        if fragment_chapter(f) not in held:
            yield replace(f, corpus="gita-split")


def _xquad_all() -> Iterator[Fragment]:
    yield from read_xquad()


def _xquad_split() -> Iterator[Fragment]:
    held = {t.replace("_", " ") for t in heldout_xquad_articles()}
    for f in _xquad_all():
        if f.book not in held:
            yield replace(f, corpus="xquad-split")


BUILDS: dict[str, Callable[[], Iterator[Fragment]]] = {
    "gita": _gita_all,
    "gita-split": _gita_split,
    "xquad": _xquad_all,
    "xquad-split": _xquad_split,
}
SOURCE_DIRS = {"gita": ("gita", "lectures"), "xquad": ("xquad",)}


def build_id(name: str) -> str:
    """`name@digest`: changes when the data files, the reader version or the split change. An
    imported build's id is the one its import recorded (`imported_build_id`)."""
    record = import_record(name)
    if record is not None:
        return str(record["builds"][name]["build_id"])
    if name.split("-")[0] not in SOURCE_DIRS:
        raise ConfigError(
            f"unknown corpus build {name!r}: built-in {', '.join(BUILDS)}, or a corpus imported "
            "with `citegate data import-beir`"
        )
    h = hashlib.sha256(f"{name}|{READER_VERSION}|{SPLIT_SALT}".encode())
    for sub in SOURCE_DIRS[name.split("-")[0]]:
        for path in sorted((paths.CORPORA / sub).rglob("*")):
            if path.is_file():
                h.update(path.relative_to(paths.CORPORA).as_posix().encode())
                h.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{name}@{h.hexdigest()[:12]}"


# ---------------------------------------------------------------- imported corpora


def imports_dir() -> Path:
    """`$CITEGATE_VAR/imports`: one folder per imported corpus."""
    return paths.var_dir() / "imports"


def import_folder(name: str) -> Path:
    """The folder of imported corpus `name` (its split build shares it)."""
    return imports_dir() / name.removesuffix(SPLIT_SUFFIX)


def import_record(name: str) -> dict[str, Any] | None:
    """The `build.json` of the import that made build `name` (NAME or NAME-split), or None."""
    for base in dict.fromkeys((name, name.removesuffix(SPLIT_SUFFIX))):
        path = imports_dir() / base / "build.json"
        if path.is_file():
            record = json.loads(path.read_text(encoding="utf-8"))
            if name in record.get("builds", {}):
                return dict(record)
    return None


def is_imported(corpus: str) -> bool:
    """Whether `corpus` is an imported build (its fragments' document ids are addresses)."""
    return import_record(corpus) is not None


def imported_set_path(name: str) -> Path | None:
    """Where an imported question set `name` is written, if any import wrote it."""
    root = imports_dir()
    if not root.is_dir():
        return None
    return next(iter(sorted(root.glob(f"*/{glob.escape(name)}.jsonl"))), None)


def imported_build_id(name: str, source_digest: str, holdout_spec: str = "") -> str:
    """`name@digest` of an imported build: the source files' digest, the reader version and the
    holdout rule (empty for the full build)."""
    h = hashlib.sha256(f"{name}|{READER_VERSION}|{source_digest}|{holdout_spec}".encode())
    return f"{name}@{h.hexdigest()[:12]}"
