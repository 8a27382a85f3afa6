"""Pair features of the learning-to-rank reranker, computed in Python from the question text and
what a `Scorable` carries (text, cosine, kind, lang, lanes; `addr_label` when the candidate has one),
so the same function serves training (slim traces + texts fetched by fragment id) and serving
(`collect` passes full candidates):

- cosine, its rank within the question's candidates and its gap to the question's best cosine
  (e5 cosines are compressed into ~0.75-0.9, so the relative features carry most of the signal);
- lane flags (dense / lexical / address / address-exact, found in round 2 only) and the lane count;
- character-trigram Jaccard between question and passage (a stand-in for pg_trgm similarity);
- crude-stem overlap (first 5 chars of each lowercase word; a stand-in for the `russian` full-text
  rank) and exact-word overlap (the `simple` config), both normalized by the question's words;
- whether a canonical verse address in the question names the passage's address;
- kind one-hot, log passage length, question/passage language match.

Optional features (`OPTIONAL_FEATURES`) are computed only for a model trained on them; a model file
names its features, so adding one here leaves every saved model scoring as it did:
- `roman_overlap`: the share of the question's Devanagari content words whose romanisation
  (`core.romanise`, diacritics folded, first 5 letters) occurs among the passage's folded words.
  The demo corpus holds the Sanskrit only romanised and no Hindi text, so for a Hindi question
  every other overlap feature is 0 and the reranker would see cosines alone;
- `cyrillic_overlap`: the same for a Russian question's Cyrillic words, written in Latin as Russian
  spells Sanskrit names (`core.romanise.latinise_cyrillic`), against English passages (the gita
  build holds no Russian text);
- the verse-unit features `unit_views`, `unit_lexical`, `unit_overlap`, `unit_cos_gap`: a verse's
  views (its translations and its word meanings, every fragment whose address names the verse) are
  one unit, and each view carries what the pool holds of its whole unit: log(1 + the unit's views in
  the pool), the share of them the lexical lane found, their best stem overlap, their best cosine's
  gap to the pool's best, and 1 / the best round-one rank the lexical lane gave any of them (0
  when it found none: BM25 weighs a rare word above a frame word). A question about a theme the
  verse states ("the soul that cannot be killed") finds many of its translations; a passage that
  shares only a frame word ("Krishna said") is one view alone. A candidate without a verse address
  is a unit of its own, and so is each corpus's copy of a verse.

The candidate pool of a question is what `retrieve._rerank` scores: every candidate that the ANN
lanes found (`ann_missed` ones, seen only by the exact check, are left out of training and eval).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from citegate.core.errors import ConfigError
from citegate.core.fragments import KINDS
from citegate.core.romanise import (
    ascii_fold,
    has_cyrillic,
    has_devanagari,
    latinise_cyrillic,
    romanise,
)
from citegate.core.text import HINDI_STOPWORDS, OVERLAP_STOPWORDS, script_language
from citegate.corpus.sources.address import find_verse_refs, verse_label
from citegate.models.protocols import Scorable

STEM_LEN = 5
_WORD_RE = re.compile(r"\w+", re.UNICODE)

FEATURE_NAMES: tuple[str, ...] = (
    "cosine",
    "cos_rank",
    "cos_gap",
    "lane_dense",
    "lane_lexical",
    "lane_address",
    "lane_address_exact",
    "round2_only",
    "n_lanes",
    "trgm_jaccard",
    "stem_overlap",
    "word_overlap",
    "address_match",
    *(f"kind_{k}" for k in KINDS),
    "log_len",
    "lang_match",
)
UNIT_FEATURES: tuple[str, ...] = (
    "unit_views",
    "unit_lexical",
    "unit_overlap",
    "unit_cos_gap",
    "unit_lexical_rank",
)
OPTIONAL_FEATURES: tuple[str, ...] = ("roman_overlap", "cyrillic_overlap", *UNIT_FEATURES)
KNOWN_FEATURES: tuple[str, ...] = FEATURE_NAMES + OPTIONAL_FEATURES


def check_feature_names(names: Sequence[str]) -> tuple[str, ...]:
    """`names` as a tuple; ConfigError when one is unknown, repeated, or `cosine` is missing (the
    training's model selection breaks ties by it)."""
    names = tuple(names)
    unknown = [n for n in names if n not in KNOWN_FEATURES]
    if unknown or len(set(names)) != len(names) or "cosine" not in names:
        raise ConfigError(
            f"LTR feature list {list(names)} has unknown {unknown} or repeated names or no "
            f"'cosine'; known: {list(KNOWN_FEATURES)}"
        )
    return names


def _words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text.lower()) if len(w) > 2 and w not in OVERLAP_STOPWORDS]


