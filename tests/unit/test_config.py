"""PipelineConfig: the design defaults (DESIGN), the production file (read_production, production,
named, resolve), validation, YAML round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from citegate.core.config import (
    DESIGN,
    PRODUCTION,
    PipelineConfig,
    load_config,
    named,
    production,
    read_production,
    resolve,
    save_config,
)
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


# ---------------------------------------------------------------- design vs production


def test_design_is_the_dataclass_defaults_and_production_is_the_promoted_file() -> None:
    assert PipelineConfig() == DESIGN and DESIGN.sufficient_score == 0.55
    doc = yaml.safe_load(PRODUCTION.read_text(encoding="utf-8"))
    prod = production()
    assert prod == PipelineConfig.from_dict(doc["pipeline"])
    assert prod.sufficient_score == doc["pipeline"]["sufficient_score"] != DESIGN.sufficient_score
    assert read_production()["version"] == doc["version"]


def test_named_configs_carry_their_source_version_and_run(tmp_path: Path) -> None:
    doc = read_production()
    prod = named("production")
    assert prod.config == production() and prod.source == "production"
    assert (prod.version, prod.source_run) == (doc["version"], doc["provenance"]["source_run"])
    assert (
        f"version {doc['version']}" in prod.label()
        and doc["provenance"]["source_run"] in prod.label()
    )
    design = named("design")
    assert design.config == DESIGN and design.describe() == {
        "source": "design",
        "version": None,
        "source_run": None,
    }
    plain = tmp_path / "plain.yaml"
    save_config(DESIGN.replace(sufficient_score=0.7), plain)
    assert named(str(plain)).describe() == {
        "source": str(plain),
        "version": None,
        "source_run": None,
    }
    assert named(str(plain)).config.sufficient_score == 0.7
    copy = tmp_path / "prod-copy.yaml"
    copy.write_text(PRODUCTION.read_text(encoding="utf-8"), encoding="utf-8")
    assert named(str(copy)).version == doc["version"] and named(str(copy)).config == prod.config


def test_resolve_puts_the_overrides_on_the_named_base() -> None:
    assert resolve("design", {}) == PipelineConfig.from_dict({})  # what the notebooks built before
    assert resolve("design", {"arm": "rrf_hybrid"}) == PipelineConfig(arm="rrf_hybrid")
    assert resolve("production", {"pre_floor": 0.3}) == production().replace(pre_floor=0.3)
    with pytest.raises(ConfigError, match="unknown key"):
        resolve("design", {"pre_flor": 0.3})
    with pytest.raises(ConfigError, match="cannot read the config file"):
        resolve("nowhere.yaml")
