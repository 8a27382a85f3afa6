"""PipelineConfig: production defaults, validation, YAML round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from citegate.core.config import PipelineConfig, load_config, save_config
from citegate.core.errors import ConfigError


def test_defaults_are_the_design_numbers() -> None:
    c = PipelineConfig()
    assert (c.pre_floor, c.cap, c.rerank_top_k) == (0.18, 60, 16)
    assert (c.reserve_verses, c.reserve_library, c.reserve_floor) == (2, 2, 0.40)
    assert (c.sufficient_score, c.sufficient_lectures, c.good_enough_score, c.bail_out_score) == (
        0.55,
        2,
        0.65,
        0.40,
    )
    assert (c.max_fanout_rounds, c.fallback_admission) == (2, 0.5)


def test_yaml_round_trip(tmp_path: Path) -> None:
    c = PipelineConfig(pre_floor=0.3, corpora=("gita", "xquad"))
    save_config(c, tmp_path / "c.yaml")
    assert load_config(tmp_path / "c.yaml") == c


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"pre_flor": 0.2}, "unknown key"),
        ({"pre_floor": 1.5}, "pre_floor must be in"),
        ({"cap": 0}, "cap must be a positive"),
        ({"cap": 2.5}, "cap must be an integer"),
        ({"pre_floor": "high"}, "pre_floor must be a number"),
        ({"max_fanout_rounds": 3}, "max_fanout_rounds"),
        ({"bail_out_score": 0.6}, "bail_out_score must not exceed"),
        ({"enable_corpus_fallback": "yes"}, "true/false"),
    ],
)
def test_bad_values_are_clear_errors(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PipelineConfig.from_dict(data)


def test_bad_yaml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("pre_floor: [", encoding="utf-8")
    with pytest.raises(ConfigError, match="c.yaml"):
        load_config(tmp_path / "c.yaml")


def test_missing_config_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read the config file"):
        load_config(missing)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path)  # a folder


def test_null_pipeline_block_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("pipeline:\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="c.yaml: expected a mapping"):
        load_config(tmp_path / "c.yaml")
