"""Fitting the learning-to-rank reranker: training pairs and model selection.

Two models are cross-validated by nDCG@10 (GroupKFold over question groups, so a verse or an
article never sits on both sides of a fold): `HistGradientBoostingClassifier` and a standardized
`LogisticRegression`. The winner is refit on all pairs. Where the pairs come from (the tune split's
cosine traces) is `citegate.research.ltr_training`'s business.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from citegate.core.errors import CitegateError, ConfigError
from citegate.evaluation.metrics import ndcg_at_k
from citegate.models.ltr.features import FEATURE_NAMES, features
from citegate.models.ltr.model import one_thread, positive_proba


def model_factories(random_state: int = 0) -> dict[str, Callable[[], Any]]:
    """The candidate models, by short name (fresh, unfitted estimators)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "hgb": lambda: HistGradientBoostingClassifier(
            max_iter=200,
            learning_rate=0.05,
            max_leaf_nodes=31,
            min_samples_leaf=20,
            l2_regularization=1.0,
            early_stopping=False,
            random_state=random_state,
        ),
        "logreg": lambda: make_pipeline(
            StandardScaler(), LogisticRegression(C=1.0, max_iter=2000, random_state=random_state)
        ),
    }


def ndcg_by_question(
    scores: np.ndarray, y: np.ndarray, qid: np.ndarray, cosine: np.ndarray, k: int = 10
) -> float:
    """Mean nDCG@k over the questions with at least one positive in the pool (ideal = the pool's
    positives; ties broken by cosine, then pool order). Used for model selection only.

    Each question's pool becomes one ranked list of row positions and its positives the gold, so
    the number is `citegate.evaluation.metrics.ndcg_at_k`'s."""
    ranked: list[list[int]] = []
    gold: list[list[int]] = []
    for q in np.unique(qid):
        m = qid == q
        ranked.append(np.lexsort((-cosine[m], -scores[m])).tolist())
        gold.append(np.flatnonzero(y[m]).tolist())
    return ndcg_at_k(ranked, gold, k)


@dataclass
class PairSet:
    """Training pairs: features, labels, the question each row belongs to and its group."""

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    groups: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)
    names: tuple[str, ...] = FEATURE_NAMES  # the columns of X

    @property
    def n_questions(self) -> int:
        """Distinct questions among the rows."""
        return int(len(np.unique(self.qid)))


def pairs_from(
    items: Iterable[tuple[str, str, str, Sequence[Any], Iterable[int]]],
    progress: bool = False,
    names: Sequence[str] = FEATURE_NAMES,
) -> PairSet:
    """Build pairs from (question id, question text, group, candidates, gold fragment ids), one
    column per feature in `names`."""
    xs, ys, qids, groups = [], [], [], []
    for q_id, text, group, cands, gold in tqdm(
        list(items), desc="features", unit="q", disable=not progress
    ):
        if not cands:
            continue
        gold = set(gold)
        xs.append(features(text, cands, names))
        ys.append(np.array([c.fragment_id in gold for c in cands], dtype=np.int8))
        qids += [q_id] * len(cands)
        groups += [group] * len(cands)
    if not xs:
        raise CitegateError("no training pairs: no question had any candidate")
    return PairSet(
        np.vstack(xs),
        np.concatenate(ys),
        np.array(qids, dtype=object),
        np.array(groups, dtype=object),
        names=tuple(names),
    )


def select_and_fit(
    pairs: PairSet,
    folds: int = 5,
    random_state: int = 0,
    progress: bool = False,
    models: Sequence[str] | None = None,
    threads: int | None = 1,
) -> tuple[Any, str, dict[str, Any]]:
    """Cross-validate every model (or those named in `models`) by nDCG@10 (GroupKFold over
    question groups), refit the winner on all pairs; returns (fitted model, winner, CV report).
    Fits run on `threads` OpenMP threads (None: the library default; see `one_thread`)."""
    with one_thread(threads):
        return _select_and_fit(pairs, folds, random_state, progress, models)


def _chosen_factories(random_state: int, models: Sequence[str] | None) -> dict[str, Any]:
    """The factories of the named models (all when `models` is empty); ConfigError on a typo."""
    factories = model_factories(random_state)
    if not models:
        return factories
    unknown = sorted(set(models) - set(factories))
    if unknown:
        raise ConfigError(f"unknown LTR model(s) {unknown}; known: {sorted(factories)}")
    return {k: v for k, v in factories.items() if k in models}


def _select_and_fit(
    pairs: PairSet,
    folds: int,
    random_state: int,
    progress: bool,
    models: Sequence[str] | None,
) -> tuple[Any, str, dict[str, Any]]:
    from sklearn.model_selection import GroupKFold

    if pairs.y.min() == pairs.y.max():
        raise CitegateError("training pairs hold only one class (no gold candidate, or only gold)")
    factories = _chosen_factories(random_state, models)
    k = max(2, min(folds, len(set(pairs.groups))))
    cos = pairs.X[:, pairs.names.index("cosine")]
    per_fold: dict[str, list[float]] = {name: [] for name in factories}
    splits = list(GroupKFold(n_splits=k).split(pairs.X, pairs.y, pairs.groups))
    bar = tqdm(total=len(splits) * len(factories), desc="cv", disable=not progress)
    for train, test in splits:
        for name, make in factories.items():
            per_fold[name].append(_fold_ndcg(make, pairs, cos, train, test))
            bar.update()
    bar.close()
    per_fold["none"] = [
        ndcg_by_question(cos[test], pairs.y[test], pairs.qid[test], cos[test]) for _, test in splits
    ]
    means = {name: float(np.nanmean(v)) for name, v in per_fold.items()}
    winner = max(factories, key=lambda n: (np.nan_to_num(means[n], nan=-1.0), n == "hgb"))
    model = factories[winner]().fit(pairs.X, pairs.y)
    report = {"folds": k, "metric": "ndcg@10", "mean": means, "per_fold": per_fold}
    return model, winner, report


def _fold_ndcg(
    make: Callable[[], Any], pairs: PairSet, cos: np.ndarray, train: np.ndarray, test: np.ndarray
) -> float:
    """nDCG@10 on the test rows of a model fitted on the train rows (NaN: one class in train)."""
    if pairs.y[train].min() == pairs.y[train].max():
        return float("nan")
    model = make().fit(pairs.X[train], pairs.y[train])
    s = positive_proba(model, pairs.X[test])
    return ndcg_by_question(s, pairs.y[test], pairs.qid[test], cos[test])
