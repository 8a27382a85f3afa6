"""PipelineConfig: the design defaults (DESIGN), the production file (read_production, production,
named, resolve), validation, YAML round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from citegate.core.config import (
    COLLECTION_KEYS,
    DESIGN,
    LANGUAGES,
    PipelineConfig,
    load_config,
    save_config,
)
from citegate.core.config_files import PRODUCTION, named, production, read_production, resolve
from citegate.core.errors import ConfigError
from citegate.core.text import script_language

DIGEST = "ab" * 32
RU = {"sufficient_score": 0.80, "good_enough_score": 0.82, "bail_out_score": 0.75}


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
    assert prod.sufficient_score == doc["pipeline"]["sufficient_score"]
    assert prod.gate == doc["pipeline"]["gate"] and prod != DESIGN  # the file, not the defaults
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
        "edited": False,
    }
    plain = tmp_path / "plain.yaml"
    save_config(DESIGN.replace(sufficient_score=0.7), plain)
    assert named(str(plain)).describe() == {
        "source": str(plain),
        "version": None,
        "source_run": None,
        "edited": False,
    }
    edited = prod.with_config(prod.config.replace(extract_sentences=2))
    assert edited.edited and "with values changed after loading" in edited.label()
    assert not prod.with_config(prod.config).edited
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


# ---------------------------------------------------------------- learned gate, per-language thresholds


def test_production_without_the_new_fields_loads_with_their_empty_defaults() -> None:
    old = (
        Path(__file__).parents[1] / "fixtures" / "production_coverage.yaml"
    )  # version 2, no gate model
    doc = yaml.safe_load(old.read_text(encoding="utf-8"))
    new = {"gate_model", "gate_model_digest", "language_thresholds", "reranker_model"}
    assert not new & set(doc["pipeline"])
    prod = production(old)
    assert (prod.gate_model, prod.gate_model_digest, prod.language_thresholds) == ("", "", {})
    assert (prod.reranker_model, prod.reranker_model_digest) == ("", "")
    assert (
        prod.thresholds("ru")
        == prod.thresholds(None)
        == {
            "sufficient_score": doc["pipeline"]["sufficient_score"],
            "good_enough_score": doc["pipeline"]["good_enough_score"],
            "bail_out_score": doc["pipeline"]["bail_out_score"],
        }
    )


def test_language_thresholds_override_only_their_language(tmp_path: Path) -> None:
    c = PipelineConfig(
        sufficient_score=0.88, good_enough_score=0.89, bail_out_score=0.82,
        language_thresholds={"ru": {"sufficient_score": 0.80, "bail_out_score": 0.75}},
    )  # fmt: skip
    assert c.thresholds("ru") == {
        "sufficient_score": 0.80,
        "good_enough_score": 0.89,
        "bail_out_score": 0.75,
    }
    assert c.thresholds("en") == c.thresholds("hi") == c.thresholds(None) == c.thresholds("xx")
    assert c.thresholds("en")["sufficient_score"] == 0.88


def test_new_fields_round_trip_through_yaml_replace_and_resolve(tmp_path: Path) -> None:
    c = PipelineConfig(
        gate="learned",
        gate_model="models/gate-abababababab.json",
        gate_model_digest=DIGEST,
        language_thresholds={"ru": {"bail_out_score": 0.3, "sufficient_score": 0.5}},
    )
    save_config(c, tmp_path / "c.yaml")
    back = load_config(tmp_path / "c.yaml")
    assert back == c and back.to_dict() == c.to_dict()
    # canonical order: inner keys as LANGUAGE_THRESHOLD_KEYS, values floats
    assert list(back.to_dict()["language_thresholds"]["ru"]) == [
        "sufficient_score",
        "bail_out_score",
    ]
    assert DESIGN.replace(**c.to_dict()) == c
    assert named(str(tmp_path / "c.yaml")).config == c
    assert resolve(str(tmp_path / "c.yaml"), {"language_thresholds": {}}).language_thresholds == {}
    assert PipelineConfig.from_dict({"language_thresholds": None}) == DESIGN
    ints = PipelineConfig.from_dict({"language_thresholds": {"en": {"sufficient_score": 1}}})
    assert ints.language_thresholds == {"en": {"sufficient_score": 1.0}}


def test_new_fields_are_replay_only_and_hashable() -> None:
    c = production()
    d = c.replace(language_thresholds={"ru": RU}, gate_model="m.json", gate_model_digest=DIGEST)
    assert d.collection_key() == c.collection_key()
    assert not {"gate_model", "gate_model_digest", "language_thresholds"} & set(COLLECTION_KEYS)
    ru_only = c.replace(language_thresholds={"ru": RU})
    assert ru_only != c and hash(ru_only) == hash(c)  # the dict is left out of the hash only
    assert {d: 1}[DESIGN.replace(**d.to_dict())] == 1


def test_known_languages_are_what_script_language_tells() -> None:
    assert {script_language(t) for t in ("What is yoga?", "Что такое йога?", "योग क्या है?")} == set(
        LANGUAGES
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"gate": "learnt"}, "gate must be one of coverage, two_scale, learned"),
        ({"gate": "learned", "gate_model_digest": DIGEST}, "needs gate_model "),
        ({"gate": "learned", "gate_model": "m.json"}, "needs gate_model_digest"),
        (
            {
                "gate": "learned",
                "gate_model": "m.json",
                "gate_model_digest": DIGEST,
                "arm": "rrf_hybrid",
            },
            "learned gate needs the production arm",
        ),  # fmt: skip
        ({"gate_model_digest": "ABC"}, "sha256 hex digest"),
        ({"gate_model": 3}, "gate_model must be a string"),
        ({"language_thresholds": [0.8]}, "language_thresholds must be a mapping"),
        ({"language_thresholds": {"de": {}}}, "unknown language 'de'"),
        ({"language_thresholds": {"ru": 0.8}}, r"language_thresholds\.ru must be a mapping"),
        ({"language_thresholds": {"ru": {"sufficient": 0.8}}}, "unknown key 'sufficient'"),
        (
            {"language_thresholds": {"ru": {"sufficient_score": 1.2}}},
            r"ru\.sufficient_score must be in",
        ),
        ({"language_thresholds": {"ru": {"bail_out_score": True}}}, "must be a number"),
        ({"language_thresholds": {"ru": {"bail_out_score": 0.6}}}, "ru: bail_out_score must not"),
    ],
)
def test_bad_gate_and_language_values_are_clear_errors(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PipelineConfig.from_dict(data)


def test_a_stale_model_file_does_not_block_switching_the_gate_back() -> None:
    learned = PipelineConfig(gate="learned", gate_model="m.json", gate_model_digest=DIGEST)
    assert learned.replace(gate="coverage").gate_model == "m.json"  # ignored unless learned