def trigrams(text: str) -> frozenset[str]:
    """pg_trgm-style trigrams: lowercase alphanumeric words, each padded "  w " then cut in 3s."""
    out: set[str] = set()
    for w in _WORD_RE.findall(text.lower()):
        padded = f"  {w} "
        out.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


@dataclass(frozen=True)
class _Profile:
    trigrams: frozenset[str]
    words: frozenset[str]
    stems: frozenset[str]
    log_len: float


@lru_cache(maxsize=50_000)
def _profile(text: str) -> _Profile:
    words = _words(text)
    return _Profile(
        trigrams(text),
        frozenset(words),
        frozenset(w[:STEM_LEN] for w in words),
        math.log1p(len(text)),
    )


@lru_cache(maxsize=50_000)
def _folded_stems(text: str) -> frozenset[str]:
    """The first `STEM_LEN` letters of each word of `text` with its diacritics dropped
    ("dṛiṣhṭvā" -> "drish"): what a romanised Devanagari word is looked up in."""
    return frozenset(w[:STEM_LEN] for w in _words(ascii_fold(text)))


@lru_cache(maxsize=10_000)
def roman_stems(question: str) -> frozenset[str]:
    """The folded stems (`_folded_stems`) of the romanisations of the question's Devanagari
    content words; empty for a question without Devanagari. Words are cut at non-letters other
    than combining marks, which `\\w` would split a Devanagari word at."""
    if not has_devanagari(question):
        return frozenset()
    kept = "".join(
        c if c.isalnum() or unicodedata.category(c).startswith("M") else " " for c in question
    )
    words = [w for w in kept.split() if has_devanagari(w) and w not in HINDI_STOPWORDS]
    return frozenset(stem for w in words for stem in _folded_stems(romanise(w)))


@lru_cache(maxsize=10_000)
def cyrillic_stems(question: str) -> frozenset[str]:
    """The folded stems of the question's Russian content words written in Latin
    (`latinise_cyrillic`); empty for a question without Cyrillic."""
    if not has_cyrillic(question):
        return frozenset()
    words = [w for w in _words(question) if has_cyrillic(w)]
    return frozenset(stem for w in words for stem in _folded_stems(latinise_cyrillic(w)))


def clear_caches() -> None:
    """Forget the per-text profiles (so a throughput measurement starts cold)."""
    _profile.cache_clear()
    _folded_stems.cache_clear()
    roman_stems.cache_clear()
    cyrillic_stems.cache_clear()


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _share(q: frozenset[str], p: frozenset[str]) -> float:
    return len(q & p) / len(q) if q else 0.0


def _lane_family(tag: str) -> str:
    lane = tag.split("@", 1)[0]
    if lane.startswith(("dense:", "exact:")):
        return "dense"
    if lane.startswith("address:exact"):
        return "address_exact"
    if lane.startswith("address"):
        return "address"
    if lane.startswith("lexical"):
        return "lexical"
    return "other"


def features(
    question: str, cands: Sequence[Scorable], names: Sequence[str] = FEATURE_NAMES
) -> np.ndarray:
    """The (len(cands), len(names)) float matrix of pair features, columns in `names`' order
    (default `FEATURE_NAMES`; any of `KNOWN_FEATURES`).

    Each candidate needs `text`, `score` (cosine), `kind`, `lang`, `lanes`; `addr_label` is read when
    present. The relative features (`cos_rank`, `cos_gap`) are computed over `cands`, which should be
    the question's whole candidate pool."""
    base = _base_features(question, cands)
    names = tuple(names)
    if names == FEATURE_NAMES:
        return base
    full = np.zeros((len(cands), len(KNOWN_FEATURES)), dtype=np.float64)
    full[:, : len(FEATURE_NAMES)] = base
    if "roman_overlap" in names:
        q = roman_stems(question)
        col = KNOWN_FEATURES.index("roman_overlap")
        full[:, col] = [_share(q, _folded_stems(c.text or "")) for c in cands]
    if "cyrillic_overlap" in names:
        q = cyrillic_stems(question)
        col = KNOWN_FEATURES.index("cyrillic_overlap")
        full[:, col] = [_share(q, _folded_stems(c.text or "")) for c in cands]
    if any(n in UNIT_FEATURES for n in names):
        at = [KNOWN_FEATURES.index(n) for n in UNIT_FEATURES]
        full[:, at] = unit_columns(cands, base)
    return full[:, [KNOWN_FEATURES.index(n) for n in check_feature_names(names)]]


