"""The learned gate's model file: the probability by hand, the NaN and language rules, a stable
JSON round trip, and every way `load` refuses a file."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from citegate.core.errors import ConfigError
from citegate.models import gate_model as gm
from citegate.models.gate_model import LearnedGate

STATS = {"en": (0.86, 0.02), "ru": (0.80, 0.04), "*": (0.85, 0.05)}
FEATURES = ("max_cosine", "max_cosine_lang_z", "address_absent", "ltr_max_prob")


def gate(**changes: object) -> LearnedGate:
    values: dict[str, object] = {
        "features": FEATURES,
        "language_stats": dict(STATS),
        "mean": (0.85, 0.1, 0.2, 0.3),
        "scale": (0.05, 1.5, 0.4, 0.25),
        "coef": (1.2, 0.8, -2.0, 1.5),
        "intercept": -0.3,
        "threshold": 0.43,
        "certificate": {"alpha": 0.05, "delta": 0.05, "n_neg": 400, "bound": 0.048},
        "trained_on": {"run": "abc", "sets": ["gita-split"]},
    }
    values.update(changes)
    return LearnedGate(**values)  # type: ignore[arg-type]


def by_hand(x: list[float]) -> float:
    """logistic(Σ coef · (x − mean) / scale + intercept), NaN → 0 after standardising."""
    g = gate()
    t = g.intercept
    for xi, m, s, c in zip(x, g.mean, g.scale, g.coef, strict=True):
        t += 0.0 if math.isnan(xi) else c * (xi - m) / s
    return 1.0 / (1.0 + math.exp(-t))


def test_probability_is_the_logistic_of_standardised_features() -> None:
    sig = {"max_cosine": 0.83, "address_absent": 1.0, "ltr_max_prob": 0.6}
    # Russian: the language z-score uses ru's own mean and std
    assert gate().probability(sig, "ru") == pytest.approx(by_hand([0.83, 0.75, 1.0, 0.6]))
    assert gate().probability(sig, "en") == pytest.approx(by_hand([0.83, -1.5, 1.0, 0.6]))


def test_nan_or_missing_is_the_training_mean_and_unknown_language_is_pooled() -> None:
    sig = {"max_cosine": 0.83, "address_absent": 0.0, "ltr_max_prob": math.nan}
    expected = by_hand([0.83, (0.83 - 0.85) / 0.05, 0.0, math.nan])
    assert gate().probability(sig, "hi") == pytest.approx(expected)  # "hi": pooled "*" stats
    missing = {"max_cosine": 0.83, "address_absent": 0.0}
    assert gate().probability(missing, "hi") == pytest.approx(expected)


def test_decide_answers_at_or_above_the_threshold() -> None:
    sig = {"max_cosine": 0.9, "address_absent": 0.0, "ltr_max_prob": 0.9}
    p = gate().probability(sig, "en")
    assert gate(threshold=p).decide(sig, "en") == (True, p)
    assert gate(threshold=min(1.0, p + 1e-9)).decide(sig, "en")[0] is False
    assert gate(threshold=math.inf).decide(sig, "en")[0] is False  # infeasible: never answers


def test_needs_reranker_when_ltr_is_a_feature() -> None:
    assert gate().needs_reranker
    plain = gate(features=FEATURES[:3], mean=(0.85, 0.1, 0.2), scale=(1, 1, 1), coef=(1, 1, 1))
    assert not plain.needs_reranker


def test_round_trip_keeps_the_model_and_the_digest_identifies_the_file(tmp_path: Path) -> None:
    path = tmp_path / "gate_model.json"
    digest = gate().save(path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest() == gm.file_digest(path)
    back = gm.load(path, digest)
    assert back == gate() and back.to_json() == gate().to_json()
    sig = {"max_cosine": 0.81, "address_absent": 1.0}
    assert back.probability(sig, "ru") == gate().probability(sig, "ru")
    # deterministic: key order in the input does not change the bytes
    shuffled = gate(language_stats=dict(reversed(list(STATS.items()))))
    assert shuffled.to_json() == gate().to_json()
    doc = json.loads(path.read_text())
    assert doc["format"] == gm.FORMAT and list(doc) == sorted(doc)
    never = gate(threshold=math.inf)
    assert gm.load(tmp_path / "x.json", never.save(tmp_path / "x.json")).threshold == math.inf


def test_load_refuses_a_digest_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    gate().save(path)
    with pytest.raises(ConfigError, match=r"g\.json: gate model digest .* differs"):
        gm.load(path, "0" * 64)


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": 2}, "unknown gate model format 2"),
        ({"kind": "other"}, "unknown gate model format"),
        ({"coef": None}, "field 'coef' is malformed"),
        ({"mean": [0.1, 0.2]}, "mean has 2 values for 4 features"),
        ({"scale": [1, 0, 1, 1]}, "scale must be > 0"),
        ({"features": ["max_cosine", "nonsense", "address_absent", "ltr_max_prob"]}, "'nonsense'"),
        ({"language_stats": {"en": [0.8, 0.1]}}, 'needs the pooled key "\\*"'),
        ({"language_stats": {"*": [0.8]}}, "field 'language_stats' is malformed"),
        ({"threshold": 1.5}, "threshold must lie in"),
        ({"intercept": "high"}, "field 'intercept' is malformed"),
    ],
)
def test_load_names_the_bad_field(tmp_path: Path, change: dict, message: str) -> None:
    doc = {**gate().to_dict(), **change}
    with pytest.raises(ConfigError, match=message) as info:
        gm.load(_write(tmp_path, doc))
    assert "bad.json" in str(info.value)


def test_load_names_a_missing_field_and_unreadable_files(tmp_path: Path) -> None:
    doc = gate().to_dict()
    del doc["threshold"]
    with pytest.raises(ConfigError, match="bad.json: gate model field 'threshold' is missing"):
        gm.load(_write(tmp_path, doc))
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ConfigError, match="junk.json: not a JSON gate model"):
        gm.load(tmp_path / "junk.json")
    with pytest.raises(ConfigError, match="absent.json: cannot read"):
        gm.load(tmp_path / "absent.json")


def test_training_helpers_build_the_same_rows_the_gate_reads() -> None:
    stats = gm.fit_language_stats([0.8, 0.84, 0.9, math.nan], ["ru", "ru", "en", "en"])
    assert stats["ru"] == pytest.approx((0.82, 0.02)) and stats["en"] == (0.9, 1.0)  # one value
    assert stats["*"] == pytest.approx((np.mean([0.8, 0.84, 0.9]), np.std([0.8, 0.84, 0.9])))
    sigs = [{"max_cosine": 0.8, "address_absent": 1.0}, {"max_cosine": 0.9}]
    x = gm.feature_matrix(sigs, ["ru", "xx"], ("max_cosine_lang_z", "address_absent"), stats)
    assert x[0, 0] == pytest.approx(-1.0) and x[0, 1] == 1.0 and math.isnan(x[1, 1])
    assert x[1, 0] == pytest.approx((0.9 - stats["*"][0]) / stats["*"][1])
    mean, scale = gm.standardiser(x)
    assert mean[1] == 1.0 and scale[1] == 1.0  # NaN ignored; a constant column keeps scale 1
    z = gm.impute_standardise(x, mean, scale)
    assert z[1, 1] == 0.0 and np.all(np.isfinite(z))
    g = LearnedGate(
        ("max_cosine_lang_z", "address_absent"), stats, mean, scale, (0.5, -1.0), 0.1, 0.5
    )
    p = 1 / (1 + np.exp(-(z @ np.array([0.5, -1.0]) + 0.1)))
    assert [g.probability(s, lg) for s, lg in zip(sigs, ["ru", "xx"], strict=True)] == (
        pytest.approx(list(p))
    )


def test_numpy_values_from_a_trainer_are_stored_as_plain_numbers(tmp_path: Path) -> None:
    g = gate(
        mean=np.array([0.85, 0.1, 0.2, 0.3]),
        coef=np.array([1.2, 0.8, -2.0, 1.5]),
        intercept=np.float64(-0.3),
        certificate={"n_neg": np.int64(400), "bound": np.float64(0.048), "kinds": ("a",)},
    )
    assert g.mean == gate().mean and type(g.intercept) is float
    back = gm.load(tmp_path / "g.json", g.save(tmp_path / "g.json"))
    assert back.certificate == {"n_neg": 400, "bound": 0.048, "kinds": ["a"]}
    assert back.probability({"max_cosine": None}, "en") == g.probability({}, "en")


def test_an_invalid_gate_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="coef has 1 values for 4 features"):
        replace(gate(), coef=(1.0,))
