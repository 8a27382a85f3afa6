"""Corpus builds: the full demo corpora and the split builds that hold parts out.

A split build omits a deterministic share of the gita chapters (and of the XQuAD articles); questions
whose gold lies only in the held-out part are the honest hard negatives (`out_of_corpus`) of a
coverage gate. Each build has an id: its name plus a digest of the data files and the split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache

from citegate.core import paths
from citegate.core.fragments import Fragment
from citegate.corpus.sources.gita import read_gita
from citegate.corpus.sources.lectures import read_lectures
from citegate.corpus.sources.xquad import load_xquad, read_xquad
from citegate.evaluation.sampling import salted_order

SPLIT_SALT = "citegate-heldout-v1"
HELDOUT_GITA_CHAPTERS = 4  # of 18
HELDOUT_XQUAD_ARTICLES = 12  # of 48
READER_VERSION = "1"  # bump when a reader or chunker changes what it emits


@cache
def heldout_gita_chapters() -> frozenset[int]:
    """The gita chapters left out of `gita-split` (the lowest salted hashes)."""
    ranked = salted_order(range(1, 19), lambda c: f"gita:{c}", SPLIT_SALT)
    return frozenset(ranked[:HELDOUT_GITA_CHAPTERS])


@cache
def heldout_xquad_articles() -> frozenset[str]:
    """The XQuAD article titles left out of `xquad-split`."""
    titles = [a["title"] for a in load_xquad("en")[1]]
    ranked = salted_order(titles, lambda t: f"xquad:{t}", SPLIT_SALT)
    return frozenset(ranked[:HELDOUT_XQUAD_ARTICLES])


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
    """`name@digest`: changes when the data files, the reader version or the split change."""
    h = hashlib.sha256(f"{name}|{READER_VERSION}|{SPLIT_SALT}".encode())
    for sub in SOURCE_DIRS[name.split("-")[0]]:
        for path in sorted((paths.CORPORA / sub).rglob("*")):
            if path.is_file():
                h.update(path.relative_to(paths.CORPORA).as_posix().encode())
                h.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{name}@{h.hexdigest()[:12]}"
