"""The claim validator's numbers for notebook 06: how well a support score separates supported
from unsupported (claim, note) pairs, and the threshold certified to a false-support rate.

Input: the labeled claim set (`corpus.claims.ClaimPair`, or anything with the same fields) and
one support score per pair. A *false support* is an unsupported pair (label 0) scored at or
above the threshold: the claim check would show an unsupported claim as supported.

- `roc_table`: AUROC per slice (all pairs; each corpus; each corpus x claim language x note
  language, so cross-lingual pairs stay apart; each corpus x family x language), with two
  95% intervals: whole groups (verses, articles) resampled, since one verse's or one article's
  pairs rise and fall together, and pairs resampled (iid) beside it to show what ignoring the
  clusters would claim.
- `certify_support`: the lowest threshold whose exact (Clopper-Pearson) upper bound of the
  false-support rate on the tune part is <= alpha at confidence 1 - delta
  (`evaluation.certify.certify_threshold`, the gate's certificate). `per="corpus"` (the
  report's default) certifies each corpus's negatives on its own at delta / (number of corpora)
  and keeps the strictest threshold: pooled, xquad's easy negatives would let gita's false
  supports pass above alpha. Negatives count per pair by default, the binomial model then
  assuming them independent; `by_group` counts one false support per group whose ANY negative
  passes, the assumption-light form, which needs >= 59 negative groups to certify 0.05 at all.
- `realise`: that threshold on the test part, per slice: the false-support rate with its Wilson
  interval and a clustered interval, and the share of supported pairs kept (recall).

Pure functions on arrays and plain dataclasses; bootstraps are seeded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from citegate.evaluation import metrics as M
from citegate.evaluation.certify import Certified, CertifiedKinds, certify_kinds, certify_threshold
from citegate.evaluation.clustered import cluster_rate_ci

ALPHA = 0.05  # the false-support rate certified
DELTA = 0.05  # 1 - confidence of the certificate
ALL = "*"


class PairLike(Protocol):
    """The fields of a labeled pair the compute reads."""

    corpus: str
    language: str
    note_language: str
    label: int
    family: str
    group: str
    split: str


@dataclass(frozen=True)
class Slice:
    """A named subset of the pairs: corpus, claim language, note language, family (`*` = all)."""

    corpus: str = ALL
    language: str = ALL
    note_language: str = ALL
    family: str = ALL

    def holds(self, p: PairLike) -> bool:
        """Whether pair `p` belongs to this slice."""
        return all(
            want in (ALL, got)
            for want, got in (
                (self.corpus, p.corpus),
                (self.language, p.language),
                (self.note_language, p.note_language),
                (self.family, p.family),
            )
        )

    @property
    def name(self) -> str:
        """A table label such as `xquad ru->en answer_sentence` (`all` for everything)."""
        parts = [self.corpus]
        if self.language != ALL:
            arrow = f"->{self.note_language}" if self.note_language != ALL else ""
            parts.append(f"{self.language}{arrow}")
        if self.family != ALL:
            parts.append(self.family)
        return "all" if parts == [ALL] else " ".join(parts)


@dataclass(frozen=True)
class RocRow:
    """AUROC of one slice, with its clustered (by group) and iid 95% bootstrap intervals."""

    slice: Slice
    n_pos: int
    n_neg: int
    n_groups: int
    auroc: float
    lower: float
    upper: float
    lower_iid: float
    upper_iid: float


@dataclass(frozen=True)
class RealisedRow:
    """A threshold on one slice of held-out pairs: false supports among the unsupported pairs
    (Wilson and clustered 95% intervals) and supported pairs kept (recall, Wilson interval)."""

    slice: Slice
    threshold: float
    n_neg: int
    false_supports: int
    false_support_rate: float
    fsr_lower: float
    fsr_upper: float
    fsr_cluster_lower: float
    fsr_cluster_upper: float
    n_pos: int
    kept: int
    recall: float
    recall_lower: float
    recall_upper: float


@dataclass(frozen=True)
class ValidatorReport:
    """Everything notebook 06's validator part shows: the ROC table of the test part, the
    certificate from the tune part, and the certified threshold realised on the test part."""

    mode: str
    roc: tuple[RocRow, ...]
    certified: Certified | CertifiedKinds
    realised: tuple[RealisedRow, ...]


def slices(pairs: Sequence[PairLike]) -> list[Slice]:
    """All pairs; each corpus; each corpus x claim language x note language; each corpus x
    family x claim language: the rows every table reports (only those holding pairs)."""
    out = [Slice()]
    out += [Slice(c) for c in sorted({p.corpus for p in pairs})]
    out += [
        Slice(c, lang, note)
        for c, lang, note in sorted({(p.corpus, p.language, p.note_language) for p in pairs})
    ]
    out += [
        Slice(c, lang, family=f)
        for c, f, lang in sorted({(p.corpus, p.family, p.language) for p in pairs})
    ]
    return out


def _arrays(pairs: Sequence[PairLike], scores: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
    if s.shape != (len(pairs),):
        raise ValueError(f"need one score per pair ({len(pairs)} pairs, scores {s.shape})")
    return s, np.array([int(p.label) for p in pairs], dtype=int)


def _mask(pairs: Sequence[PairLike], keep: Callable[[PairLike], bool]) -> np.ndarray:
    return np.array([keep(p) for p in pairs], dtype=bool)


def roc_row(
    pairs: Sequence[PairLike], scores: ArrayLike, sl: Slice, n_boot: int = 1000, seed: int = 0
) -> RocRow:
    """One slice's AUROC with clustered and iid intervals (NaN when it lacks a class)."""
    s, y = _arrays(pairs, scores)
    m = _mask(pairs, sl.holds)
    groups = np.array([p.group for p in pairs], dtype=object)[m]
    n_pos, n_neg = int(y[m].sum()), int((y[m] == 0).sum())
    if not n_pos or not n_neg:
        nan = math.nan
        return RocRow(sl, n_pos, n_neg, len(set(groups)), nan, nan, nan, nan, nan)
    clustered = M.auroc_ci(s[m], y[m], n_boot=n_boot, seed=seed, groups=groups)
    iid = M.auroc_ci(s[m], y[m], n_boot=n_boot, seed=seed)
    return RocRow(
        sl,
        n_pos,
        n_neg,
        len(set(groups)),
        clustered.auroc,
        clustered.lower,
        clustered.upper,
        iid.lower,
        iid.upper,
    )


