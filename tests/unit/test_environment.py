"""environment.yml and pyproject.toml describe one environment."""

from __future__ import annotations

import tomllib

import yaml

from citegate.core import paths


def test_environment_yml_matches_pyproject() -> None:
    project = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]
    pinned = set(project["dependencies"]).union(*project["optional-dependencies"].values())
    env = yaml.safe_load((paths.ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert {p for p in pip if not p.startswith("-e")} == pinned
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert project["requires-python"] == ">=" + python.split("=")[1]
