"""The LTR estimator stored as data scores exactly as the fitted scikit-learn estimator."""

from __future__ import annotations

import json

import numpy as np
import pytest

from citegate.core.errors import ConfigError
from citegate.models.ltr.fit import model_factories
from citegate.models.ltr.portable import from_doc, from_sklearn


def data(n: int = 600, d: int = 7, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows with a learnable label, ties in some columns (as the lane flags have) and NaNs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 1] = rng.integers(0, 2, size=n)  # a binary flag: thresholds at exact ties
    y = (X[:, 0] + 0.8 * X[:, 1] - 0.5 * X[:, 2] + rng.normal(scale=0.7, size=n) > 0.3).astype(int)
    return X, y


@pytest.mark.parametrize("kind", ["hgb", "logreg"])
def test_portable_model_scores_as_the_estimator(kind: str) -> None:
    X, y = data()
    model = model_factories()[kind]().fit(X, y)
    portable = from_sklearn(model, X.shape[1])
    again = from_doc(json.loads(json.dumps(portable.doc)))  # through its JSON form
    Xt, _ = data(400, seed=1)
    want = model.predict_proba(Xt)[:, 1]
    np.testing.assert_allclose(again.positive_proba(Xt), want, rtol=0, atol=1e-12)
    assert again.positive_proba(Xt[:0]).shape == (0,)


def test_trees_follow_the_missing_value_branch() -> None:
    X, y = data()
    X[::7, 0] = np.nan  # the trees learn where NaN goes
    model = model_factories()["hgb"]().fit(X, y)
    portable = from_doc(json.loads(json.dumps(from_sklearn(model, X.shape[1]).doc)))
    Xt, _ = data(300, seed=2)
    Xt[::3, 0] = np.nan
    Xt[::5, 2] = np.nan  # a column never missing in training: scikit-learn's default branch
    want = model.predict_proba(Xt)[:, 1]
    np.testing.assert_allclose(portable.positive_proba(Xt), want, rtol=0, atol=1e-12)


def test_malformed_documents_are_refused() -> None:
    X, y = data(200)
    doc = from_sklearn(model_factories()["hgb"]().fit(X, y), X.shape[1]).doc
    bad = json.loads(json.dumps(doc))
    bad["trees"][0]["feature"][0] = 99
    with pytest.raises(ValueError, match="feature outside"):
        from_doc(bad)
    bad = json.loads(json.dumps(doc))
    bad["trees"][0]["left"] = bad["trees"][0]["left"][:-1]
    with pytest.raises(ValueError, match="left needs"):
        from_doc(bad)
    with pytest.raises(ValueError, match="kind"):
        from_doc({**doc, "kind": "pickle"})
    with pytest.raises(ValueError, match="shape|features"):
        from_doc(doc).positive_proba(np.zeros((2, 3)))


def test_an_unknown_estimator_is_not_stored() -> None:
    from sklearn.tree import DecisionTreeClassifier

    X, y = data(100)
    with pytest.raises(ConfigError, match="cannot store"):
        from_sklearn(DecisionTreeClassifier().fit(X, y), X.shape[1])
