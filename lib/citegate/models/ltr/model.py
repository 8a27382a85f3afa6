"""The trained learning-to-rank reranker and its file.

`LTRReranker` puts a fitted scikit-learn pair classifier behind the `Reranker` protocol (the score
is P(gold | features)); `save_ltr` / `load_ltr` pickle it with its metadata under
`var/models/ltr-<name>.pkl`. Training lives in `fit` (pairs, model selection) and
`citegate.research.ltr_training` (pools from traces and the database).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.models.ltr.features import FEATURE_NAMES, features
from citegate.models.protocols import Scorable

MODEL_FORMAT = 1
DEFAULT_NAME = "default"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class LTRReranker:
    """A fitted pair classifier behind the `Reranker` protocol: the score is P(gold | features)."""

    uses_features = True  # CachedReranker keys on cosine and lanes too

    def __init__(self, name: str, model: Any, meta: dict[str, Any] | None = None) -> None:
        self.name = name
        self.id = f"ltr/{name}"
        self.model = model
        self.meta = dict(meta or {})
        # Digest of the fitted model: `id` stays `ltr/<name>` (configs name it), so a cache that
        # must not serve a retrained model's old scores should key on `cache_id` instead.
        self.version = self.meta.setdefault(
            "version", hashlib.sha256(pickle.dumps(model, protocol=5)).hexdigest()[:12]
        )
        self.cache_id = f"{self.id}@{self.version}"
        names = tuple(self.meta.get("feature_names", FEATURE_NAMES))
        if names != FEATURE_NAMES:
            raise ConfigError(
                f"LTR model {name!r} was trained on other features; retrain it with "
                f"`citegate ltr train --name {name}`"
            )

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        """P(candidate is gold) for each candidate (pass the question's whole pool: the relative
        features are computed over it)."""
        if not cands:
            return []
        X = features(question, cands)
        with one_thread():  # a few hundred rows: OpenMP start-up costs more than it saves
            proba = positive_proba(self.model, X)
        return [float(p) for p in proba]


def positive_proba(model: Any, X: np.ndarray) -> np.ndarray:
    """P(class 1) of a fitted classifier for each row (zeros when it never saw a positive)."""
    classes = list(model.classes_)
    proba = model.predict_proba(X)
    return proba[:, classes.index(1)] if 1 in classes else np.zeros(len(X))


_CONTROLLER: list[ThreadpoolController] = []


def one_thread(limit: int | None = 1) -> Any:
    """Limit OpenMP to `limit` threads (None: no limit). On a busy 2-core machine a full thread
    team makes HistGradientBoosting pathological: predict on ~100 rows ~140 ms vs ~2 ms on one
    thread, a fit on 322k pairs 90 s vs 10 s. The controller is built on first use (it scans the
    loaded libraries), not at import."""
    if limit is None:
        return contextlib.nullcontext()
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=limit, user_api="openmp")


def bare_name(name: str) -> str:
    """`name` without its `ltr/` prefix; ConfigError unless it is a safe file-name stem."""
    name = name.removeprefix("ltr/")
    if not _NAME_RE.match(name):
        raise ConfigError(f"bad LTR model name {name!r} (letters, digits, '.', '_', '-')")
    return name


def model_path(name: str) -> Path:
    """Where the model `name` (or `ltr/name`) is stored: `var/models/ltr-<name>.pkl`."""
    return paths.var_dir() / "models" / f"ltr-{bare_name(name)}.pkl"


def save_ltr(reranker: LTRReranker, path: Path | None = None) -> Path:
    """Pickle the model with its metadata (written atomically)."""
    path = Path(path or model_path(reranker.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"format": MODEL_FORMAT, "model": reranker.model, "meta": reranker.meta}
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(pickle.dumps(blob, protocol=5))
    tmp.replace(path)
    return path


def load_ltr(name: str, path: Path | None = None) -> LTRReranker:
    """The trained model `name` (`ltr/<name>` works too); ConfigError if it was never trained."""
    import sklearn

    bare = bare_name(name)
    path = Path(path or model_path(bare))
    if not path.exists():
        raise ConfigError(
            f"no trained LTR model {bare!r} at {path}; train it with "
            f"`citegate ltr train --name {bare}`"
        )
    blob = pickle.loads(path.read_bytes())
    if not isinstance(blob, dict) or blob.get("format") != MODEL_FORMAT:
        raise ConfigError(
            f"{path} is not an LTR model of format {MODEL_FORMAT}; retrain it with "
            f"`citegate ltr train --name {bare}`"
        )
    meta = blob["meta"]
    if meta.get("sklearn") != sklearn.__version__:
        warnings.warn(
            f"LTR model {bare!r} was trained with scikit-learn {meta.get('sklearn')}, "
            f"running {sklearn.__version__}",
            stacklevel=2,
        )
    return LTRReranker(bare, blob["model"], meta)
