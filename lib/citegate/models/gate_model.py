"""The learned gate: a logistic model over gate signals, stored as a small versioned JSON file.

p(answerable) = logistic(coef · z + intercept), z = (x − mean) / scale, where x holds the named
features of one question's signals (`citegate.pipeline.signals`). One derived feature exists:
`max_cosine_lang_z` = (max_cosine − μ_lang) / σ_lang with the per-language statistics fitted on
tune (`language_stats`; a language not seen there uses the pooled statistics under "*"), because
cosines are not comparable across languages. A missing or NaN feature value is replaced by the
training mean (z = 0: it pushes the probability neither way).

The gate answers when p ≥ `threshold` (a certified threshold: `certificate` records α, δ, n and
the bound). Training happens elsewhere (scikit-learn, in the experiment); this module only
evaluates, saves and loads, with NumPy. The file is deterministic JSON (sorted keys) so its
sha256 digest identifies the model; `load` checks format, fields and, when given, the digest.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from citegate.core.errors import ConfigError
from citegate.core.inputs import (
    MAX_JSON_DEPTH,
    MAX_MODEL_BYTES,
    loads_json,
    read_file_bytes,
    shown,
)

FORMAT = 1
KIND = "citegate.learned_gate"
# The raw signals `citegate.pipeline.signals.signals` computes, in this order (defined here, the
# lower layer, so that a model file can be validated without the pipeline).
SIGNALS: tuple[str, ...] = (
    "max_cosine",
    "topk_mean_cosine",
    "margin_top1_top2",
    "address_named",
    "address_found",
    "address_absent",
    "lexical_coverage",
    "lexical_rank",
    "ltr_max_prob",
    "two_scale_score",
)
LANG_Z = "max_cosine_lang_z"
DERIVED: tuple[str, ...] = (LANG_Z,)
FEATURES: tuple[str, ...] = SIGNALS + DERIVED
POOLED = "*"  # language_stats key of the statistics over every language

_FIELDS = (
    "features",
    "language_stats",
    "mean",
    "scale",
    "coef",
    "intercept",
    "threshold",
    "certificate",
    "trained_on",
)


def fit_language_stats(
    max_cosines: Sequence[float], languages: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """(mean, std) of max cosine per language, plus the pooled pair under "*" (NaNs ignored; a
    std of 0 or one value only becomes 1.0 so the z-score stays finite)."""
    x = np.asarray(max_cosines, dtype=float)
    lang = np.asarray(languages, dtype=object)
    if x.shape != lang.shape:
        raise ValueError("max_cosines and languages must have equal length")
    out = {str(k): _mean_std(x[lang == k]) for k in sorted(set(lang.tolist()))}
    out[POOLED] = _mean_std(x)
    return out


def _mean_std(x: np.ndarray) -> tuple[float, float]:
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return (0.0, 1.0)
    sd = float(np.std(x)) if len(x) > 1 else 0.0
    return (float(np.mean(x)), sd if sd > 0 else 1.0)


def feature_row(
    sig: Mapping[str, float],
    language: str,
    features: Sequence[str],
    language_stats: Mapping[str, tuple[float, float]],
) -> np.ndarray:
    """The raw feature values of one question, NaN where a value is missing (the trainer and the
    gate build rows the same way: the experiment fits on these rows)."""
    row = np.full(len(features), math.nan)
    for i, name in enumerate(features):
        if name == LANG_Z:
            mu, sd = language_stats.get(language) or language_stats[POOLED]
            value = (_value(sig, "max_cosine") - mu) / sd
        else:
            value = _value(sig, name)
        row[i] = value
    return row


def _value(sig: Mapping[str, float], name: str) -> float:
    """A signal's value as a float, NaN when it is missing or None."""
    v = sig.get(name)
    return math.nan if v is None else float(v)


def feature_matrix(
    sigs: Sequence[Mapping[str, float]],
    languages: Sequence[str],
    features: Sequence[str],
    language_stats: Mapping[str, tuple[float, float]],
) -> np.ndarray:
    """`feature_row` for many questions (n × len(features), NaN kept)."""
    rows = [
        feature_row(s, lg, features, language_stats) for s, lg in zip(sigs, languages, strict=True)
    ]
    return np.vstack(rows) if rows else np.empty((0, len(features)))


