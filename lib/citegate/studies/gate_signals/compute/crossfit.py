"""Experiment 05 cross-fitted over leave-out folds: every chapter (article) held out once.

The single split (gita-split) holds out 4 chapters, so its certificate rests on the questions of
those 4 chapters. Here each demo corpus is cut into K fold builds (`corpus.builds.DEMO_FOLDS`;
`gita-fold3` holds out fold 3's chapters), and every question row belongs to the fold that holds
its group out (`questions.question_fold`): its out_of_corpus row comes from that fold's build,
its answerable row from the next fold's build, an out-of-scope question's rows from the fold its
salted hash picks. Rotation r then treats fold r as test and the other folds as tune:

- the learned (logistic) gate is fit on tune's fit part (grouped CV, `compute.fit.fit_gates`),
- its threshold certified on tune's calibration part (whole groups, disjoint from the fit part),
  per question and per unit (`unit`: a gita verse, an XQuAD paragraph with its translations),
- and fold r's questions are scored out of fold with that gate and threshold.

Calibration and test never share a fold, so a question is never scored by a gate that saw it,
its verse or its chapter. The pooled out-of-fold answers estimate what the procedure delivers on
chapters it has not seen; the deployable gate is the same procedure on every fold (`final`).
With audited labels a held-out question judged answerable from the indexed chapters is no
negative (neither calibration nor test counts its answer as false); unaudited negatives stay
negatives, which can only make the bound stricter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from citegate.evaluation import metrics as M
from citegate.evaluation.clustered import cluster_rate_ci
from citegate.studies.gate_signals.compute.certified import GatePoint, certify
from citegate.studies.gate_signals.compute.contrasts import has_audit
from citegate.studies.gate_signals.compute.fit import (
    FittedGate,
    fit_gates,
    learned_name,
    tune_parts,
)
from citegate.studies.gate_signals.compute.frame import NEGATIVES, language_stats, with_language_z

FOLD_GATE = "logistic"
LEVELS = ("question", "unit")
RAW, AUDITED = "raw", "audited"
FINAL = 0  # the fold number of the deployable gate (fit and certified on every fold)
# The deployable gate is fit and certified on the TUNE split's questions of every fold only, so
# the test split (other verses, other articles) stays unseen for `citegate promote`'s guards.
FINAL_SPLIT = "tune"


@dataclass(frozen=True)
class CrossFit:
    """What the cross-fitted evaluation produced.

    `rotations`: per corpus, fold (0 = the deployable gate over every fold), label view, level
    and kind: threshold, feasible, bound, n (questions or units) and false answers on calibration.
    `scored`: per corpus, rotation, view and level, one row per test question: its label, unit,
    language, score and whether the rotation's gate answered it."""

    rotations: pd.DataFrame
    scored: pd.DataFrame
    finals: dict[tuple[str, str, str], tuple[FittedGate, GatePoint]] = field(
        default_factory=dict
    )  # (corpus, view, level) -> the deployable gate and its certificate

    def deployable(self, corpus: str, level: str = "unit") -> tuple[FittedGate, GatePoint]:
        """The gate fit on every fold (tune split) and its certificate at `level`: audited
        labels when the frame carried any and that certificate holds (the one the goals read),
        else raw labels when that one holds, else the audited (or raw) one, infeasible — which
        `citegate promote` refuses."""
        views_made = [v for v in (AUDITED, RAW) if (corpus, v, level) in self.finals]
        if not views_made:
            raise KeyError(f"no deployable fold gate for {corpus!r} (cross-fitted: {self.corpora})")
        for view in views_made:
            gate, point = self.finals[(corpus, view, level)]
            if point.certified.feasible:
                return gate, point
        return self.finals[(corpus, views_made[0], level)]

    @property
    def corpora(self) -> list[str]:
        """The corpora cross-fitted."""
        return sorted({c for c, _, _ in self.finals})


def views(frame: pd.DataFrame) -> tuple[str, ...]:
    """The label views the frame supports: raw always, audited when any question is judged."""
    return (RAW, AUDITED) if has_audit(frame) else (RAW,)


