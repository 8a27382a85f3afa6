"""Experiment 05's certified thresholds: each gate's threshold certified on tune (Clopper–Pearson per
kind of negative, Bonferroni over the kinds), its realised false-answer and answer rates on test,
and the production `LearnedGate` a certified logistic gate becomes.

Pure functions of the signal frame, fitted gates and certificates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import TooFewQuestions
from citegate.evaluation import metrics as M
from citegate.evaluation.certify import Certified, CertifiedKinds, certify_kinds
from citegate.models import gate_model as gm
from citegate.pipeline.signals import SIGNALS
from citegate.studies.gate_signals.compute.contrasts import (
    contrast,
    label_views,
    language_keys,
    of_language,
    too_few,
)
from citegate.studies.gate_signals.compute.fit import FittedGate, learned_name, tune_parts
from citegate.studies.gate_signals.compute.frame import NEGATIVES


def certify(
    scores: np.ndarray,
    frame: pd.DataFrame,
    alpha: float,
    delta: float,
    kinds: Sequence[str],
    units: np.ndarray | None = None,
) -> CertifiedKinds:
    """The certified threshold of `scores` on calibration rows `frame` (raw labels): per kind
    present, answerable vs that kind at δ/m (Bonferroni over the m kinds; `evaluation.certify`),
    the strictest kind's threshold; with `units` (one per row) negatives count per unit."""
    labels = frame["label"].to_numpy()
    present = [k for k in kinds if (labels == k).any()]
    by_kind = {k: _kind_labels(labels, k) for k in present}
    return certify_kinds(np.asarray(scores, dtype=float), by_kind, alpha, delta, units=units)


def _kind_labels(labels: np.ndarray, kind: str) -> np.ndarray:
    """1 answerable, 0 this kind, -1 another kind (excluded from this kind's count)."""
    return np.where(labels == "answerable", 1, np.where(labels == kind, 0, -1))


@dataclass(frozen=True)
class GatePoint:
    """One certified gate of one corpus at one α: its certificate and where it was calibrated."""

    corpus: str
    gate: str
    alpha: float
    delta: float
    certified: CertifiedKinds
    calibrated_on: str

    def kind(self, negative: str) -> Certified | None:
        """The certificate of one kind of negative at the chosen threshold."""
        return self.certified.per_kind.get(negative)


def certified_points(
    frame: pd.DataFrame,
    gates: Mapping[tuple[str, str], FittedGate],
    alphas: Sequence[float],
    delta: float,
    cal_share: float,
    negatives: Sequence[str] = NEGATIVES,
    production_kind: str = "logistic",
    *,
    per_group: bool = False,
) -> list[GatePoint]:
    """Per corpus and α: the learned (logistic) gate certified on the calibration part of tune
    (groups disjoint from its fit part), and max cosine alone certified on all of tune. With
    `per_group`, negatives count per question group (the certificate over independent units,
    `compute.units`; `calibrated_on` says so)."""
    out = []
    per = " (per question group)" if per_group else ""
    for corpus, g in frame.groupby("corpus", sort=False):
        _, cal = tune_parts(g, cal_share)
        tune = g[g["split"] == "tune"]
        gate = gates[(str(corpus), production_kind)]
        pairs = (
            (learned_name(production_kind), gate.score(cal), cal, "tune calibration part"),
            ("max_cosine", tune["max_cosine"].to_numpy(float), tune, "all of tune"),
        )
        for alpha in alphas:
            for name, scores, rows, where in pairs:
                units = rows["group"].astype(str).to_numpy() if per_group else None
                cert = certify(scores, rows, alpha, delta, negatives, units=units)
                out.append(GatePoint(str(corpus), name, alpha, delta, cert, where + per))
    return out


def score_of(
    point: GatePoint, frame: pd.DataFrame, gates: Mapping[tuple[str, str], FittedGate]
) -> np.ndarray:
    """The point's gate scores on rows of its corpus."""
    if point.gate == "max_cosine":
        return frame["max_cosine"].to_numpy(float)
    kind = point.gate.removeprefix("learned (").removesuffix(")")  # see learned_name
    return gates[(point.corpus, kind)].score(frame)


