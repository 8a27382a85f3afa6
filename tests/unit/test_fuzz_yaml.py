"""YAML files and model files fed generated inputs (hypothesis), as text and bytes: anchors,
aliases, tags, syntax errors, deep nesting and random bytes through the YAML reader and the
production, `--config` and spec loaders; deep, mistyped, huge and NaN JSON through the gate and
LTR model loaders. Each either succeeds or raises the project's user error (`CitegateError`, one
printable line, the CLI's exit 2); none raises anything else. 500 examples per reader, the same
inputs every run; the deadline bounds one example generously (an alias expanded or a structure
walked would take seconds to minutes, a refusal takes milliseconds).
"""

from __future__ import annotations

import json
import tempfile
import warnings
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citegate.cli import one_line
from citegate.core import paths
from citegate.core.config import load_config
from citegate.core.config_files import named, read_production
from citegate.core.errors import CitegateError
from citegate.core.inputs import json_depth
from citegate.core.yamlfile import MAX_YAML_DEPTH, loads_yaml
from citegate.models import gate_model as gm
from citegate.models.ltr.model import load_ltr
from citegate.tracking.spec import load_spec

FUZZ = settings(
    max_examples=500,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
SECRET = "Zq9secretvalue"
# Pieces YAML is made of, hostile ones included; an example is a few of them joined.
PIECES = st.sampled_from(
    [
        "version: 1\n",
        "version: ",
        "pipeline:\n",
        "pipeline: ",
        "provenance: {}\n",
        "provenance:\n  ",
        "accepted_on: ",
        "name: fuzz\n",
        "notebook: notebooks/03_gate_roc.ipynb\n",
        "parameters:\n  ",
        "  lane_k: ",
        "corpora: ",
        "extends: ",
        "&a ",
        "&b ",
        "*a",
        "*b",
        "*nowhere",
        "<<: *a\n",
        "!!python/object/apply:os.system ",
        "!!python/name:os.system ",
        "!!str ",
        "!!map ",
        "!custom ",
        "! ",
        "%TAG ! tag:x,2000:\n---\n",
        "---\n",
        "...\n",
        "[",
        "]",
        "{",
        "}",
        ", ",
        ": ",
        "- ",
        "? ",
        "\n",
        "  ",
        "\t",
        "'",
        '"',
        "\\",
        "#",
        "|\n  ",
        ">\n  ",
        "3",
        "1e400",
        "-0x1F",
        "99999999999999999999999999999999",
        ".nan",
        "2024-02-30",
        "null",
        "yes",
        SECRET,
        "\x00",
        "\ufeff",
        "\u2028",
    ]
)
TEXT_PIECE = st.text(max_size=8) | PIECES
DEEP = st.integers(1, 3 * MAX_YAML_DEPTH).map(lambda n: "pipeline: " + "[" * n + "]" * n + "\n")


def _bomb(levels: int, key: str) -> str:
    """An alias bomb: `levels` levels of nine aliases of the level below (9**levels nodes once
    expanded), aliased under `key` of a production-shaped file."""
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "\n".join(["provenance:", *(f"  {r}" for r in rows), f"{key}: *a{levels}", ""])


BOMB = st.builds(_bomb, st.integers(1, 9), st.sampled_from(["version", "pipeline", "name"]))
YAML_TEXT = st.lists(TEXT_PIECE, max_size=24).map("".join) | DEEP | BOMB


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """A scratch folder shared by the examples of this module (each writes its own file)."""
    with tempfile.TemporaryDirectory(prefix="citegate-fuzz-yaml-") as tmp:
        yield Path(tmp)


def refused_in_one_line(fn: object, *args: object) -> object:
    """Call `fn`; a `CitegateError` is a refusal (one printable line once the CLI shows it);
    any other exception fails the test."""
    try:
        return fn(*args)  # type: ignore[operator]
    except CitegateError as exc:
        shown = one_line(str(exc))
        assert shown.encode("utf-8") and "\n" not in str(exc).strip(), str(exc)
        return exc


@FUZZ
@given(text=YAML_TEXT)
def test_yaml_text_is_plain_data_or_a_one_line_refusal_never_echoed(text: str) -> None:
    got = refused_in_one_line(loads_yaml, text, "fuzz.yaml")
    if isinstance(got, CitegateError):
        assert str(got).startswith("fuzz.yaml: ") and SECRET not in str(got), str(got)
    else:  # nothing expanded: no deeper than the limit
        assert json_depth(got) <= MAX_YAML_DEPTH


@FUZZ
@given(text=YAML_TEXT, raw=st.binary(max_size=64), as_bytes=st.booleans())
def test_production_config_and_spec_files(
    folder: Path, text: str, raw: bytes, as_bytes: bool
) -> None:
    path = folder / "file.yaml"
    if as_bytes:
        path.write_bytes(raw)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for reader in (read_production, load_config, named, load_spec):
        refused_in_one_line(reader, path)


# ---------------------------------------------------------------- model files


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(10**400), 2**1024])
    | st.floats()
    | st.text(max_size=8)
)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
DEEP_JSON = st.integers(1, 2000).map(lambda n: "[" * n + "]" * n)