@lru_cache(maxsize=50_000)
def _unit_of_label(label: str) -> str | None:
    refs = find_verse_refs(label)
    return verse_label(*refs[0]) if refs else None


def verse_unit(c: Scorable) -> str | None:
    """The verse a candidate is a view of (its address: a translation's "BG 2.20", word meanings'
    "BG 2.20 word meanings"), None for a candidate that names no verse."""
    label = getattr(c, "addr_label", None)
    if not label or c.kind not in ("verse", "commentary"):
        return None
    return _unit_of_label(label)


def unit_columns(cands: Sequence[Scorable], base: np.ndarray) -> np.ndarray:
    """The `UNIT_FEATURES` columns from the pool and its base feature matrix."""
    units: dict[tuple[str, str], list[int]] = {}
    for i, c in enumerate(cands):
        units.setdefault((getattr(c, "corpus", ""), verse_unit(c) or f"#{i}"), []).append(i)
    out = np.zeros((len(cands), len(UNIT_FEATURES)), dtype=np.float64)
    lexical, overlap = base[:, _COL["lane_lexical"]], base[:, _COL["stem_overlap"]]
    gap = base[:, _COL["cos_gap"]]
    inv_rank = np.array([1.0 / r if (r := getattr(c, "lex_rank", None)) else 0.0 for c in cands])
    for members in units.values():
        out[members] = (
            math.log1p(len(members)),
            float(lexical[members].mean()),
            float(overlap[members].max()),
            float(gap[members].max()),
            float(inv_rank[members].max()),
        )
    return out


def _base_features(question: str, cands: Sequence[Scorable]) -> np.ndarray:
    """The `FEATURE_NAMES` columns of `features`."""
    n = len(cands)
    out = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float64)
    if n == 0:
        return out
    _fill_cosines(out, cands)
    query = _Query(
        _profile(question),
        script_language(question),
        frozenset(verse_label(c, v) for c, v in find_verse_refs(question)),
    )
    for i, c in enumerate(cands):
        _fill_row(out[i], query, c)
    return out


_COL = {name: i for i, name in enumerate(FEATURE_NAMES)}


@dataclass(frozen=True)
class _Query:
    """What the features read of the question: its text profile, language and verse addresses."""

    profile: _Profile
    lang: str
    addresses: frozenset[str]


def _fill_cosines(out: np.ndarray, cands: Sequence[Scorable]) -> None:
    """Cosine, its rank in the pool (1 + number of strictly better cosines) and gap to the best."""
    cos = np.array([float(c.score) for c in cands], dtype=np.float64)
    desc = np.sort(-cos)
    out[:, _COL["cosine"]] = cos
    out[:, _COL["cos_rank"]] = np.searchsorted(desc, -cos, side="left") + 1
    out[:, _COL["cos_gap"]] = cos - cos.max()


def _fill_row(row: np.ndarray, query: _Query, c: Scorable) -> None:
    """The lane, text-overlap, address, kind, length and language features of one candidate."""
    tags = tuple(c.lanes or ())
    fams = {_lane_family(t) for t in tags}
    row[_COL["lane_dense"]] = "dense" in fams
    row[_COL["lane_lexical"]] = "lexical" in fams
    row[_COL["lane_address"]] = "address" in fams
    row[_COL["lane_address_exact"]] = "address_exact" in fams
    row[_COL["round2_only"]] = bool(tags) and not any(t.endswith("@r1") for t in tags)
    row[_COL["n_lanes"]] = len(tags)
    qp, pp = query.profile, _profile(c.text or "")
    row[_COL["trgm_jaccard"]] = _jaccard(qp.trigrams, pp.trigrams)
    row[_COL["stem_overlap"]] = _share(qp.stems, pp.stems)
    row[_COL["word_overlap"]] = _share(qp.words, pp.words)
    addr = getattr(c, "addr_label", None)
    row[_COL["address_match"]] = bool(query.addresses and addr and addr in query.addresses)
    if c.kind in KINDS:
        row[_COL[f"kind_{c.kind}"]] = 1.0
    row[_COL["log_len"]] = pp.log_len
    row[_COL["lang_match"]] = (c.lang or "").split("-")[0].lower() == query.lang
