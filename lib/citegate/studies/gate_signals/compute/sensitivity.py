"""Experiment 05's group-level sensitivity check (not the certificate): each certified threshold's
bound recomputed with question groups, then held-out units, as the sample.

Pure functions of the signal frame, fitted gates and certified points.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from citegate.evaluation.certify import clopper_pearson_upper
from citegate.studies.gate_signals.compute.certified import GatePoint, score_of
from citegate.studies.gate_signals.compute.fit import FittedGate, tune_parts

LEVEL_QUESTION = "question (the certificate)"
LEVEL_GROUP = "question group (verse / article)"
LEVEL_UNIT = "held-out unit (chapter / article)"
LEVELS = (LEVEL_QUESTION, LEVEL_GROUP, LEVEL_UNIT)
_VERSE_GROUP = re.compile(r"(.+ \d+)\.\d+")  # "BG 3.5" -> "BG 3"


def held_out_unit(group: str) -> str:
    """The unit a split build holds out whole: a verse group's chapter ("BG 3.5" -> "BG 3", as
    gita-split holds out chapters), any other group itself (an xquad article, an out-of-scope
    question, which is its own group)."""
    m = _VERSE_GROUP.fullmatch(group)
    return m.group(1) if m else group


def calibration_rows(frame: pd.DataFrame, point: GatePoint, cal_share: float) -> pd.DataFrame:
    """The rows a point was certified on: the calibration part of tune for a learned gate, all
    of tune for max cosine (see `certified_points`)."""
    g = frame[frame["corpus"] == point.corpus]
    if point.gate == "max_cosine":
        return g[g["split"] == "tune"]
    return tune_parts(g, cal_share)[1]


def min_clean_n(alpha: float, delta: float) -> int:
    """The fewest independent negatives that certify α at confidence 1 − δ even with no false
    answer: the smallest n with (1 − α)^n ≤ δ (the Clopper–Pearson bound of 0 of n)."""
    return int(np.ceil(np.log(delta) / np.log(1.0 - alpha) - 1e-12))


def group_sensitivity(
    frame: pd.DataFrame,
    points: Sequence[GatePoint],
    gates: Mapping[tuple[str, str], FittedGate],
    cal_share: float,
) -> pd.DataFrame:
    """A SENSITIVITY CHECK, not the certificate. The certificate counts calibration negatives
    as exchangeable, independent questions; questions of one verse or one held-out article are
    not independent (xquad-split's come from a few articles). Per point and kind, at the point's
    certified threshold, the Clopper–Pearson bound (at the kind's δ share) recomputed with each
    negative question group, then each held-out unit, counted once as the sample (answered when
    any of its questions is answered): a conservative effective sample size. `n needed` is how
    many independent units certify α with no false answer at all (`min_clean_n`)."""
    rows = []
    for p in points:
        cal = calibration_rows(frame, p, cal_share)
        answered = pd.Series(score_of(p, cal, gates) >= p.certified.threshold, index=cal.index)
        for kind, cert in p.certified.per_kind.items():
            neg = cal[cal["label"] == kind]
            units = {
                LEVEL_QUESTION: neg["qid"],
                LEVEL_GROUP: neg["group"],
                LEVEL_UNIT: neg["group"].map(held_out_unit),
            }
            for level, key in units.items():
                hit = answered[neg.index].groupby(key.to_numpy()).any()
                n, k = len(hit), int(hit.sum())
                bound = clopper_pearson_upper(k, n, cert.delta)
                rows.append(
                    {
                        "corpus": p.corpus,
                        "gate": p.gate,
                        "alpha": p.alpha,
                        "delta (kind)": cert.delta,
                        "threshold": p.certified.threshold,
                        "negatives": kind,
                        "level": level,
                        "n": n,
                        "false answers": k,
                        "bound": bound,
                        "bound ≤ α": bool(bound <= p.alpha + 1e-12),
                        "n needed": min_clean_n(p.alpha, cert.delta),
                    }
                )
    return pd.DataFrame(rows)


def calibration_negative_groups(sensitivity: pd.DataFrame) -> pd.DataFrame:
    """Per corpus, gate and kind (one α; the calibration rows do not depend on it): how many
    negative questions, question groups and held-out units the certificate rests on."""
    if sensitivity.empty:
        return sensitivity
    first = sensitivity[np.isclose(sensitivity["alpha"], sensitivity["alpha"].min())]
    table = first.pivot_table(
        index=["corpus", "gate", "negatives"], columns="level", values="n", aggfunc="first"
    )
    return table.reindex(columns=list(LEVELS)).reset_index()
