"""The LTR reranker's fitted estimator as data: JSON in, NumPy out, no pickle.

A promotion commits every model it needs (`experiments/models/`), and a committed model must be
data a reviewer can read and a loader can check, never executable bytes. The two estimators that
`fit.model_factories` can select are written out exactly:

- `hgb` (scikit-learn's `HistGradientBoostingClassifier`, binary): the baseline raw score and, per
  boosting iteration, one tree as parallel arrays (feature, threshold, missing-goes-left, left,
  right, leaf flag, leaf value). Prediction follows scikit-learn's predictor: NaN takes the
  missing-value branch, else `x <= threshold` goes left; the raw score is the baseline plus the
  leaf values added in iteration order; p = expit(raw).
- `logreg` (StandardScaler + LogisticRegression): mean, scale, coef, intercept; p = expit(w·z + b).

`from_sklearn` converts a fitted estimator; `PortableModel.positive_proba` scores rows and agrees
with the estimator's `predict_proba[:, 1]` to floating-point rounding (a unit test checks 1e-12).
Categorical splits are refused: the pair features are all numeric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from citegate.core.errors import ConfigError
from citegate.core.inputs import shown

KINDS = ("hgb", "logreg")


@dataclass(frozen=True)
class Trees:
    """All trees of a boosted model, padded into (n_trees, max_nodes) arrays."""

    feature: np.ndarray  # int, -1 at leaves
    threshold: np.ndarray  # float
    missing_left: np.ndarray  # bool
    left: np.ndarray  # int (node index within its tree)
    right: np.ndarray  # int
    is_leaf: np.ndarray  # bool
    value: np.ndarray  # float (leaf values; 0 at split nodes)
    depth: int  # the deepest leaf: traversal steps needed


@dataclass(frozen=True)
class PortableModel:
    """A fitted binary classifier as plain arrays; `doc` is its JSON form."""

    kind: str
    doc: dict[str, Any]
    trees: Trees | None = None

    def positive_proba(self, X: np.ndarray) -> np.ndarray:
        """P(class 1) for each row of X (n × n_features)."""
        from scipy.special import expit  # heavy: imported when used, not by every command

        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.doc["n_features"]:
            raise ValueError(f"expected rows of {self.doc['n_features']} features, got {X.shape}")
        if self.kind == "logreg":
            z = (X - np.asarray(self.doc["mean"])) / np.asarray(self.doc["scale"])
            return expit(z @ np.asarray(self.doc["coef"]) + float(self.doc["intercept"]))
        return expit(self._raw(X))

    def _raw(self, X: np.ndarray) -> np.ndarray:
        """Baseline plus every tree's leaf value, all trees traversed at once."""
        t = self.trees
        assert t is not None
        n, n_trees = len(X), t.feature.shape[0]
        node = np.zeros((n, n_trees), dtype=np.int64)
        tree = np.broadcast_to(np.arange(n_trees), (n, n_trees))
        rows = np.broadcast_to(np.arange(n)[:, None], (n, n_trees))
        for _ in range(t.depth):
            leaf = t.is_leaf[tree, node]
            feat = np.where(leaf, 0, t.feature[tree, node])
            x = X[rows, feat]
            go_left = np.where(
                np.isnan(x), t.missing_left[tree, node], x <= t.threshold[tree, node]
            )
            nxt = np.where(go_left, t.left[tree, node], t.right[tree, node])
            node = np.where(leaf, node, nxt)
        values = t.value[tree, node]
        raw = np.full(n, float(self.doc["baseline"]))
        for j in range(n_trees):  # iteration order, as scikit-learn accumulates
            raw += values[:, j]
        return raw


def from_sklearn(model: Any, n_features: int) -> PortableModel:
    """The portable form of a fitted `hgb` or `logreg` estimator (see the module docstring)."""
    name = type(model).__name__
    if name == "HistGradientBoostingClassifier":
        return from_doc(_hgb_doc(model, n_features))
    if name == "Pipeline":
        return from_doc(_logreg_doc(model, n_features))
    raise ConfigError(f"cannot store a {name} as data (known: {', '.join(KINDS)})")


def _hgb_doc(model: Any, n_features: int) -> dict[str, Any]:
    if list(model.classes_) != [0, 1]:
        raise ConfigError(f"LTR model classes {list(model.classes_)} are not [0, 1]")
    trees = []
    for per_class in model._predictors:
        (pred,) = per_class  # binary: one tree per iteration
        nodes = pred.nodes
        if bool(np.any(nodes["is_categorical"])):
            raise ConfigError("LTR model has categorical splits: not storable as data")
        leaf = nodes["is_leaf"].astype(bool)
        trees.append(
            {
                "feature": np.where(leaf, -1, nodes["feature_idx"]).astype(int).tolist(),
                "threshold": np.where(leaf, 0.0, nodes["num_threshold"]).astype(float).tolist(),
                "missing_left": nodes["missing_go_to_left"].astype(bool).tolist(),
                "left": nodes["left"].astype(int).tolist(),
                "right": nodes["right"].astype(int).tolist(),
                "leaf": leaf.tolist(),
                "value": np.where(leaf, nodes["value"], 0.0).astype(float).tolist(),
            }
        )
    baseline = float(np.asarray(model._baseline_prediction).ravel()[0])
    return {"kind": "hgb", "n_features": n_features, "baseline": baseline, "trees": trees}


