"""The shipped experiment specs hold only what differs from their notebooks, and a run logs the
effective parameters (the notebook's defaults under the spec's) whether or not a spec repeats a
default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.tracking.spec import ExperimentSpec, NotebookParam, load_spec

SHIPPED = sorted(
    [*paths.EXPERIMENTS.glob("[0-9][0-9]_*.yaml"), *paths.EXPERIMENTS.glob("arms/*.yaml")]
)


def same_value(a: Any, b: Any) -> bool:
    """Equal and written alike: 1 and 1.0, or two dicts in another order, are not the same value
    (papermill would inject, and MLflow log, something else)."""
    return type(a) is type(b) and repr(a) == repr(b)


def test_the_experiments_are_found() -> None:
    names = {p.stem for p in SHIPPED}
    assert {"01_prefloor_recall", "03_gate_roc", "05_gate_signals"} <= names
    assert "03_gate_roc_rrf_hybrid" in names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_spec_parameters_differ_from_the_notebook_defaults(path: Path) -> None:
    """A spec parameter equal to the notebook's default says nothing: the notebook already runs
    with it. Each file is checked for the keys it sets itself (an extending spec's own)."""
    spec = load_spec(path)
    defaults = spec.notebook_defaults()
    own = yaml.safe_load(path.read_text(encoding="utf-8")).get("parameters") or {}
    redundant = [
        key for key, value in own.items() if key in defaults and same_value(defaults[key], value)
    ]
    assert not redundant, (
        f"{path.relative_to(paths.ROOT)}: parameters {redundant} equal the defaults in the "
        f"parameters cell of {spec.notebook.name}; remove them from the spec"
    )


def probe_spec(parameters: dict[str, Any]) -> ExperimentSpec:
    """A spec over a notebook declaring LIMIT = 250, NAMES = ["a"], a computed WHEN and the
    runner's RUN_DIR and PIPELINE."""
    declared = {
        "RUN_DIR": NotebookParam("RUN_DIR", "None", None),
        "PIPELINE": NotebookParam("PIPELINE", "{}", dict),
        "LIMIT": NotebookParam("LIMIT", "250", int),
        "NAMES": NotebookParam("NAMES", '["a"]', list),
        "WHEN": NotebookParam("WHEN", "time.time()", None),
    }
    tiny = {"tiny": {"LIMIT": 6}}
    return ExperimentSpec(
        "x", Path("nb.ipynb"), "", parameters, {}, tiny, {}, notebook_params=declared
    )


def test_effective_parameters_overlay_the_notebook_defaults() -> None:
    spec = probe_spec({"NAMES": ["b"]})
    assert spec.notebook_defaults() == {"LIMIT": 250, "NAMES": ["a"]}  # no RUN_DIR, no WHEN
    assert spec.resolved("tiny", {}) == {"NAMES": ["b"], "LIMIT": 6}
    assert spec.effective(spec.resolved("tiny", {})) == {"LIMIT": 6, "NAMES": ["b"]}
    assert spec.effective(spec.resolved(None, {"LIMIT": 1})) == {"LIMIT": 1, "NAMES": ["b"]}
    assert probe_spec({}).effective(probe_spec({}).resolved(None, {})) == {
        "LIMIT": 250,
        "NAMES": ["a"],
    }


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_notebook_parameter_with_a_literal_default_is_logged(path: Path) -> None:
    spec = load_spec(path)
    for profile in (None, *spec.profiles):
        logged = spec.effective(spec.resolved(profile, {}))
        literal = {n for n, p in spec.notebook_params.items() if p.literal()[0]}
        assert set(logged) == literal - {"RUN_DIR", "PIPELINE"}


def test_an_extends_path_with_a_nul_byte_is_one_refusal(tmp_path: Path) -> None:
    """A NUL byte cannot name a file: the spec is refused in one line, not a ValueError from
    the path library (found by the spec fuzz test)."""
    path = tmp_path / "nul.yaml"
    path.write_text('name: x\nextends: "a\\0b"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="extends must be the path of a spec"):
        load_spec(path)