def roc_table(
    pairs: Sequence[PairLike],
    scores: ArrayLike,
    split: str | None = "test",
    n_boot: int = 1000,
    seed: int = 0,
) -> list[RocRow]:
    """`roc_row` of every slice of the pairs of `split` (all pairs when None)."""
    s, _ = _arrays(pairs, scores)
    m = _mask(pairs, lambda p: split is None or p.split == split)
    kept = [p for p, k in zip(pairs, m, strict=True) if k]
    return [roc_row(kept, s[m], sl, n_boot, seed) for sl in slices(kept)]


def certify_support(
    pairs: Sequence[PairLike],
    scores: ArrayLike,
    alpha: float = ALPHA,
    delta: float = DELTA,
    split: str = "tune",
    by_group: bool = False,
    per: str | None = None,
) -> Certified | CertifiedKinds:
    """The lowest threshold whose Clopper-Pearson bound of the false-support rate on the pairs
    of `split` is <= alpha (fixed-sequence test, `certify_threshold`); `answer_rate` is then the
    share of supported pairs kept. `by_group`: count negatives per group (see module doc).

    `per` (a pair field, e.g. "corpus"): certify the negatives of each value of that field on
    their own, delta split evenly among them (`certify_kinds`), and keep the strictest
    threshold, so no corpus's false-support rate hides behind an easier one's."""
    s, y = _arrays(pairs, scores)
    m = _mask(pairs, lambda p: p.split == split)
    if not m.any():
        raise ValueError(f"no pairs in split {split!r}: nothing to certify")
    units = np.array([p.group for p in pairs], dtype=object)[m] if by_group else None
    if per is None:
        return certify_threshold(s[m], y[m], alpha, delta, kind="false_support", units=units)
    kept = [p for p, k in zip(pairs, m, strict=True) if k]
    values = sorted({str(getattr(p, per)) for p in kept if p.label == 0})
    labels = {
        v: np.array([1 if p.label else (0 if str(getattr(p, per)) == v else -1) for p in kept])
        for v in values
    }
    return certify_kinds(s[m], labels, alpha, delta, units=units)


def realised_row(
    pairs: Sequence[PairLike], scores: ArrayLike, threshold: float, sl: Slice, n_boot: int = 1000
) -> RealisedRow:
    """One slice's false supports and recall at `threshold` (rates NaN for an empty class)."""
    s, y = _arrays(pairs, scores)
    m = _mask(pairs, sl.holds)
    passed = s >= threshold
    groups = np.array([p.group for p in pairs], dtype=object)
    neg, pos = m & (y == 0), m & (y == 1)
    fsr, f_lo, f_hi = M.rate_ci_or_nan(passed[neg])
    c_lo, c_hi = cluster_rate_ci(passed[neg].astype(float), groups[neg].astype(str), n_boot)
    rec, r_lo, r_hi = M.rate_ci_or_nan(passed[pos])
    return RealisedRow(
        sl,
        float(threshold),
        int(neg.sum()),
        int(passed[neg].sum()),
        fsr,
        f_lo,
        f_hi,
        c_lo,
        c_hi,
        int(pos.sum()),
        int(passed[pos].sum()),
        rec,
        r_lo,
        r_hi,
    )


def realise(
    pairs: Sequence[PairLike],
    scores: ArrayLike,
    threshold: float,
    split: str = "test",
    n_boot: int = 1000,
) -> list[RealisedRow]:
    """`realised_row` of every slice of the pairs of `split`."""
    s, _ = _arrays(pairs, scores)
    m = _mask(pairs, lambda p: p.split == split)
    kept = [p for p, k in zip(pairs, m, strict=True) if k]
    return [realised_row(kept, s[m], threshold, sl, n_boot) for sl in slices(kept)]


def validator_report(
    pairs: Sequence[PairLike],
    scores: ArrayLike,
    mode: str,
    alpha: float = ALPHA,
    delta: float = DELTA,
    n_boot: int = 1000,
    per: str | None = "corpus",
) -> ValidatorReport:
    """ROC on the test part, the certificate on the tune part (per corpus by default:
    `certify_support`), and its threshold on the test part: the tune part chooses, the test
    part only reports."""
    cert = certify_support(pairs, scores, alpha, delta, per=per)
    return ValidatorReport(
        mode,
        tuple(roc_table(pairs, scores, "test", n_boot)),
        cert,
        tuple(realise(pairs, scores, cert.threshold, "test", n_boot)),
    )