def realised_table(
    frame: pd.DataFrame,
    points: Sequence[GatePoint],
    gates: Mapping[tuple[str, str], FittedGate],
    negatives: Sequence[str] = NEGATIVES,
) -> pd.DataFrame:
    """On the TEST split, per certified point × label view × language × kind: the bound, the
    realised false-answer rate (Wilson 95% CI) and the answer rate of answerable questions."""
    rows = []
    for p in points:
        test = frame[(frame["split"] == "test") & (frame["corpus"] == p.corpus)]
        answered = pd.Series(score_of(p, test, gates) >= p.certified.threshold, index=test.index)
        for view in label_views(test):
            for neg in negatives:
                if p.kind(neg) is None:
                    continue
                sub = contrast(test, neg, view)
                for lang in language_keys(sub):
                    lsub = of_language(sub, lang)
                    rows.append(_realised_row(p, neg, view, lang, lsub, answered[lsub.index]))
    if not rows:
        raise TooFewQuestions(too_few(frame, negatives, "no certified gate can be checked"))
    return pd.DataFrame(rows)


def _realised_row(
    p: GatePoint, neg: str, view: str, lang: str, sub: pd.DataFrame, answered: pd.Series
) -> dict[str, Any]:
    """One realised_table row: the point's bound and its test rates on one contrast."""
    pos, negs = answered[sub["y"] == 1], answered[sub["y"] == 0]
    cert = p.kind(neg)
    assert cert is not None
    ar, ar_lo, ar_hi = M.rate_ci_or_nan(pos)
    fa, fa_lo, fa_hi = M.rate_ci_or_nan(negs)
    return {
        "corpus": p.corpus,
        "gate": p.gate,
        "alpha": p.alpha,
        "delta": p.delta,
        "threshold": p.certified.threshold,
        "feasible": p.certified.feasible,
        "negatives": neg,
        "labels": view,
        "language": lang,
        "bound": cert.bound,
        "n_neg cal": cert.n_neg,
        "false answers cal": cert.false_answers,
        "false-answer rate": fa,
        "FA low": fa_lo,
        "FA high": fa_hi,
        "negative": len(negs),
        "answer rate": ar,
        "AR low": ar_lo,
        "AR high": ar_hi,
        "answerable": len(pos),
    }


def certificate_block(point: GatePoint) -> dict[str, Any]:
    """recommendation.json's `certified` block: per kind {alpha, delta (its Bonferroni share),
    n_neg, false_answers, bound, kind} at the chosen threshold, plus the threshold, the family δ
    and where it was calibrated."""
    kinds = {
        k: {
            f: c.to_dict()[f] for f in ("alpha", "delta", "n_neg", "false_answers", "bound", "kind")
        }
        for k, c in point.certified.per_kind.items()
    }
    return {
        "gate": point.gate,
        "threshold": point.certified.threshold,
        "feasible": point.certified.feasible,
        "alpha": point.alpha,
        "delta": point.delta,
        "calibrated_on": point.calibrated_on,
        "kinds": kinds,
    }


def find_point(
    points: Sequence[GatePoint], corpus: str, gate: str, alpha: float
) -> GatePoint | None:
    """The certified point of one corpus, gate and α (None when not computed)."""
    for p in points:
        if p.corpus == corpus and p.gate == gate and abs(p.alpha - alpha) < 1e-12:
            return p
    return None


def learned_gate(
    fitted: FittedGate, point: GatePoint, trained_on: Mapping[str, Any]
) -> gm.LearnedGate:
    """The production `LearnedGate` of a fitted logistic gate: the same features, language stats,
    standardisation (the imputer's means equal the scaler's, so NaN → z = 0 as in the file
    format), coefficients and intercept, and the certified threshold with its certificate."""
    if fitted.kind != "logistic":
        raise ValueError(f"only a logistic gate becomes a LearnedGate, got {fitted.kind!r}")
    _, scaler, lr = fitted.estimator.named_steps.values()
    return gm.LearnedGate(
        features=tuple(fitted.features),
        language_stats={k: (float(m), float(s)) for k, (m, s) in fitted.stats.items()},
        mean=tuple(float(v) for v in scaler.mean_),
        scale=tuple(float(v) for v in scaler.scale_),
        coef=tuple(float(v) for v in lr.coef_[0]),
        intercept=float(lr.intercept_[0]),
        threshold=float(point.certified.threshold),
        certificate=certificate_block(point),
        trained_on=dict(trained_on),
    )


def gate_agreement(gate: gm.LearnedGate, fitted: FittedGate, frame: pd.DataFrame) -> float:
    """Largest |p(file) − p(scikit-learn)| over the frame's rows: the saved `LearnedGate`
    (NumPy, what production runs) must score exactly as the model fit here."""
    p_fit = fitted.score(frame)
    p_file = [
        gate.probability({k: row[k] for k in SIGNALS}, row["language"])
        for row in frame.to_dict("records")
    ]
    return float(np.max(np.abs(np.asarray(p_file) - p_fit))) if len(frame) else 0.0