def _gate_doc() -> dict[str, object]:
    g = gm.LearnedGate(
        features=("max_cosine", "address_absent"),
        language_stats={"*": (0.8, 0.1)},
        mean=(0.8, 0.1),
        scale=(0.1, 0.3),
        coef=(1.0, -2.0),
        intercept=0.0,
        threshold=0.5,
    )
    return json.loads(g.to_json())


GATE_DOC = _gate_doc()
LTR_DOC = json.loads(
    sorted((paths.EXPERIMENTS / "models").glob("ltr-*.json"))[0].read_text(encoding="utf-8")
)
HGB = {
    "kind": "hgb",
    "n_features": len(LTR_DOC["feature_names"]),
    "baseline": 0.0,
    "trees": [
        {
            "feature": [0, 0, 0],
            "threshold": [0.5, 0.0, 0.0],
            "missing_left": [True, False, False],
            "left": [1, 0, 0],
            "right": [2, 0, 0],
            "leaf": [False, True, True],
            "value": [0.0, -1.0, 1.0],
        }
    ],
}


def _model_text(base: dict[str, object], changes: dict[str, object], top: object) -> str:
    """A model document: `base` with `changes` applied (a key path 'a.b' reaches inside), or
    `top` itself when `changes` is empty (a document of any shape)."""
    if not changes:
        return json.dumps(top)
    doc = json.loads(json.dumps(base))
    for key, value in changes.items():
        target = doc
        *parents, last = key.split(".")
        for p in parents:
            target = target.setdefault(p, {}) if isinstance(target, dict) else {}
        if isinstance(target, dict):
            target[last] = value
    return json.dumps(doc)


GATE_KEYS = st.sampled_from([*GATE_DOC, "language_stats.*", "mean.0", "format", "kind"]) | st.text(
    max_size=6
)
LTR_KEYS = st.sampled_from(
    [
        *LTR_DOC,
        *(f"estimator.{k}" for k in HGB),
        "estimator.trees",
        "meta.sklearn",
        "meta.feature_names",
    ]
)


@FUZZ
@given(
    changes=st.dictionaries(GATE_KEYS, JSONISH, max_size=3),
    top=JSONISH,
    deep=DEEP_JSON,
    choice=st.sampled_from(["doc", "deep", "nan", "long"]),
)
def test_gate_model_files(
    folder: Path, changes: dict[str, object], top: object, deep: str, choice: str
) -> None:
    text = {
        "doc": _model_text(GATE_DOC, changes, top),
        "deep": '{"format": 1, "kind": ' + deep + "}",
        "nan": json.dumps(GATE_DOC).replace("0.5", "NaN").replace("0.1", "Infinity"),
        "long": json.dumps(GATE_DOC).replace("0.5", "9" * 5000),
    }[choice]
    path = folder / "gate.json"
    path.write_text(text, encoding="utf-8")
    refused_in_one_line(gm.load, path)


@FUZZ
@given(
    changes=st.dictionaries(LTR_KEYS, JSONISH, max_size=3),
    top=JSONISH,
    deep=DEEP_JSON,
    choice=st.sampled_from(["logreg", "hgb", "deep", "nan", "long"]),
)
def test_ltr_model_files(
    folder: Path, changes: dict[str, object], top: object, deep: str, choice: str
) -> None:
    base = {**LTR_DOC, "estimator": HGB} if choice == "hgb" else LTR_DOC
    text = {
        "deep": '{"estimator": ' + deep + "}",
        "nan": json.dumps(LTR_DOC).replace("0.", "NaN, 0."),
        "long": json.dumps(LTR_DOC).replace("0.", "9" * 5000 + ", 0.", 1),
    }.get(choice) or _model_text(base, changes, top if changes or choice != "hgb" else base)
    path = folder / "ltr.json"
    path.write_text(text, encoding="utf-8")
    with warnings.catch_warnings():  # a model from another scikit-learn version warns
        warnings.simplefilter("ignore")
        refused_in_one_line(load_ltr, "fuzz", path)
