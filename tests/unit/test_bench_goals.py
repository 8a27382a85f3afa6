"""The bench's goal file: the shipped one loads, and a missing, misspelt or malformed goal is
refused with the file and the key named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.research.bench.goals import NAMES, Goal, load_goals, score_goals


def shipped() -> dict:
    return yaml.safe_load(paths.BENCH_GOALS.read_text(encoding="utf-8"))


def write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_the_shipped_goals_load_with_every_name() -> None:
    goals = load_goals()
    assert tuple(goals) == NAMES
    assert goals["ingest_over_raw"] == Goal(0.9, lower_is_better=False)
    assert goals["lanes_p50_ms"] == Goal(60.0, lower_is_better=True)
    assert isinstance(goals["replay_over_retrieve"].value, float)


def test_a_missing_goal_is_refused(tmp_path: Path) -> None:
    doc = shipped()
    del doc["recall_at_16"]
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError, match=r"bench\.yaml.*'recall_at_16' is missing"):
        load_goals(path)


def test_a_misspelt_goal_is_refused(tmp_path: Path) -> None:
    doc = shipped()
    doc["recall_at16"] = doc.pop("recall_at_16")
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError, match=r"bench\.yaml.*unknown goal 'recall_at16'"):
        load_goals(path)


@pytest.mark.parametrize(
    "entry",
    [0.98, {"goal": "high", "better": "higher"}, {"goal": 0.98, "better": "more"}, {"goal": 1}],
)
def test_a_malformed_goal_is_refused(tmp_path: Path, entry: object) -> None:
    doc = shipped()
    doc["recall_at_16"] = entry
    with pytest.raises(ConfigError, match=r"bench\.yaml: goal 'recall_at_16'"):
        load_goals(write(tmp_path, doc))


def test_a_latency_goal_is_met_at_or_under_it() -> None:
    res = {
        "ingest": {"ingest_over_raw": 0.95, "inconclusive_because": ""},
        "recall": {"overall": {"recall_at_16": 0.97}, "groups": {}},
        "replay": {"vector_over_retrieve_warm": 1000.0, "vector_equals_scalar": 1.0},
        "retrieve_warm": {"lanes": {"p50_ms": 60.0}},
    }
    g = score_goals(res)
    assert [g[k]["verdict"] for k in g] == ["yes", "no", "yes", "yes", "yes"]
    assert g["replay_over_retrieve"]["goal"] == 1000.0
