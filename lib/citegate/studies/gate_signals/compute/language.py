"""Experiment 05's language gap, explained: a certified gate's answer rate per language inside address
strata, and which features push one language's answerable questions down in a logistic gate.

Pure functions of the signal frame, fitted gates and certified points.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from citegate.evaluation import metrics as M
from citegate.studies.gate_signals.compute.certified import GatePoint, score_of
from citegate.studies.gate_signals.compute.fit import FittedGate, feature_matrix

ADDRESS_STRATA = {1.0: "names only indexed verses", 0.0: "every other question"}


def language_gap_by_address(
    frame: pd.DataFrame, point: GatePoint, gates: Mapping[tuple[str, str], FittedGate]
) -> pd.DataFrame:
    """Answer rate (Wilson 95% CI) of the point's gate on the TEST split's answerable questions
    per language, overall and split by whether the question names verses that are all in the
    index (`address_found`): a gap between languages that vanishes within the strata comes
    from how often each language's questions name a verse, not from the language."""
    test = frame[
        (frame["corpus"] == point.corpus)
        & (frame["split"] == "test")
        & (frame["label"] == "answerable")
    ]
    answered = pd.Series(score_of(point, test, gates) >= point.certified.threshold, test.index)
    rows = []
    for lang, g in test.groupby("language", sort=True):
        found = g["address_found"] == 1.0
        strata = [("all", g), (ADDRESS_STRATA[1.0], g[found]), (ADDRESS_STRATA[0.0], g[~found])]
        for stratum, part in strata:
            rate, lo, hi = M.rate_ci_or_nan(answered[part.index])
            rows.append(
                {
                    "corpus": point.corpus,
                    "gate": point.gate,
                    "alpha": point.alpha,
                    "language": lang,
                    "questions": stratum,
                    "answerable": len(part),
                    "answered": int(answered[part.index].sum()),
                    "answer rate": rate,
                    "AR low": lo,
                    "AR high": hi,
                }
            )
    return pd.DataFrame(rows)


def feature_pushes(frame: pd.DataFrame, fitted: FittedGate, baseline: str = "en") -> pd.DataFrame:
    """Which features move a language's answerable TEST questions up or down in a logistic gate:
    the mean logit contribution coef × z of each feature (z after the gate's own imputation and
    standardisation) per language, and each language minus `baseline` (negative: pushes that
    language's questions below the baseline's)."""
    if fitted.kind != "logistic":
        raise ValueError(f"feature pushes read a logistic gate's coefficients, not {fitted.kind!r}")
    test = frame[
        (frame["corpus"] == fitted.corpus)
        & (frame["split"] == "test")
        & (frame["label"] == "answerable")
    ]
    imputer, scaler, lr = fitted.estimator.named_steps.values()
    x = feature_matrix(test, fitted.features, fitted.stats)
    push = pd.DataFrame(
        scaler.transform(imputer.transform(x)) * lr.coef_[0], columns=list(fitted.features)
    )
    push["language"] = test["language"].to_numpy()
    means = push.groupby("language").mean().T
    for lang in means.columns:
        if lang != baseline and baseline in means.columns:
            means[f"{lang} − {baseline}"] = means[lang] - means[baseline]
    return means.rename_axis("feature").reset_index()
