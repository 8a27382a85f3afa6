"""The trained learning-to-rank reranker and its file.

`LTRReranker` puts a fitted pair classifier behind the `Reranker` protocol (the score is
P(gold | features)). The model is data, never a pickle: `save_ltr` writes it as deterministic JSON
(`var/models/ltr-<name>.json`: the estimator's trees or coefficients, `portable`, and the training
metadata that is a function of the training data), and the sha256 of those bytes is its digest; a
promotion copies the same bytes to `experiments/models/` and the config names them by digest. What
varies between two trainings on the same data (wall time, the date) goes to a side file,
`ltr-<name>.run.json`, which nothing scores from. Training lives in `fit` (pairs, model
selection) and `citegate.research.ltr_training` (pools from traces and the database).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.core.inputs import (
    MAX_JSON_DEPTH,
    MAX_MODEL_BYTES,
    loads_json,
    read_file_bytes,
    shown,
)
from citegate.models.ltr.features import FEATURE_NAMES, check_feature_names, features
from citegate.models.ltr.portable import PortableModel, from_doc, from_sklearn
from citegate.models.protocols import Scorable

MODEL_FORMAT = 2  # 1 was a pickle
MODEL_KIND = "citegate.ltr_model"
DEFAULT_NAME = "default"
RUN_FIELDS = ("trained_at", "seconds")  # training facts that differ run to run: the side file's
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class LTRReranker:
    """A fitted pair classifier behind the `Reranker` protocol: the score is P(gold | features)."""

    uses_features = True  # CachedReranker keys on cosine and lanes too

    def __init__(self, name: str, model: Any, meta: dict[str, Any] | None = None) -> None:
        self.name = name
        self.id = f"ltr/{name}"
        self.meta = {k: v for k, v in (meta or {}).items() if k not in RUN_FIELDS}
        try:
            self.feature_names = check_feature_names(self.meta.get("feature_names", FEATURE_NAMES))
        except ConfigError as exc:
            raise ConfigError(
                f"LTR model {name!r} was trained on other features ({exc}); retrain it with "
                f"`citegate ltr train --name {name}`"
            ) from exc
        # A fitted scikit-learn estimator is converted to its data form at once: what is scored
        # is what is saved, so a model scores the same before and after a round trip.
        self.model = (
            model
            if isinstance(model, PortableModel)
            else from_sklearn(model, len(self.feature_names))
        )
        # Digest of the model file's bytes: `id` stays `ltr/<name>` (configs name it), so a cache
        # that must not serve a retrained model's old scores keys on `cache_id` instead.
        self.digest = hashlib.sha256(self.to_bytes()).hexdigest()
        self.version = self.digest[:12]
        self.cache_id = f"{self.id}@{self.version}"

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        """P(candidate is gold) for each candidate (pass the question's whole pool: the relative
        features are computed over it)."""
        if not cands:
            return []
        proba = self.model.positive_proba(features(question, cands, self.feature_names))
        return [float(p) for p in proba]

    def to_bytes(self) -> bytes:
        """The model file: deterministic JSON (sorted keys, exact float reprs), so the same
        training data gives the same bytes and the same digest."""
        doc = {
            "format": MODEL_FORMAT,
            "kind": MODEL_KIND,
            "name": self.name,
            "feature_names": list(self.feature_names),
            "estimator": self.model.doc,
            "meta": self.meta,
        }
        return (json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()


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
    """Where the model `name` (or `ltr/name`) is stored: `var/models/ltr-<name>.json`."""
    return paths.var_dir() / "models" / f"ltr-{bare_name(name)}.json"


def run_path(model_file: Path) -> Path:
    """The side file of a model file: `ltr-<name>.run.json` (when and how long it trained)."""
    return model_file.with_name(model_file.name.removesuffix(".json") + ".run.json")


def save_ltr(
    reranker: LTRReranker, path: Path | None = None, run: dict[str, Any] | None = None
) -> Path:
    """Write the model file (atomically) and, given `run`, its side file."""
    path = Path(path or model_path(reranker.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, reranker.to_bytes())
    if run is not None:
        _write_atomic(run_path(path), (json.dumps(run, sort_keys=True, indent=1) + "\n").encode())
    return path


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(path)


def load_ltr(name: str, path: Path | None = None, digest: str | None = None) -> LTRReranker:
    """The trained model `name` (`ltr/<name>` works too), read from `path` (default
    `model_path(name)`, read by `core.inputs.read_file_bytes`: a regular file of at most
    `MAX_MODEL_BYTES`, JSON nested at most `MAX_JSON_DEPTH` deep); ConfigError naming the file
    when it is missing, not a regular file or too large, its sha256 differs from `digest` (when
    given), or it is not a model file of this format."""
    bare = bare_name(name)
    path = Path(path or model_path(bare))
    retrain = f"retrain it with `citegate ltr train --name {bare}`"
    try:
        data = read_file_bytes(path, "LTR model", MAX_MODEL_BYTES)
    except OSError as exc:
        hint = (
            "promote the run that trained it"
            if digest
            else f"train it with `citegate ltr train --name {bare}`"
        )
        raise ConfigError(f"{path}: no LTR model file ({exc.strerror or exc}); {hint}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if digest is not None and digest.lower() != actual:
        raise ConfigError(f"{path}: LTR model digest {actual} differs from the expected {digest}")
    doc = _parse(path, data, retrain)
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    running = installed_sklearn()
    if running is not None and meta.get("sklearn") not in (None, running):
        warnings.warn(
            f"LTR model {bare!r} was trained with scikit-learn {meta.get('sklearn')}, "
            f"running {running}",
            stacklevel=2,
        )
    try:
        model = from_doc(doc["estimator"])
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
        raise ConfigError(f"{path}: malformed LTR estimator ({exc}); {retrain}") from exc
    reranker = LTRReranker(str(doc.get("name", bare)), model, meta)
    if reranker.digest != actual:
        raise ConfigError(
            f"{path}: not in canonical form (its content re-serialises differently); {retrain}"
        )
    return reranker


def installed_sklearn() -> str | None:
    """The installed scikit-learn's version, read from its package metadata (importing sklearn
    takes ~1 s); None without it: a core install (`pip install .`, no research extra) scores with
    the portable trees alone, so there is no version to compare the training one with."""
    try:
        return importlib.metadata.version("scikit-learn")
    except importlib.metadata.PackageNotFoundError:
        return None


def _parse(path: Path, data: bytes, retrain: str) -> dict[str, Any]:
    """The file's JSON object, checked for this format and kind."""
    try:
        doc = loads_json(data.decode("utf-8"), MAX_JSON_DEPTH)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON LTR model ({exc}); {retrain}") from exc
    if (
        not isinstance(doc, dict)
        or doc.get("format") != MODEL_FORMAT
        or doc.get("kind") != MODEL_KIND
    ):
        got = (
            f"({shown(doc.get('format'))}, {shown(doc.get('kind'))})"
            if isinstance(doc, dict)
            else type(doc).__name__
        )
        raise ConfigError(
            f"{path}: not an LTR model of format {MODEL_FORMAT} (kind {MODEL_KIND!r}), found {got}; {retrain}"
        )
    names = doc.get("feature_names")
    try:
        check_feature_names(names if isinstance(names, list) else [])
    except ConfigError as exc:
        raise ConfigError(
            f"{path}: LTR model was trained on other features ({exc}); {retrain}"
        ) from exc
    meta = doc.get("meta")
    if isinstance(meta, dict) and meta.get("feature_names", names) != names:
        raise ConfigError(f"{path}: the file's feature list differs from its metadata's; {retrain}")
    return doc


def load_run(name: str) -> dict[str, Any]:
    """The side file of the trained model `name` ({} when there is none)."""
    p = run_path(model_path(name))
    try:
        data = read_file_bytes(p, "LTR model's side file", MAX_MODEL_BYTES)
        return dict(loads_json(data.decode("utf-8"), MAX_JSON_DEPTH))
    except (OSError, ValueError, TypeError, ConfigError):
        return {}