def view_labels(frame: pd.DataFrame, view: str) -> pd.DataFrame:
    """The frame with `label` as the view reads it: audited turns an out_of_corpus question judged
    answerable into `held_out_answerable`, which no certificate or rate counts."""
    return frame if view == RAW else frame.assign(label=frame["audited_label"])


def cross_fit(
    frame: pd.DataFrame,
    alpha: float,
    delta: float,
    cal_share: float,
    n_splits: int,
    negatives: Sequence[str] = NEGATIVES,
) -> CrossFit:
    """Every rotation of every corpus (`base`) of the fold frame, then the deployable gate.
    The frame carries `base`, `cv_fold` and `unit` besides the signal frame's columns."""
    rotations, scored, finals = [], [], {}
    for base, g in frame.groupby("base", sort=False):
        for fold in [*sorted(int(f) for f in g["cv_fold"].unique()), FINAL]:
            rows = g[g["split"] == FINAL_SPLIT] if fold == FINAL else g
            rot, sc, made = _rotation(
                rows, str(base), fold, alpha, delta, cal_share, n_splits, negatives
            )
            rotations += rot
            scored += sc
            if fold == FINAL:
                finals |= made
    return CrossFit(pd.DataFrame(rotations), pd.concat(scored, ignore_index=True), finals)


def _rotation(
    g: pd.DataFrame,
    base: str,
    fold: int,
    alpha: float,
    delta: float,
    cal_share: float,
    n_splits: int,
    negatives: Sequence[str],
) -> tuple[
    list[dict], list[pd.DataFrame], dict[tuple[str, str, str], tuple[FittedGate, GatePoint]]
]:
    """Fit on the fit part of every fold but `fold`, certify on their calibration part, score
    fold `fold` (FINAL: every fold is tune and nothing is scored). Also returns each view and
    level's (gate, certified point)."""
    split = np.where(g["cv_fold"] == fold, "test", "tune")
    fr = g.assign(split=split, corpus=base)
    fr = with_language_z(fr, language_stats(fr))
    gates, _ = fit_gates(fr, cal_share, n_splits, kinds=(FOLD_GATE,))
    gate = gates[(base, FOLD_GATE)]
    _, cal = tune_parts(fr, cal_share)
    test = fr[fr["split"] == "test"]
    s_cal = gate.score(cal)
    s_test = gate.score(test) if len(test) else np.empty(0)
    rows, scored, made = [], [], {}
    for view in views(fr):
        cal_v, test_v = view_labels(cal, view), view_labels(test, view)
        for level in LEVELS:
            units = cal_v["unit"].astype(str).to_numpy() if level == "unit" else None
            cert = certify(s_cal, cal_v, alpha, delta, negatives, units=units)
            where = (
                f"every fold's calibration part ({FINAL_SPLIT} split, per {level}, {view} labels)"
            )
            made[(base, view, level)] = (
                gate,
                GatePoint(base, learned_name(FOLD_GATE), alpha, delta, cert, where),
            )
            head = {"corpus": base, "fold": fold, "labels": view, "level": level, "alpha": alpha}
            for kind, c in cert.per_kind.items():
                rows.append(
                    {
                        **head,
                        "negatives": kind,
                        "threshold": cert.threshold,
                        "feasible": cert.feasible,
                        "bound": c.bound,
                        "n_neg cal": c.n_neg,
                        "false answers cal": c.false_answers,
                        "n_fit": gate.n_fit,
                    }
                )
            if len(test_v):
                scored.append(
                    test_v[["qid", "set", "label", "unit", "language", "address_found"]].assign(
                        **head, score=s_test, answered=s_test >= cert.threshold
                    )
                )
    return rows, scored, made