def _logreg_doc(model: Any, n_features: int) -> dict[str, Any]:
    scaler, clf = (step for _, step in model.steps)
    if type(scaler).__name__ != "StandardScaler" or type(clf).__name__ != "LogisticRegression":
        raise ConfigError("LTR pipeline is not StandardScaler + LogisticRegression")
    if list(clf.classes_) != [0, 1]:
        raise ConfigError(f"LTR model classes {list(clf.classes_)} are not [0, 1]")
    return {
        "kind": "logreg",
        "n_features": n_features,
        "mean": [float(v) for v in scaler.mean_],
        "scale": [float(v) for v in scaler.scale_],
        "coef": [float(v) for v in np.ravel(clf.coef_)],
        "intercept": float(np.ravel(clf.intercept_)[0]),
    }


def from_doc(doc: Mapping[str, Any]) -> PortableModel:
    """A model from its JSON form; ValueError naming what is malformed."""
    doc = dict(doc)
    kind = doc.get("kind")
    n = doc.get("n_features")
    if kind not in KINDS:
        raise ValueError(f"estimator kind {shown(kind)} is not one of {KINDS}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n_features must be a positive integer, got {shown(n)}")
    if kind == "logreg":
        for key in ("mean", "scale", "coef"):
            if len(_finite(doc, key)) != n:
                raise ValueError(f"{key} needs {n} values")
        if any(v <= 0 for v in doc["scale"]):
            raise ValueError("scale must be > 0")
        _finite_number(doc, "intercept")
        return PortableModel("logreg", doc)
    _finite_number(doc, "baseline")
    return PortableModel("hgb", doc, _trees(doc.get("trees"), n))


def _trees(raw: Any, n_features: int) -> Trees:
    if not isinstance(raw, list) or not raw:
        raise ValueError("trees must be a non-empty list")
    if not all(isinstance(t, dict) and isinstance(t.get("leaf", []), list) for t in raw):
        raise ValueError("every tree must be an object with a list of leaves")
    width = max(len(t.get("leaf", [])) for t in raw)
    shape = (len(raw), width)
    arr = {
        "feature": np.zeros(shape, np.int64),
        "threshold": np.zeros(shape),
        "missing_left": np.zeros(shape, bool),
        "left": np.zeros(shape, np.int64),
        "right": np.zeros(shape, np.int64),
        "leaf": np.ones(shape, bool),  # padding: leaves of value 0, never reached
        "value": np.zeros(shape),
    }
    depth = 0
    for i, t in enumerate(raw):
        depth = max(depth, _fill_tree(arr, i, t, n_features))
    return Trees(
        arr["feature"], arr["threshold"], arr["missing_left"], arr["left"], arr["right"],
        arr["leaf"], arr["value"], depth,
    )  # fmt: skip


def _fill_tree(arr: dict[str, np.ndarray], i: int, t: Any, n_features: int) -> int:
    """Copy tree `i` into the padded arrays after checking it; returns its depth."""
    if not isinstance(t, dict):
        raise ValueError(f"tree {i} is not an object")
    m = len(t.get("leaf", []))
    for key in arr:
        if not isinstance(t.get(key), list) or len(t[key]) != m:
            raise ValueError(f"tree {i}: {key} needs {m} entries")
    leaf = np.asarray(t["leaf"], bool)
    feat, left, right = (np.asarray(t[k], np.int64) for k in ("feature", "left", "right"))
    split = ~leaf
    if np.any((feat[split] < 0) | (feat[split] >= n_features)):
        raise ValueError(f"tree {i}: a split names a feature outside 0..{n_features - 1}")
    if np.any((left[split] <= np.flatnonzero(split)) | (left[split] >= m)):
        raise ValueError(f"tree {i}: a left child index is out of order or range")
    if np.any((right[split] <= np.flatnonzero(split)) | (right[split] >= m)):
        raise ValueError(f"tree {i}: a right child index is out of order or range")
    values = np.asarray(t["value"], float)
    thresholds = np.asarray(t["threshold"], float)
    if not (np.all(np.isfinite(values)) and np.all(~np.isnan(thresholds))):
        raise ValueError(f"tree {i}: a leaf value or threshold is not a number")
    arr["feature"][i, :m] = np.where(leaf, 0, feat)
    arr["threshold"][i, :m] = thresholds
    arr["missing_left"][i, :m] = np.asarray(t["missing_left"], bool)
    arr["left"][i, :m], arr["right"][i, :m] = left, right
    arr["leaf"][i, :m], arr["value"][i, :m] = leaf, values
    return _depth(leaf, left, right)


def _depth(leaf: np.ndarray, left: np.ndarray, right: np.ndarray) -> int:
    """Steps from the root to the deepest leaf (children always follow their parent)."""
    depth = np.zeros(len(leaf), np.int64)
    for j in np.flatnonzero(~leaf):
        depth[left[j]] = depth[right[j]] = depth[j] + 1
    return int(depth.max())


def _finite(doc: Mapping[str, Any], key: str) -> list[float]:
    v = doc.get(key)
    if not isinstance(v, list) or not all(_is_number(x) and math.isfinite(x) for x in v):
        raise ValueError(f"{key} must be a list of finite numbers")
    return v


def _finite_number(doc: Mapping[str, Any], key: str) -> float:
    v = doc.get(key)
    if not (_is_number(v) and math.isfinite(v)):
        raise ValueError(f"{key} must be a finite number, got {shown(v)}")
    return float(v)


def _is_number(v: Any) -> bool:
    """A JSON number a float can hold (an integer of 400 digits cannot)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    try:
        float(v)
    except OverflowError:
        return False
    return True


__all__ = ["KINDS", "PortableModel", "Trees", "from_doc", "from_sklearn"]