def standardiser(x: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Column means and standard deviations ignoring NaN (a constant or empty column gets mean 0
    or its value and scale 1.0)."""
    cols = [_mean_std(np.asarray(x[:, j], dtype=float)) for j in range(x.shape[1])]
    return tuple(c[0] for c in cols), tuple(c[1] for c in cols)


def impute_standardise(x: np.ndarray, mean: Sequence[float], scale: Sequence[float]) -> np.ndarray:
    """(x − mean) / scale with NaN → 0 (the training mean): the gate's input to the logistic."""
    z = (np.asarray(x, dtype=float) - np.asarray(mean)) / np.asarray(scale)
    return np.where(np.isfinite(z), z, 0.0)


@dataclass(frozen=True)
class LearnedGate:
    """A fitted logistic gate (see the module docstring for the formula and the NaN rule)."""

    features: tuple[str, ...]
    language_stats: dict[str, tuple[float, float]]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    certificate: dict[str, Any] = field(default_factory=dict)
    trained_on: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Plain Python values whatever the trainer passed (NumPy arrays, np.float64): equality,
        # JSON and the digest then do not depend on how the model was built.
        plain = {
            "features": tuple(str(f) for f in self.features),
            "language_stats": {
                str(k): (float(v[0]), float(v[1])) for k, v in self.language_stats.items()
            },
            "mean": tuple(float(v) for v in self.mean),
            "scale": tuple(float(v) for v in self.scale),
            "coef": tuple(float(v) for v in self.coef),
            "intercept": float(self.intercept),
            "threshold": float(self.threshold),
        }
        for name, value in plain.items():
            object.__setattr__(self, name, value)
        problems = _problems(self)
        if problems:
            raise ValueError("invalid learned gate: " + "; ".join(problems))

    @property
    def needs_reranker(self) -> bool:
        """True when a feature comes from the LTR reranker (the config must run it)."""
        return "ltr_max_prob" in self.features

    def probability(self, sig: Mapping[str, float], language: str) -> float:
        """p(answerable) of one question from its raw signals and its language."""
        row = feature_row(sig, language, self.features, self.language_stats)
        z = impute_standardise(row, self.mean, self.scale)
        return _logistic(float(np.dot(np.asarray(self.coef), z)) + self.intercept)

    def decide(self, sig: Mapping[str, float], language: str) -> tuple[bool, float]:
        """(answer?, p): answer when p ≥ threshold."""
        p = self.probability(sig, language)
        return p >= self.threshold, p

    def to_dict(self) -> dict[str, Any]:
        """The file's content as plain values (with `format` and `kind`)."""
        return {
            "format": FORMAT,
            "kind": KIND,
            "features": list(self.features),
            "language_stats": {k: [v[0], v[1]] for k, v in sorted(self.language_stats.items())},
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "threshold": self.threshold,
            "certificate": self.certificate,
            "trained_on": self.trained_on,
        }

    def to_json(self) -> str:
        """Deterministic JSON (sorted keys, two-space indent, exact float reprs; an infeasible
        threshold is written as Infinity, which Python's json reads back)."""
        doc = self.to_dict()
        return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False, default=_plain) + "\n"

    def save(self, path: str | Path) -> str:
        """Write the JSON file; return the sha256 hex digest of its bytes."""
        data = self.to_json().encode("utf-8")
        Path(path).write_bytes(data)
        return hashlib.sha256(data).hexdigest()


def _plain(value: Any) -> Any:
    """JSON form of the NumPy values a trainer may leave in `certificate` or `trained_on`."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple | set | frozenset):
        return sorted(value) if isinstance(value, set | frozenset) else list(value)
    raise TypeError(f"gate model: {type(value).__name__} is not JSON-serialisable")


def _logistic(t: float) -> float:
    if t >= 0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


def _problems(g: LearnedGate) -> list[str]:
    """What is wrong with a gate's fields (empty when it is usable)."""
    out = [
        f"unknown feature {f!r} (known: {', '.join(FEATURES)})"
        for f in g.features
        if f not in FEATURES
    ]
    n = len(g.features)
    for name in ("mean", "scale", "coef"):
        values = getattr(g, name)
        if len(values) != n:
            out.append(f"{name} has {len(values)} values for {n} features")
        elif not all(math.isfinite(v) for v in values):
            out.append(f"{name} has a non-finite value")
    if len(g.scale) == n and any(v <= 0 for v in g.scale):
        out.append("scale must be > 0")
    if not math.isfinite(g.intercept):
        out.append("intercept must be finite")
    if not (0.0 <= g.threshold <= 1.0 or g.threshold == math.inf):
        out.append(f"threshold must lie in [0, 1] (or be inf: never answer), got {g.threshold!r}")
    if LANG_Z in g.features and POOLED not in g.language_stats:
        out.append(f'language_stats needs the pooled key "{POOLED}" for {LANG_Z}')
    for k, (mu, sd) in g.language_stats.items():
        if not (math.isfinite(mu) and math.isfinite(sd) and sd > 0):
            out.append(f"language_stats[{k!r}] must be a finite mean and a std > 0")
    return out


