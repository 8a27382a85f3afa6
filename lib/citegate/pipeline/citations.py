"""Post-hoc checks of an answer's citations, and the [SOURCED]/[INFERRED] audit.

An answer is split into sentence-level claims, each with the citation markers it carries:
numbered (`[1]`, `[2, 3]`, `[S1]`, where `S1` and `1` name the same source) or address-style
(`[BG 2.13]`, `[Gita 2:13]`, all read as the canonical `BG 2.13`). `validate_citations` then asks,
per claim, whether any cited chunk is close enough in embedding space (one supporting source
suffices), and flags markers that name a source the model was never offered (fabricated).
`audit_sourced` downgrades [SOURCED] claims that cite nothing from the retrieved set.

The support test is a cosine threshold and nothing more. With the bundled multilingual-e5-small,
almost any two English texts score 0.75-0.9, so the design's 0.50 passes nearly every claim: the
cosine orders claims sensibly, but 0.50 does not separate supported from unrelated ones. Hence
`threshold` is a parameter and every row keeps its cosine, so that reports can say so.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from citegate.core.types import ClaimStatus
from citegate.corpus.chunking import split_sentences
from citegate.corpus.sources.address import find_verse_refs, verse_label
from citegate.models.embed import Embedder

SOURCED = "SOURCED"
INFERRED = "INFERRED"
DEFAULT_THRESHOLD = 0.50

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


def canonical_key(key: str) -> str:
    """A source id as markers name it (see `canonical_marker`); unparsable ids stay as given."""
    return canonical_marker(key) or key.strip()


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


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class ClaimCheck:
    """One claim's verdict: best cosine over the offered chunks it cites (None if it cites none
    that were offered), supported (that cosine ≥ threshold), the never-offered ids it cites, and
    the best cosine over ALL offered chunks (cited or not: what an uncited claim could have cited)."""

    text: str
    markers: tuple[str, ...]
    best_cosine: float | None
    supported: bool
    fabricated: tuple[str, ...]
    nearest_offered: float | None

    @property
    def status(self) -> ClaimStatus:
        """uncited | supported | unsupported | fabricated (cites only never-offered sources)."""
        if not self.markers:
            return ClaimStatus.UNCITED
        if self.best_cosine is None:
            return ClaimStatus.FABRICATED
        return ClaimStatus.SUPPORTED if self.supported else ClaimStatus.UNSUPPORTED


@dataclass(frozen=True)
class CitationReport:
    """Per-claim rows and their totals, with the threshold and embedder that produced them."""

    rows: tuple[ClaimCheck, ...]
    threshold: float
    embedder_id: str

    @property
    def claims(self) -> int:
        """Number of claims."""
        return len(self.rows)

    @property
    def cited(self) -> int:
        """Claims carrying at least one marker."""
        return sum(1 for r in self.rows if r.markers)

    @property
    def uncited(self) -> int:
        """Claims carrying no marker."""
        return self.claims - self.cited

    @property
    def supported(self) -> int:
        """Claims with a cited, offered chunk at cosine ≥ threshold."""
        return sum(1 for r in self.rows if r.supported)

    @property
    def supported_share(self) -> float:
        """Supported claims / cited claims (0.0 when nothing is cited)."""
        return self.supported / self.cited if self.cited else 0.0

    @property
    def cited_share(self) -> float:
        """Cited claims / all claims (0.0 for an empty answer)."""
        return self.cited / self.claims if self.claims else 0.0

    @property
    def fabricated_markers(self) -> int:
        """Citations of never-offered sources, counted once per claim and id."""
        return sum(len(r.fabricated) for r in self.rows)

    @property
    def fabricated_ids(self) -> tuple[str, ...]:
        """The distinct never-offered ids cited, sorted."""
        return tuple(sorted({m for r in self.rows for m in r.fabricated}))

    def totals(self) -> dict[str, float]:
        """The totals as a flat dict (fit for MLflow metrics)."""
        return {
            "claims": float(self.claims),
            "cited": float(self.cited),
            "uncited": float(self.uncited),
            "supported": float(self.supported),
            "supported_share": self.supported_share,
            "cited_share": self.cited_share,
            "fabricated_markers": float(self.fabricated_markers),
            "threshold": self.threshold,
        }


def _similarities(embedder: Embedder, claims: Sequence[str], chunks: Sequence[str]) -> np.ndarray:
    """Cosines claims × chunks: ONE query batch and ONE passage batch (none if either is empty)."""
    if not claims or not chunks:
        return np.zeros((len(claims), len(chunks)), dtype=np.float32)
    queries = embedder.embed_queries(list(claims))
    passages = embedder.embed_passages(list(chunks))
    return np.asarray(queries @ passages.T, dtype=np.float32)


def _check(claim: Claim, cosines: np.ndarray, ids: Sequence[str], threshold: float) -> ClaimCheck:
    """The verdict for one claim from its row of cosines against the offered chunks `ids`."""
    column = {key: i for i, key in enumerate(ids)}
    cited = [column[m] for m in claim.markers if m in column]
    fabricated = tuple(m for m in claim.markers if m not in column)
    best = max(float(cosines[i]) for i in cited) if cited else None
    nearest = float(cosines.max()) if len(ids) else None
    supported = best is not None and best >= threshold
    return ClaimCheck(claim.text, claim.markers, best, supported, fabricated, nearest)


def validate_citations(
    answer: str,
    offered: Mapping[str, str],
    embedder: Embedder,
    threshold: float = DEFAULT_THRESHOLD,
) -> CitationReport:
    """Check every claim's citations against the chunks offered to the model.

    `offered` maps a source id as the model was told it ("1", "S1", "BG 2.13") to that chunk's
    text. Claims are embedded as queries and chunks as passages (e5 prefixes), one batched call
    each. A claim is supported when ANY offered chunk it cites reaches cosine ≥ `threshold`;
    cited ids that were never offered are fabricated; claims without markers are uncited.
    """
    claims = split_claims(answer)
    chunks = {canonical_key(k): v for k, v in offered.items()}
    ids = list(chunks)
    cosines = _similarities(embedder, [c.text for c in claims], [chunks[i] for i in ids])
    rows = tuple(_check(c, cosines[n], ids, threshold) for n, c in enumerate(claims))
    return CitationReport(rows, threshold, str(getattr(embedder, "id", "unknown")))


# --------------------------------------------------------------------------- audit


@dataclass(frozen=True)
class AuditReport:
    """The answer after the audit, and its tag counts: `sourced` claims still [SOURCED],
    `inferred` claims [INFERRED] after the audit (downgrades included), `downgraded` of them
    were [SOURCED] before, `untagged` claims carry neither tag."""

    text: str
    sourced: int
    inferred: int
    downgraded: int
    untagged: int
    downgraded_claims: tuple[str, ...]


def _retag(answer: str, spans: Sequence[tuple[int, int]]) -> str:
    """The answer with each span (a [SOURCED] tag) replaced by [INFERRED]."""
    out = answer
    for a, b in sorted(spans, reverse=True):
        out = f"{out[:a]}[{INFERRED}]{out[b:]}"
    return out


def audit_sourced(answer: str, retrieved_ids: Collection[str]) -> AuditReport:
    """Downgrade [SOURCED] claims none of whose markers names a retrieved source.

    `retrieved_ids` are in the answer's id space (the ids the sources were offered under, e.g.
    "1" or "BG 2.13"). A [SOURCED] claim that cites nothing is downgraded too: nothing backs it.
    """
    retrieved = {canonical_key(str(r)) for r in retrieved_ids}
    claims = split_claims(answer)
    demoted = [c for c in claims if c.tag == SOURCED and not any(m in retrieved for m in c.markers)]
    spans = [c.tag_span for c in demoted if c.tag_span is not None]
    sourced = sum(1 for c in claims if c.tag == SOURCED) - len(demoted)
    inferred = sum(1 for c in claims if c.tag == INFERRED) + len(demoted)
    untagged = sum(1 for c in claims if c.tag is None)
    return AuditReport(
        _retag(answer, spans),
        sourced,
        inferred,
        len(demoted),
        untagged,
        tuple(c.text for c in demoted),
    )
