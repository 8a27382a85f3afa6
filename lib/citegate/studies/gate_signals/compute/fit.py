"""Experiment 05's learned gates: logistic and boosted models over the signals, fit on the fit part
of tune with grouped CV (question groups never on both sides), scored on test within and across
corpora.

Pure functions of the signal frame; scikit-learn is imported inside the functions that fit (a
heavy third-party library).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import TooFewQuestions
from citegate.evaluation.sampling import salted_int
from citegate.studies.gate_signals.compute.contrasts import (
    auroc_rows,
    contrast,
    label_views,
    language_keys,
    of_language,
    too_few,
)
from citegate.studies.gate_signals.compute.frame import (
    COLUMNS,
    NEGATIVES,
    Z_SIGNAL,
    language_stats,
    language_z,
)

CAL_SALT = "citegate-signals-calibration"
GATES = ("logistic", "boosting")


def calibration_part(frame: pd.DataFrame, share: float) -> np.ndarray:
    """True for the rows of the calibration part: per label, whole question groups in salted-hash
    order until they hold `share` of that label's questions (the group that crosses the mark is
    included), always leaving at least one group of a label to the fit part. A group (a verse, an
    article) is never on both sides, and with few groups (xquad's held-out articles) the share per
    label stays close to `share` (a plain per-group coin would not)."""
    cal_groups: set[str] = set()
    for _, g in frame.groupby("label", sort=True):
        counts = g["group"].value_counts()
        order = sorted(counts.index, key=lambda k: salted_int(CAL_SALT, k))
        target, total = share * len(g), 0
        for key in order[:-1]:
            if total >= target:
                break
            cal_groups.add(key)
            total += int(counts[key])
    return frame["group"].isin(cal_groups).to_numpy()


def grouped_folds(groups: Sequence[str], n_splits: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """GroupKFold (train, validation) index pairs: no group on both sides of a fold."""
    from sklearn.model_selection import GroupKFold

    g = np.asarray(groups)
    n = min(n_splits, len(np.unique(g)))
    return list(GroupKFold(n_splits=n).split(np.zeros(len(g)), groups=g))


def feature_matrix(
    frame: pd.DataFrame, features: Sequence[str], stats: Mapping[str, tuple[float, float]]
) -> np.ndarray:
    """The model's input: the named columns, `max_cosine_lang_z` recomputed with `stats` (the
    model's own, so a gate moved to another corpus keeps the standardisation it was fit with).
    Missing values stay NaN (the logistic model imputes the training mean)."""
    cols = []
    for f in features:
        if f == Z_SIGNAL:
            cols.append(language_z(frame["max_cosine"], frame["language"], stats))
        else:
            cols.append(frame[f].to_numpy(float))
    return np.column_stack(cols) if cols else np.zeros((len(frame), 0))


def usable_features(frame: pd.DataFrame, columns: Sequence[str] = COLUMNS) -> tuple[str, ...]:
    """The signals a model can learn from on `frame`: not all missing, not constant."""
    out = []
    for c in columns:
        x = frame[c].to_numpy(float)
        x = x[np.isfinite(x)]
        if len(x) and np.ptp(x) > 0:
            out.append(c)
    return tuple(out)


def make_estimator(kind: str, params: Mapping[str, Any]) -> Any:
    """A scikit-learn classifier: `logistic` (mean imputation, standardisation, L2 logistic
    regression) or `boosting` (HistGradientBoostingClassifier, NaN handled natively)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "logistic":
        return make_pipeline(
            SimpleImputer(strategy="mean", keep_empty_features=True),
            StandardScaler(),
            LogisticRegression(C=float(params["C"]), max_iter=2000),
        )
    if kind == "boosting":
        return HistGradientBoostingClassifier(random_state=0, **dict(params))
    raise ValueError(f"unknown gate kind {kind!r}; known: {GATES}")


def param_grid(kind: str) -> list[dict[str, Any]]:
    """The candidates grouped CV chooses among (regularisation / tree size)."""
    if kind == "logistic":
        return [{"C": c} for c in (0.01, 0.1, 1.0, 10.0)]
    return [{"learning_rate": 0.1, "max_depth": d, "max_iter": 100} for d in (2, 3)]


def targets(frame: pd.DataFrame) -> np.ndarray:
    """1 for answerable, 0 for every negative kind (raw labels: what tune carries)."""
    return (frame["label"] == "answerable").to_numpy(int)


def cv_table(
    frame: pd.DataFrame,
    features: Sequence[str],
    stats: Mapping[str, tuple[float, float]],
    n_splits: int,
    kinds: Sequence[str] = GATES,
) -> pd.DataFrame:
    """Grouped-CV AUROC (answerable vs every negative) of each candidate of each model kind."""
    from sklearn.metrics import roc_auc_score

    x, y = feature_matrix(frame, features, stats), targets(frame)
    folds = grouped_folds(frame["group"].tolist(), n_splits)
    rows = []
    for kind in kinds:
        for params in param_grid(kind):
            scores = []
            for tr, va in folds:
                if len(np.unique(y[tr])) < 2 or len(np.unique(y[va])) < 2:
                    continue
                est = make_estimator(kind, params).fit(x[tr], y[tr])
                scores.append(roc_auc_score(y[va], est.predict_proba(x[va])[:, 1]))
            rows.append(
                {
                    "model": kind,
                    "params": _params_text(params),
                    "cv AUROC": float(np.mean(scores)) if scores else float("nan"),
                    "cv std": float(np.std(scores)) if scores else float("nan"),
                    "folds": len(scores),
                    "_params": dict(params),
                }
            )
    return pd.DataFrame(rows)


def _params_text(params: Mapping[str, Any]) -> str:
    """A candidate's parameters as text for the CV table: C=0.1."""
    return ", ".join(f"{k}={v}" for k, v in params.items())


@dataclass
class FittedGate:
    """A gate model fit on one corpus's fit part: its kind, features, language stats and the
    scikit-learn estimator; `score` gives p(answerable) for any frame."""

    corpus: str
    kind: str
    features: tuple[str, ...]
    stats: dict[str, tuple[float, float]]
    params: dict[str, Any]
    estimator: Any = field(repr=False)
    n_fit: int = 0

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """p(answerable) of each row."""
        x = feature_matrix(frame, self.features, self.stats)
        return self.estimator.predict_proba(x)[:, 1]


def fit_gates(
    frame: pd.DataFrame,
    cal_share: float,
    n_splits: int,
    kinds: Sequence[str] = GATES,
) -> tuple[dict[tuple[str, str], FittedGate], pd.DataFrame]:
    """Per corpus and model kind: choose the candidate with the best grouped-CV AUROC on the
    FIT part of tune (tune minus the calibration groups), refit it on the whole fit part.
    Returns {(corpus, kind): FittedGate} and the CV table."""
    gates: dict[tuple[str, str], FittedGate] = {}
    tables = []
    for corpus, g in frame.groupby("corpus", sort=False):
        fit = fit_part(g, cal_share)
        stats = language_stats(g)
        features = usable_features(fit)
        cv = cv_table(fit, features, stats, n_splits, kinds).assign(corpus=corpus)
        tables.append(cv)
        x, y = feature_matrix(fit, features, stats), targets(fit)
        for kind in kinds:
            mine = cv[cv["model"] == kind]
            best = mine.sort_values("cv AUROC", ascending=False, kind="stable").iloc[0]
            params = dict(best["_params"])
            est = make_estimator(kind, params).fit(x, y)
            gates[(corpus, kind)] = FittedGate(corpus, kind, features, stats, params, est, len(fit))
    cv_all = pd.concat(tables, ignore_index=True)
    cv_all["chosen"] = [
        gates[(r["corpus"], r["model"])].params == r["_params"] for r in cv_all.to_dict("records")
    ]
    return gates, cv_all.drop(columns="_params")


def tune_parts(frame: pd.DataFrame, cal_share: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fit part, calibration part) of the tune split, disjoint by question group."""
    tune = frame[frame["split"] == "tune"]
    cal = calibration_part(tune, cal_share)
    return tune[~cal], tune[cal]


def fit_part(frame: pd.DataFrame, cal_share: float) -> pd.DataFrame:
    """The part of tune a model is fit on (its groups never appear in the calibration part)."""
    return tune_parts(frame, cal_share)[0]


def gate_scores(
    frame: pd.DataFrame, gates: Mapping[tuple[str, str], FittedGate]
) -> dict[str, np.ndarray]:
    """Each of the frame's corpus's own gates scored on the frame (one corpus): name -> scores."""
    corpus = str(frame["corpus"].iloc[0])
    return {learned_name(k): g.score(frame) for (c, k), g in gates.items() if c == corpus}


def learned_auroc_table(
    frame: pd.DataFrame,
    gates: Mapping[tuple[str, str], FittedGate],
    n_boot: int,
    negatives: Sequence[str] = NEGATIVES,
    baseline: str = "max_cosine",
) -> pd.DataFrame:
    """Test-split AUROC (clustered CI) of each corpus's learned gates next to `baseline`, per
    label view × kind × language."""
    rows = []
    test = frame[frame["split"] == "test"]
    for corpus, g in test.groupby("corpus", sort=False):
        g = g.assign(**{k: v for k, v in gate_scores(g, gates).items()})
        names = [learned_name(k) for (c, k) in gates if c == corpus] + [baseline]
        for view in label_views(g):
            for neg in negatives:
                sub = contrast(g, neg, view)
                for lang in language_keys(sub):
                    lsub = of_language(sub, lang)
                    head = {"corpus": corpus, "labels": view, "negatives": neg, "language": lang}
                    scores = {n: lsub[n] for n in names}
                    rows += [{**head, **r} for r in auroc_rows(lsub, scores, n_boot)]
    if not rows:
        raise TooFewQuestions(too_few(frame, negatives, "no learned gate's AUROC can be computed"))
    return pd.DataFrame(rows)


def transfer_table(
    frame: pd.DataFrame,
    gates: Mapping[tuple[str, str], FittedGate],
    n_boot: int,
    negatives: Sequence[str] = NEGATIVES,
) -> pd.DataFrame:
    """Every gate (fit on one corpus's tune fit part, with its own language stats) scored on
    every corpus's TEST split, raw labels, per kind: rows with `trained on`, `tested on`
    (equal = in-corpus, the diagonal), `model`, AUROC and CI."""
    rows = []
    test = frame[frame["split"] == "test"]
    for corpus, g in test.groupby("corpus", sort=False):
        for (train, kind), gate in gates.items():
            scored = g.assign(_p=gate.score(g))
            for neg in negatives:
                sub = contrast(scored, neg)
                head = {"trained on": train, "tested on": corpus, "model": kind, "negatives": neg}
                rows += [
                    {**head, **{k: v for k, v in r.items() if k != "signal"}}
                    for r in auroc_rows(sub, {"p": sub["_p"]}, n_boot)
                ]
    return pd.DataFrame(rows)


def learned_name(kind: str) -> str:
    """The table name of a learned gate of one model kind."""
    return f"learned ({kind})"


PRODUCTION_GATE = learned_name("logistic")  # the gate production serves