def file_digest(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes (what `save` returned), read as `load` reads them."""
    return hashlib.sha256(read_file_bytes(path, "gate model", MAX_MODEL_BYTES)).hexdigest()


def load(path: str | Path, digest: str | None = None) -> LearnedGate:
    """Read a model file (`core.inputs.read_file_bytes`: a regular file of at most
    `MAX_MODEL_BYTES`, JSON nested at most `MAX_JSON_DEPTH` deep). ConfigError naming the path
    when it cannot be read, is not a regular file or too large, its digest differs from `digest`
    (the full sha256 hex), it is not such JSON, its format is unknown, or a field is missing or
    bad."""
    p = Path(path)
    try:
        data = read_file_bytes(p, "gate model", MAX_MODEL_BYTES)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the gate model ({exc.strerror or exc})") from exc
    actual = hashlib.sha256(data).hexdigest()
    if digest is not None and digest.lower() != actual:
        raise ConfigError(f"{p}: gate model digest {actual} differs from the expected {digest}")
    try:
        doc = loads_json(data.decode("utf-8"), MAX_JSON_DEPTH)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{p}: not a JSON gate model ({exc})") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{p}: a gate model is a JSON object")
    if doc.get("format") != FORMAT or doc.get("kind") != KIND:
        raise ConfigError(
            f"{p}: unknown gate model format {shown(doc.get('format'))} / kind "
            f"{shown(doc.get('kind'))} "
            f"(this version reads format {FORMAT}, kind {KIND!r})"
        )
    return _from_doc(p, doc)


def _from_doc(p: Path, doc: dict[str, Any]) -> LearnedGate:
    """Build the gate from a parsed document, naming the first missing or malformed field."""
    values: dict[str, Any] = {}
    for name in _FIELDS:
        if name not in doc:
            raise ConfigError(f"{p}: gate model field {name!r} is missing")
        try:
            values[name] = _READERS[name](doc[name])
        except (TypeError, ValueError, IndexError, OverflowError) as exc:
            raise ConfigError(f"{p}: gate model field {name!r} is malformed ({exc})") from exc
    try:
        return LearnedGate(**values)
    except ValueError as exc:
        raise ConfigError(f"{p}: {exc}") from exc


def _stats(v: Any) -> dict[str, tuple[float, float]]:
    out = {}
    for k, pair in _mapping(v).items():
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"language {shown(k)} needs a [mean, std] pair")
        out[str(k)] = (float(pair[0]), float(pair[1]))
    return out


def _strs(v: Any) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise TypeError("features must be a list of strings")
    return v


def _floats(v: Any) -> tuple[float, ...]:
    if not isinstance(v, list) or isinstance(v, str):
        raise TypeError("expected a list of numbers")
    return tuple(_number(x) for x in v)


def _mapping(v: Any) -> Mapping[str, Any]:
    if not isinstance(v, dict):
        raise TypeError("expected an object")
    return v


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(f"expected a number, got {type(v).__name__}")
    return float(v)  # OverflowError for an integer no float can hold


_READERS: dict[str, Any] = {
    "features": lambda v: tuple(_strs(v)),
    "language_stats": _stats,
    "mean": _floats,
    "scale": _floats,
    "coef": _floats,
    "intercept": _number,
    "threshold": _number,
    "certificate": lambda v: dict(_mapping(v)),
    "trained_on": lambda v: dict(_mapping(v)),
}


__all__ = [
    "DERIVED",
    "FEATURES",
    "FORMAT",
    "LANG_Z",
    "POOLED",
    "SIGNALS",
    "LearnedGate",
    "feature_matrix",
    "feature_row",
    "file_digest",
    "fit_language_stats",
    "impute_standardise",
    "load",
    "standardiser",
]