def summary(cf: CrossFit, n_boot: int, negatives: Sequence[str] = NEGATIVES) -> pd.DataFrame:
    """Per corpus, view, level, kind and language (and "all"): the out-of-fold answer rate of
    answerable questions and false-answer rate of the kind, each with Wilson and clustered
    (by unit) 95% intervals; the rotations' largest bound and smallest n; the deployable gate's
    bound, n and threshold."""
    rows = []
    keys = ["corpus", "labels", "level"]
    for (corpus, view, level), s in cf.scored.groupby(keys, sort=False):
        rot = cf.rotations[
            (cf.rotations["corpus"] == corpus)
            & (cf.rotations["labels"] == view)
            & (cf.rotations["level"] == level)
        ]
        for kind in negatives:
            r_kind = rot[rot["negatives"] == kind]
            if r_kind.empty:
                continue
            per_fold, final = r_kind[r_kind["fold"] != FINAL], r_kind[r_kind["fold"] == FINAL]
            head = {"corpus": corpus, "labels": view, "level": level, "negatives": kind}
            cert = {
                "max fold bound": float(per_fold["bound"].max()),
                "min fold n": int(per_fold["n_neg cal"].min()),
                "folds certified": int((per_fold["bound"] <= per_fold["alpha"] + 1e-12).sum()),
                "folds": len(per_fold),
                "final bound": float(final["bound"].iloc[0]) if len(final) else float("nan"),
                "final n": int(final["n_neg cal"].iloc[0]) if len(final) else 0,
                "final threshold": float(final["threshold"].iloc[0]) if len(final) else np.nan,
            }
            for lang in ["all", *sorted(s["language"].unique())]:
                part = s if lang == "all" else s[s["language"] == lang]
                rows.append({**head, "language": lang, **cert, **_rates(part, kind, n_boot)})
    return pd.DataFrame(rows)


def _rates(part: pd.DataFrame, kind: str, n_boot: int) -> dict[str, float]:
    """Answer rate (answerable) and false-answer rate (`kind`) of scored rows, Wilson and
    clustered intervals."""
    out: dict[str, float] = {}
    for name, label in (("answer rate", "answerable"), ("false-answer rate", kind)):
        sub = part[part["label"] == label]
        hits = sub["answered"].to_numpy(bool)
        rate, lo, hi = M.rate_ci_or_nan(hits)
        clo, chi = cluster_rate_ci(hits, sub["unit"].to_numpy(), n_boot)
        short = "AR" if label == "answerable" else "FA"
        out |= {
            name: rate,
            f"{short} low": lo,
            f"{short} high": hi,
            f"{short} low (clustered)": clo,
            f"{short} high (clustered)": chi,
            "answerable" if label == "answerable" else "negative": len(sub),
        }
    return out


def language_by_address(
    cf: CrossFit, level: str = "unit", view: str = RAW, n_boot: int = 0
) -> pd.DataFrame:
    """Out-of-fold answer rate of answerable questions per corpus and language, overall and
    split by whether the question names verses that are all indexed (`address_found`): a gap
    between languages that shrinks inside the strata comes from how often each language's
    questions name a verse, not from the language (Wilson and clustered 95% intervals)."""
    s = cf.scored[
        (cf.scored["level"] == level)
        & (cf.scored["labels"] == view)
        & (cf.scored["label"] == "answerable")
    ]
    rows = []
    for (corpus, lang), g in s.groupby(["corpus", "language"], sort=True):
        found = g["address_found"] == 1.0
        for stratum, part in (("all", g), ("names indexed verses", g[found]), ("other", g[~found])):
            hits = part["answered"].to_numpy(bool)
            rate, lo, hi = M.rate_ci_or_nan(hits)
            clo, chi = cluster_rate_ci(hits, part["unit"].to_numpy(), n_boot)
            rows.append(
                {
                    "corpus": corpus,
                    "language": lang,
                    "questions": stratum,
                    "answerable": len(part),
                    "share": len(part) / len(g),
                    "answer rate": rate,
                    "AR low": lo,
                    "AR high": hi,
                    "AR low (clustered)": clo,
                    "AR high (clustered)": chi,
                }
            )
    return pd.DataFrame(rows)


__all__ = [
    "CrossFit",
    "language_by_address",
    "cross_fit",
    "summary",
    "view_labels",
    "views",
]
