"""Notebook 04's citation check: are an answer's cited claims supported by the sources it cites?

`validate_citations` splits an answer into claims (`pipeline.citations.split_claims`), asks per
claim whether any cited chunk is close enough in embedding space (one supporting source
suffices), and flags markers that name a source the model was never offered (fabricated).

The support test is a cosine threshold and nothing more. With the bundled multilingual-e5-small,
almost any two English texts score 0.75-0.9, so the design's 0.50 passes nearly every claim: the
cosine orders claims sensibly, but 0.50 does not separate supported from unrelated ones. Hence
`threshold` is a parameter and every row keeps its cosine, so that reports can say so. A live
turn checks its claims with `pipeline.claimcheck` at the certified support threshold instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from citegate.core.types import ClaimStatus
from citegate.models.embed import Embedder
from citegate.pipeline.citations import Claim, canonical_marker, split_claims

DEFAULT_THRESHOLD = 0.50


def canonical_key(key: str) -> str:
    """A source id as markers name it (see `canonical_marker`); unparsable ids stay as given."""
    return canonical_marker(key) or key.strip()


@dataclass(frozen=True)
class CitationRow:
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

    rows: tuple[CitationRow, ...]
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


def _check(claim: Claim, cosines: np.ndarray, ids: Sequence[str], threshold: float) -> CitationRow:
    """The verdict for one claim from its row of cosines against the offered chunks `ids`."""
    column = {key: i for i, key in enumerate(ids)}
    cited = [column[m] for m in claim.markers if m in column]
    fabricated = tuple(m for m in claim.markers if m not in column)
    best = max(float(cosines[i]) for i in cited) if cited else None
    nearest = float(cosines.max()) if len(ids) else None
    supported = best is not None and best >= threshold
    return CitationRow(claim.text, claim.markers, best, supported, fabricated, nearest)


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
