"""Corpus builds: the full demo corpora, the split builds that hold parts out, and the registry
of imported corpora (`citegate data import-beir`).

A split build omits a deterministic share of the gita chapters (and of the XQuAD articles); questions
whose gold lies only in the held-out part are the honest hard negatives (`out_of_corpus`) of a
coverage gate. The draw is `citegate.corpus.holdout`'s, the mechanism every split build uses. Each
build has an id: its name plus a digest of the data files and the split.

An imported corpus `NAME` (its split `NAME-split` and its fold builds `NAME-fold1..K`) lives in
`$CITEGATE_VAR/imports/NAME/`: `build.json` (source folder, file digests, holdout and fold rules,
build ids), the question sets as JSONL with their MANIFEST.json, `folds.json` (each document's
fold, when the import has folds) and a data card stub. `load_set` finds those sets after the
shipped ones.
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.core.fragments import Fragment
from citegate.corpus.holdout import HOLDOUT_SALT, folds, held_out
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
# Leave-out folds of the demo corpora: every chapter (article) is held out by exactly one fold
# build `gita-fold1` .. `gita-fold6`. 6 x 3 chapters keeps each fold build's share held out (1/6)
# near gita-split's 4/18, so a fold build searches a corpus close to production's; xquad's 4 x 12
# articles is xquad-split's share (1/4) exactly. Both give every fold enough question groups: gita's
# 515 verse groups, ~86 per fold; xquad's 240 paragraphs, ~60 per fold.
DEMO_FOLDS = {"gita": 6, "xquad": 4}
FOLD_MAP_FILE = "folds.json"  # an import's document -> fold map (see `import_document_folds`)
_FOLD_NAME = re.compile(r"(.+)-fold(\d+)")


@cache
def heldout_gita_chapters() -> frozenset[int]:
    """The gita chapters left out of `gita-split` (the lowest salted hashes)."""
    return held_out(range(1, 19), "gita", HELDOUT_GITA_CHAPTERS)


@cache
def heldout_xquad_articles() -> frozenset[str]:
    """The XQuAD article titles left out of `xquad-split`."""
    titles = [a["title"] for a in load_xquad("en")[1]]
    return held_out(titles, "xquad", HELDOUT_XQUAD_ARTICLES)


@cache
def gita_chapter_folds() -> dict[int, int]:
    """chapter -> the fold build (1..6) that holds it out; the draw `heldout_gita_chapters` uses,
    dealt round-robin (`corpus.holdout.folds`)."""
    return folds(range(1, 19), "gita", DEMO_FOLDS["gita"])


@cache
def xquad_article_folds() -> dict[str, int]:
    """XQuAD article title -> the fold build (1..4) that holds it out."""
    titles = [a["title"] for a in load_xquad("en")[1]]
    return folds(titles, "xquad", DEMO_FOLDS["xquad"])


def fold_build(base: str, fold: int) -> str:
    """The name of leave-out fold `fold` of corpus `base`: `gita-fold3`."""
    return f"{base}-fold{fold}"


def parse_fold(name: str) -> tuple[str, int] | None:
    """(base corpus, fold) of a fold build's name, None for any other name."""
    m = _FOLD_NAME.fullmatch(name)
    return (m.group(1), int(m.group(2))) if m else None


def fold_count(base: str) -> int:
    """How many leave-out fold builds corpus `base` has: `DEMO_FOLDS` for a demo corpus, the k
    recorded by `citegate data split NAME --folds K` for an imported one, else 0."""
    if base in DEMO_FOLDS:
        return DEMO_FOLDS[base]
    record = import_record(base)
    if record is None or record["name"] != base or not record.get("folds"):
        return 0
    return int(record["folds"]["k"])


def fold_builds(base: str) -> list[str]:
    """Every fold build of a corpus, fold 1 first ([] for a corpus without folds)."""
    return [fold_build(base, i) for i in range(1, fold_count(base) + 1)]


def parent_build(name: str) -> str:
    """The full build a leave-out build is cut from (`gita-split`, `gita-fold3` -> `gita`); any
    other name is its own parent."""
    fold = parse_fold(name)
    return fold[0] if fold else name.removesuffix(SPLIT_SUFFIX)


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


def _gita_fold(fold: int) -> Callable[[], Iterator[Fragment]]:
    def read() -> Iterator[Fragment]:
        folds_of, name = gita_chapter_folds(), fold_build("gita", fold)
        for f in _gita_all():
            chapter = fragment_chapter(f)
            if chapter is None or folds_of[chapter] != fold:
                yield replace(f, corpus=name)

    return read


def _xquad_fold(fold: int) -> Callable[[], Iterator[Fragment]]:
    def read() -> Iterator[Fragment]:
        folds_of, name = xquad_article_folds(), fold_build("xquad", fold)
        held = {t.replace("_", " ") for t, k in folds_of.items() if k == fold}
        for f in _xquad_all():
            if f.book not in held:
                yield replace(f, corpus=name)

    return read


BUILDS: dict[str, Callable[[], Iterator[Fragment]]] = {
    "gita": _gita_all,
    "gita-split": _gita_split,
    "xquad": _xquad_all,
    "xquad-split": _xquad_split,
    **{fold_build("gita", i): _gita_fold(i) for i in range(1, DEMO_FOLDS["gita"] + 1)},
    **{fold_build("xquad", i): _xquad_fold(i) for i in range(1, DEMO_FOLDS["xquad"] + 1)},
}
SOURCE_DIRS = {"gita": ("gita", "lectures"), "xquad": ("xquad",)}


def build_id(name: str) -> str:
    """`name@digest`: changes when the data files, the reader version or the split change. An
    imported build's id is the one its import recorded (`imported_build_id`)."""
    record = import_record(name)
    if record is not None:
        return str(record["builds"][name]["build_id"])
    if name.split("-")[0] not in SOURCE_DIRS or (parse_fold(name) and name not in BUILDS):
        raise ConfigError(
            f"unknown corpus build {name!r}: built-in {', '.join(BUILDS)}, or a corpus imported "
            "with `citegate data import-beir`"
        )
    key = f"{name}|{READER_VERSION}|{SPLIT_SALT}"
    if parse_fold(name):  # the fold count is part of the draw (gita-fold1 of 6 != of 5)
        key += f"|folds {DEMO_FOLDS[parent_build(name)]}"
    h = hashlib.sha256(key.encode())
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
    """The folder of imported corpus `name` (its split and fold builds share it)."""
    return imports_dir() / parent_build(name)


def import_record(name: str) -> dict[str, Any] | None:
    """The `build.json` of the import that made build `name` (NAME, NAME-split or NAME-foldK),
    or None."""
    for base in dict.fromkeys((name, parent_build(name))):
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


def import_document_folds(base: str) -> dict[str, int]:
    """document id -> the fold build (1..k) of imported corpus `base` that holds it out, read
    from its `folds.json` ({} when the import has no folds). Kept out of build.json, which every
    `build_id` call reads, because it lists every document."""
    path = imports_dir() / base / FOLD_MAP_FILE
    if not path.is_file():
        return {}
    return _read_fold_map(str(path), path.stat().st_mtime_ns)


@cache
def _read_fold_map(path: str, mtime_ns: int) -> dict[str, int]:
    """The `documents` map of a folds.json (cached per file version: `mtime_ns` is the key)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {str(d): int(k) for d, k in data["documents"].items()}


def fold_map_json(rule: Mapping[str, object], documents: Mapping[str, int]) -> str:
    """The text of an import's folds.json: the fold rule and every document's fold."""
    return json.dumps({**rule, "documents": dict(sorted(documents.items()))}, indent=1) + "\n"
