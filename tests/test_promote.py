"""Promotion: gated by guard metrics, versioned in the MLflow registry, reversible byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
import yaml

from citegate import promote as P
from citegate.config import PipelineConfig, save_config
from citegate.errors import ConfigError

pytestmark = [pytest.mark.db]


@pytest.fixture()
def env(tmp_path: Path, demo_db: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DATABASE_URL", demo_db)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    prod = tmp_path / "production.yaml"
    shutil.copy(P.PRODUCTION, prod)
    monkeypatch.setattr(P, "PRODUCTION", prod)
    guards = yaml.safe_load(P.GUARDS.read_text(encoding="utf-8"))
    guards["evaluation"]["limit"] = 6
    (tmp_path / "guards.yaml").write_text(yaml.safe_dump(guards), encoding="utf-8")
    monkeypatch.setattr(P, "GUARDS", tmp_path / "guards.yaml")
    return prod


def crafted_run(tmp_path: Path, **changes: object) -> str:
    """An MLflow run carrying a recommended_config.yaml, like notebook 03 leaves."""
    import mlflow

    from citegate.experiments import tracking_uri

    mlflow.set_tracking_uri(tracking_uri())
    cfg = PipelineConfig.from_dict(P.read_production()["pipeline"]).replace(**changes)
    folder = tmp_path / f"art-{len(list(tmp_path.glob('art-*')))}"
    folder.mkdir()
    save_config(cfg, folder / "recommended_config.yaml")
    with mlflow.start_run() as run:
        mlflow.set_tags({"experiment": "03_gate_roc", "git_commit": "abc123"})
        mlflow.log_artifacts(str(folder))
    return run.info.run_id


def test_accept_refuse_force_and_rollback(env: Path, tmp_path: Path) -> None:
    original = env.read_bytes()
    v0 = P.read_production(env)["version"]
    harmless = P.promote(crafted_run(tmp_path, fallback_admission=0.55))
    assert harmless.accepted and not harmless.forced
    assert [c[0] for c in harmless.changes] == ["fallback_admission"]
    after_first = env.read_bytes()
    doc = P.read_production(env)
    assert doc["version"] == v0 + 1
    assert doc["pipeline"]["fallback_admission"] == 0.55
    assert doc["provenance"]["source_run"] and "recall_at_16" in doc["accepted_on"]

    harmful = P.promote(crafted_run(tmp_path, pre_floor=0.99))
    assert not harmful.accepted
    assert {g.metric: ok for g, ok in harmful.guards}["recall_at_16"] is False
    assert env.read_bytes() == after_first  # a refused promotion writes nothing

    with pytest.raises(ConfigError, match="--reason"):
        P.promote(crafted_run(tmp_path, pre_floor=0.99), force=True)
    forced = P.promote(crafted_run(tmp_path, pre_floor=0.99), force=True, reason="test override")
    assert forced.accepted and forced.forced
    assert P.read_production(env)["provenance"]["forced"] is True

    client = P._client()
    prod_v = client.get_model_version_by_alias(P.REGISTERED_NAME, "production").version
    prev_v = client.get_model_version_by_alias(P.REGISTERED_NAME, "previous").version
    assert int(prod_v) > int(prev_v)
    P.rollback()
    assert env.read_bytes() == after_first
    assert client.get_model_version_by_alias(P.REGISTERED_NAME, "production").version == prev_v
    P.rollback()  # and forward again
    assert client.get_model_version_by_alias(P.REGISTERED_NAME, "production").version == prod_v
    assert original != after_first


def test_unknown_key_is_refused(env: Path) -> None:
    doc = yaml.safe_load(env.read_text(encoding="utf-8"))
    doc["pipeline"]["pre_flor"] = 0.2
    env.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key"):
        P.load_production_config(env)


def test_mismatched_embedder_is_refused(env: Path, demo: psycopg.Connection) -> None:
    doc = yaml.safe_load(env.read_text(encoding="utf-8"))
    assert P.load_production_config(env, demo).embedder == doc["pipeline"]["embedder"]
    doc["pipeline"]["embedder"] = "openai/text-embedding-3-small"
    env.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ConfigError, match="differs from the corpus embedder"):
        P.load_production_config(env, demo)


def test_guard_rules() -> None:
    lower = P.Guard("false_answer_rate", "lower", 0.02)
    assert lower.passes(0.11, 0.10) and not lower.passes(0.13, 0.10)
    higher = P.Guard("recall_at_16", "higher", 0.02)
    assert higher.passes(0.79, 0.80) and not higher.passes(0.77, 0.80)
