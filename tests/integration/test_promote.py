"""Promotion: gated by guard metrics, versioned in the MLflow registry, reversible byte for byte."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import psycopg
import pytest
import yaml
from conftest import make_verdict

from citegate.cli import main
from citegate.core.config import PipelineConfig, save_config
from citegate.core.config_files import accepted_metrics, read_production
from citegate.core.errors import ConfigError
from citegate.core.verdicts import write_verdict
from citegate.evaluation import metrics as M
from citegate.models.gate_model import LearnedGate
from citegate.models.llm_server import LOCAL_MODEL_ID
from citegate.models.ltr.features import FEATURE_NAMES
from citegate.models.ltr.fit import model_factories
from citegate.models.ltr.model import LTRReranker
from citegate.store import load_production_config
from citegate.tracking import promote as P
from citegate.tracking.promote import guards as promote_guards
from citegate.tracking.promote import production_file, registry
from citegate.tracking.promote.report import describe_metric, render


@pytest.fixture()
def env(promote_env: Path) -> Path:
    """The shared promotion setup (tests/conftest.py `promote_env`): the production copy."""
    return promote_env


def crafted_run(
    tmp_path: Path,
    gate: LearnedGate | None = None,
    why: dict[str, object] | None = None,
    artifacts: Path | None = None,
    tags: dict[str, str] | None = None,
    **changes: object,
) -> str:
    """An MLflow run carrying a recommended_config.yaml, like notebook 03 leaves; with `gate`,
    also gate_model.json and a config naming it (as experiment 05 leaves), with `why` a
    recommendation.json; tagged FINISHED as `citegate run` tags a completed notebook (`tags`
    replace or add tags)."""
    tags = {"status": "FINISHED", **(tags or {})}
    import mlflow

    from citegate.tracking.runner import tracking_uri

    mlflow.set_tracking_uri(tracking_uri())
    folder = tmp_path / f"art-{len(list(tmp_path.glob('art-*')))}"
    if artifacts is not None:
        shutil.copytree(artifacts, folder)
    folder.mkdir(exist_ok=True)
    if gate is not None:
        digest = gate.save(folder / "gate_model.json")
        changes = {"gate": "learned", "gate_model": "gate_model.json", "gate_model_digest": digest}
    if why is not None:
        (folder / "recommendation.json").write_text(json.dumps(why), encoding="utf-8")
    cfg = PipelineConfig.from_dict(read_production(production_file.PRODUCTION)["pipeline"]).replace(
        **changes
    )
    save_config(cfg, folder / "recommended_config.yaml")
    with mlflow.start_run() as run:
        mlflow.set_tags({"experiment": "03_gate_roc", "git_commit": "abc123", **tags})
        mlflow.log_artifacts(str(folder))
    return run.info.run_id


@pytest.mark.db
def test_accept_refuse_force_and_rollback(env: Path, tmp_path: Path) -> None:
    original = env.read_bytes()
    start = read_production(env)["version"]
    harmless = P.promote(crafted_run(tmp_path, fallback_admission=0.55))
    assert harmless.accepted and not harmless.forced
    assert [c[0] for c in harmless.changes] == ["fallback_admission"]
    after_first = env.read_bytes()
    doc = read_production(env)
    assert doc["version"] == start + 1
    assert doc["pipeline"]["fallback_admission"] == 0.55
    assert doc["provenance"]["source_run"] and "recall_at_16" in doc["accepted_on"]
    assert {"false_answer_rate.out_of_corpus", "gate_auroc.out_of_scope"} <= set(doc["accepted_on"])
    assert "false_answer_rate" not in yaml.safe_load(env.read_text(encoding="utf-8"))["accepted_on"]

    harmful = P.promote(crafted_run(tmp_path, pre_floor=0.99))
    assert not harmful.accepted
    assert {g.metric: ok for g, ok in harmful.guards}["recall_at_16"] is False
    assert env.read_bytes() == after_first  # a refused promotion writes nothing

    with pytest.raises(ConfigError, match="--reason"):
        P.promote(crafted_run(tmp_path, pre_floor=0.99), force=True)
    forced = P.promote(crafted_run(tmp_path, pre_floor=0.99), force=True, reason="test override")
    assert forced.accepted and forced.forced
    assert read_production(env)["provenance"]["forced"] is True

    client = registry._client()
    prod_v = client.get_model_version_by_alias(P.REGISTERED_NAME, "production").version
    prev_v = client.get_model_version_by_alias(P.REGISTERED_NAME, "previous").version
    assert int(prod_v) > int(prev_v)
    P.rollback()
    assert env.read_bytes() == after_first
    assert client.get_model_version_by_alias(P.REGISTERED_NAME, "production").version == prev_v
    P.rollback()  # and forward again
    assert client.get_model_version_by_alias(P.REGISTERED_NAME, "production").version == prod_v
    assert original != after_first


@pytest.mark.db
def test_provenance_names_the_reranker_the_recommendation_was_measured_with(
    env: Path, tmp_path: Path
) -> None:
    """A recommended arm (notebook 01) ranked with its own config's reranker, not the run's main
    one (an arm that ranked with LTR in a run whose main reranker is `none` is recorded as LTR); a
    run without an arm keeps its own tag."""
    llm = "llm/smollm2-135m-yes-prob"
    arm = crafted_run(tmp_path, why={"arm": "llm_rerank"}, tags={"reranker": "none"}, reranker=llm)
    assert registry.recommended_from_run(arm).facts["run_reranker"] == llm
    plain = crafted_run(tmp_path, tags={"reranker": "none"})
    assert registry.recommended_from_run(plain).facts["run_reranker"] == "none"


def cosine_gate(cosine: float) -> LearnedGate:
    """A learned gate over max cosine alone that answers exactly when max cosine ≥ `cosine`
    (p = logistic((max cosine − 0.8) / 0.05), threshold p at `cosine`)."""
    return LearnedGate(
        features=("max_cosine",),
        language_stats={"*": (0.8, 0.05)},
        mean=(0.8,),
        scale=(0.05,),
        coef=(1.0,),
        intercept=0.0,
        threshold=1 / (1 + math.exp(-(cosine - 0.8) / 0.05)),
        certificate={"alpha": 0.05, "delta": 0.05, "n_neg": 200, "bound": 0.031},
        trained_on={"run": "hand-set coefficients (test)"},
    )


CERTIFIED = {
    "certified": {
        "alpha": 0.05,
        "delta": 0.05,
        "out_of_corpus": {"n_neg": 200, "bound": 0.031},
        "out_of_scope": {"n_neg": 250, "bound": 0.012},
    }
}


@pytest.mark.db
def test_a_learned_gate_is_promoted_with_its_model_and_answers_in_ask(
    env: Path, tmp_path: Path, demo: psycopg.Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    before = env.read_bytes()
    prod = read_production(env)["pipeline"]
    # Answers only where production's coverage gate also answers (max cosine ≥ good_enough, the
    # higher threshold) and ranks questions as max cosine does: no guard can get worse.
    top = max(prod["sufficient_score"], prod["good_enough_score"])
    gate = cosine_gate(top)
    digest = gate.save(tmp_path / "expected.json")
    decision = P.promote(crafted_run(tmp_path, gate, CERTIFIED))
    assert decision.accepted and not decision.forced, P.summary(decision)
    assert [c.ok for c in decision.certificate] == [True, True]
    assert "certificate out_of_corpus: bound 0.0310 ≤ alpha 0.05" in P.summary(decision)
    doc = read_production(env)["pipeline"]
    assert doc["gate"] == "learned" and doc["gate_model_digest"] == digest
    assert doc["gate_model"] == f"models/gate-{digest[:12]}.json"
    model_file = env.parent / doc["gate_model"]
    assert model_file.read_bytes() == (tmp_path / "expected.json").read_bytes()
    assert load_production_config(env, demo).gate == "learned"

    question = "What does Chapter 2, Verse 13 say about the soul?"
    ask = ["ask", question, "--config", str(env), "--corpus", "gita-split"]
    assert main([*ask, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gate"]["kind"] == "learned"
    p = data["gate"]["signal"]
    assert p == pytest.approx(1 / (1 + math.exp(-(data["rounds"][-1]["max_score"] - 0.8) / 0.05)))
    assert data["decision"] == ("answer" if p >= gate.threshold else "insufficient")
    assert data["gate"]["reason"].startswith(f"p(answerable)={p:.2f} ")
    assert main(ask) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == f"gate: learned: {data['gate']['reason']}"  # config, question, decision

    model_file.write_bytes(
        model_file.read_bytes().replace(b'"coef": [\n    1.0', b'"coef": [\n    9.0')
    )
    with pytest.raises(ConfigError, match=f"{doc['gate_model']}: gate model digest"):
        load_production_config(env, demo)
    assert main(ask) == 2  # ask refuses the altered model too, in one line
    assert "gate model digest" in capsys.readouterr().err

    P.rollback()  # the previous (coverage) file is back byte for byte; the model file stays
    assert env.read_bytes() == before and model_file.exists()


@pytest.mark.db
def test_a_failing_certificate_refuses_the_promotion_naming_the_kind(
    env: Path, tmp_path: Path
) -> None:
    before = env.read_bytes()
    why = json.loads(json.dumps(CERTIFIED))
    why["certified"]["out_of_corpus"]["bound"] = 0.074
    run = crafted_run(tmp_path, cosine_gate(0.95), why)
    decision = P.promote(run, force=True, reason="the certificate cannot be forced")
    assert not decision.accepted and not decision.forced
    assert [c.kind for c in decision.certificate_fails] == ["out_of_corpus"]
    text = P.summary(decision)
    assert "certificate out_of_corpus: bound 0.0740 > alpha 0.05" in text
    assert "exceeds alpha for out_of_corpus" in text
    assert json.loads(P.as_json(decision))["certificate"][0]["ok"] is False
    page = render(decision, {"source_run": run})
    assert "Certified false-answer bounds" in page and "<td>out_of_corpus</td>" in page
    assert env.read_bytes() == before and not (env.parent / "models").exists()


def random_ltr() -> LTRReranker:
    """An LTR model fitted on random pair features (its ranking is noise: promotion is forced)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, len(FEATURE_NAMES)))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    return LTRReranker("default", model_factories()["logreg"]().fit(X, y), {"note": "test"})


@pytest.mark.db
def test_an_ltr_reranker_is_promoted_with_its_model_file(
    env: Path, tmp_path: Path, demo: psycopg.Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    before = env.read_bytes()
    ltr = random_ltr()
    folder = tmp_path / "ltr"
    folder.mkdir()
    (folder / "ltr_model.json").write_bytes(ltr.to_bytes())
    carried = {
        "reranker": "ltr/default",
        "reranker_model": "ltr_model.json",
        "reranker_model_digest": ltr.digest,
    }
    with pytest.raises(ConfigError, match="carries no model file"):
        P.promote(crafted_run(tmp_path, reranker="ltr/default"), dry_run=True)
    run = crafted_run(tmp_path, artifacts=folder, **carried)
    dry = P.promote(run, dry_run=True, force=True, reason="test")
    assert ("reranker", "none", "ltr/default") in dry.changes
    assert not (env.parent / "models" / f"ltr-{ltr.version}.json").exists()  # a dry run writes none
    decision = P.promote(run, force=True, reason="random ranking: test only")
    assert decision.accepted
    doc = read_production(env)["pipeline"]
    assert doc["reranker_model"] == f"models/ltr-{ltr.version}.json"
    assert doc["reranker_model_digest"] == ltr.digest
    model_file = env.parent / doc["reranker_model"]
    assert model_file.read_bytes() == ltr.to_bytes()
    assert load_production_config(env, demo).reranker_model == doc["reranker_model"]
    ask = ["ask", "What does Chapter 2, Verse 13 say?", "--config", str(env), "--corpus", "gita"]
    assert main([*ask, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["source"] == str(env)
    model_file.write_bytes(model_file.read_bytes().replace(b'"intercept": ', b'"intercept": 1'))
    with pytest.raises(ConfigError, match="LTR model digest"):
        load_production_config(env, demo)
    assert main(ask) == 2 and "LTR model digest" in capsys.readouterr().err
    model_file.unlink()
    with pytest.raises(ConfigError, match="LTR reranker's model file is missing"):
        load_production_config(env, demo)
    P.rollback()  # the previous file runs no LTR model: restored byte for byte
    assert env.read_bytes() == before


@pytest.mark.db
def test_unknown_key_is_refused(env: Path) -> None:
    doc = yaml.safe_load(env.read_text(encoding="utf-8"))
    doc["pipeline"]["pre_flor"] = 0.2
    env.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key"):
        load_production_config(env)


@pytest.mark.db
def test_mismatched_embedder_is_refused(env: Path, demo: psycopg.Connection) -> None:
    doc = yaml.safe_load(env.read_text(encoding="utf-8"))
    assert load_production_config(env, demo).embedder == doc["pipeline"]["embedder"]
    doc["pipeline"]["embedder"] = "openai/text-embedding-3-small"
    env.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ConfigError, match="differs from the corpus embedder"):
        load_production_config(env, demo)


def test_guard_rules() -> None:
    lower = P.Guard("false_answer_rate", "lower", 0.02)
    assert lower.passes(0.11, 0.10) and not lower.passes(0.13, 0.10)
    higher = P.Guard("recall_at_16", "higher", 0.02)
    assert higher.passes(0.79, 0.80) and not higher.passes(0.77, 0.80)


# ---------------------------------------------------------------- the pure metric step


def _rows(
    label: str, n: int, answered: int, score: float, lang: str = "en", tag: str = ""
) -> list[P.EvalRow]:
    """n rows of one label, the first `answered` answered; one group per row unless `tag`."""
    gold = True if label == "answerable" else None
    wrong = False if label == "answerable" else None  # every answer cites its gold source
    return [
        P.EvalRow(
            label, lang, tag or f"{label}-{lang}-{i}", i < answered, score + i * 1e-3, gold, wrong
        )
        for i in range(n)
    ]


def test_false_answer_rates_are_per_kind_not_pooled() -> None:
    rows = (
        _rows("answerable", 40, 30, 0.8)
        + _rows("out_of_corpus", 40, 12, 0.7)
        + _rows("out_of_scope", 160, 0, 0.2)
    )
    out = P.compute_metrics(rows, n_boot=20)
    assert out["false_answer_rate.out_of_corpus"]["value"] == pytest.approx(0.3)
    assert out["false_answer_rate.out_of_scope"]["value"] == 0.0
    assert out["false_answer_rate.out_of_scope"]["high"] > 0  # Wilson: 0 of 160 is not a point
    assert out["false_answer_rate.pooled"]["value"] == pytest.approx(12 / 200)
    assert "false_answer_rate" not in out and "gate_auroc" not in out
    assert out["answer_rate"]["value"] == 0.75 and out["answer_rate"]["n"] == 40
    assert out["gate_auroc.out_of_scope"]["value"] == 1.0
    assert out["gate_auroc.out_of_corpus"]["value"] == 1.0
    _, guards = P.load_guards()
    assert {g.metric for g in guards} <= set(out)  # every shipped guard is measured


def test_metrics_per_language_are_reported() -> None:
    rows = (
        _rows("answerable", 10, 10, 0.8, "en")
        + _rows("answerable", 10, 2, 0.8, "ru")
        + _rows("out_of_corpus", 10, 5, 0.7, "ru")
    )
    out = P.compute_metrics(rows, n_boot=20)
    assert out["answer_rate.en"]["value"] == 1.0 and out["answer_rate.ru"]["value"] == 0.2
    assert out["false_answer_rate.out_of_corpus.ru"]["value"] == 0.5
    assert "recall_at_16.ru" in out and "gate_auroc.out_of_scope" not in out
    assert "language ru" in describe_metric("answer_rate.ru")


def test_gate_auroc_interval_resamples_question_groups() -> None:
    rng = np.random.default_rng(3)
    rows = []
    for g in range(30):  # 30 groups of 8 near-identical questions
        label = "answerable" if g % 2 else "out_of_corpus"
        base = rng.normal(0.6 + 0.05 * (g % 2), 0.05)
        rows += [
            P.EvalRow(label, "en", f"g{g}", True, base + rng.normal(0, 1e-4), None)
            for _ in range(8)
        ]
    auc = P.compute_metrics(rows, n_boot=300)["gate_auroc.out_of_corpus"]
    y = [r.label == "answerable" for r in rows]
    scores = [r.max_score for r in rows]
    clustered = M.auroc_ci(scores, y, n_boot=300, groups=[r.group for r in rows])
    rowwise = M.auroc_ci(scores, y, n_boot=300)
    assert (auc["low"], auc["high"]) == (clustered.lower, clustered.upper)
    assert auc["high"] - auc["low"] > 1.5 * (rowwise.upper - rowwise.lower)


def test_a_guard_on_an_unmeasured_metric_is_a_config_error() -> None:
    measured = P.compute_metrics(_rows("answerable", 5, 3, 0.8) + _rows("out_of_corpus", 5, 1, 0.5))
    guard = P.Guard("false_answer_rate.out_of_scope", "lower", 0.02)
    with pytest.raises(ConfigError, match="false_answer_rate.out_of_scope.*not measured"):
        P.decide([guard], measured, measured, False, "")


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("false_answer_rate", "must name a kind of negative"),
        ("gate_auroc", "must name a kind of negative"),
        ("gate_auroc.out_of_corpse", "must name a kind of negative"),
        ("precision", "unknown"),
    ],
)
def test_guards_file_names_what_it_measures(tmp_path: Path, metric: str, message: str) -> None:
    doc = yaml.safe_load(promote_guards.GUARDS.read_text(encoding="utf-8"))
    doc["guards"].append({"metric": metric, "better": "lower", "tolerance": 0.1})
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        P.load_guards(tmp_path / "g.yaml")


def test_summary_and_report_show_every_metric_with_what_it_is() -> None:
    rows = _rows("answerable", 8, 6, 0.8) + _rows("out_of_corpus", 8, 2, 0.5)
    rows += _rows("out_of_scope", 8, 0, 0.1)
    measured = P.compute_metrics(rows, n_boot=20)
    _, guards = P.load_guards()
    accepted, results = P.decide(guards, measured, measured, False, "")
    decision = P.PromotionDecision(accepted, False, "", [], measured, measured, results)
    text = P.summary(decision)
    assert "false_answer_rate.out_of_corpus " in text and "false_answer_rate.pooled" in text
    assert "(reported, not guarded)" in text and "Wilson" in text
    page = render(decision, {"source_run": "x"})
    assert "share of out_of_corpus questions the gate answers" in page
    assert "answerable vs out_of_scope" in page
    assert "share of answerable questions answered citing no gold source" in page


def test_a_new_production_file_holds_per_kind_names() -> None:
    measured = P.compute_metrics(_rows("answerable", 5, 3, 0.8) + _rows("out_of_corpus", 5, 1, 0.5))
    block = P.accepted_on_block(measured)
    assert block["false_answer_rate.out_of_corpus"]["n"] == 5
    text = P.render_production(PipelineConfig(), {"source_run": "x"}, block, 3)
    assert "false_answer_rate.out_of_corpus:" in text


# ---------------------------------------------------------------- reading the production file


def _write(tmp_path: Path, **changes: object) -> Path:
    doc = yaml.safe_load(production_file.PRODUCTION.read_text(encoding="utf-8"))
    doc.update(changes)
    for k in [k for k, v in changes.items() if v is _DROP]:
        del doc[k]
    path = tmp_path / "production.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


_DROP = object()


def test_version_2_file_reads_with_pooled_names_made_explicit() -> None:
    doc = read_production(production_file.PRODUCTION)
    if (
        "false_answer_rate"
        in yaml.safe_load(production_file.PRODUCTION.read_text(encoding="utf-8"))["accepted_on"]
    ):
        assert "false_answer_rate.pooled" in doc["accepted_on"]
        assert "gate_auroc.pooled" in doc["accepted_on"]
    assert "false_answer_rate" not in doc["accepted_on"] and "gate_auroc" not in doc["accepted_on"]
    legacy = {"false_answer_rate": 1, "gate_auroc": 2, "recall_at_16": 3}
    assert accepted_metrics(legacy) == {
        "false_answer_rate.pooled": 1,
        "gate_auroc.pooled": 2,
        "recall_at_16": 3,
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pipelines": {"pre_floor": 0.2}}, r"unknown top-level key\(s\) \['pipelines'\]"),
        ({"version": "two"}, "version must be a positive integer, got 'two'"),
        ({"version": 0}, "version must be a positive integer"),
        ({"version": True}, "version must be a positive integer"),
        ({"pipeline": {}}, "pipeline must be a non-empty mapping"),
        ({"pipeline": None}, "pipeline must be a non-empty mapping"),
        ({"provenance": _DROP}, r"missing key\(s\) \['provenance'\]"),
    ],
)
def test_production_file_refuses_what_it_cannot_mean(
    tmp_path: Path, changes: dict, message: str
) -> None:
    path = _write(tmp_path, **changes)
    with pytest.raises(ConfigError, match=message) as err:
        read_production(path)
    assert str(path) in str(err.value)
    with pytest.raises(ConfigError, match=message):
        load_production_config(path)  # refused before any database is touched


@pytest.mark.db
@pytest.mark.parametrize(
    ("tags", "needle"),
    [
        ({"status": "FAILED", "error": "KeyError: 'labels'"}, "its notebook did not complete"),
        ({"check": "FAIL"}, "its expected-metric check FAILED"),
        ({"status": ""}, "status tag ''"),
    ],
)
def test_a_failed_run_is_never_promoted_even_forced(
    env: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    tags: dict[str, str],
    needle: str,
) -> None:
    before = env.read_bytes()
    run = crafted_run(tmp_path, tags=tags, fallback_admission=0.55)
    with pytest.raises(ConfigError, match="--force does not override"):
        P.promote(run, force=True, reason="try to force a failed run")
    code = main(["promote", run, "--force", "--reason", "try to force a failed run"])
    err = capsys.readouterr().err
    ours = [line for line in err.splitlines() if "mlflow" not in line]  # mlflow logs its setup
    assert code == 2 and needle in err and len(ours) == 1 and "Traceback" not in err
    assert env.read_bytes() == before


@pytest.mark.db
def test_a_run_failed_in_mlflow_is_never_promoted(env: Path, tmp_path: Path) -> None:
    import mlflow

    run = crafted_run(tmp_path, fallback_admission=0.55)
    mlflow.MlflowClient().set_terminated(run, status="FAILED")
    with pytest.raises(ConfigError, match="its MLflow status is FAILED"):
        P.promote(run, force=True, reason="try")


@pytest.mark.db
def test_a_promotion_after_a_rollback_never_reuses_a_version_number(
    env: Path, tmp_path: Path
) -> None:
    start = read_production(env)["version"]
    assert P.promote(crafted_run(tmp_path, fallback_admission=0.55)).accepted
    assert read_production(env)["version"] == start + 1
    P.rollback()
    assert read_production(env)["version"] == start
    assert P.promote(crafted_run(tmp_path, fallback_admission=0.56)).accepted
    assert read_production(env)["version"] == start + 2  # not a second, different "start + 1"


@pytest.mark.db
def test_an_llm_planner_without_a_passing_verdict_is_never_promoted(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A service would refuse the file (`Service.open`), so promote refuses the run, forced or
    not, before evaluating anything; with the planner's verdict named it is evaluated as usual."""
    before = env.read_bytes()
    run = crafted_run(tmp_path, planner="llm")
    with pytest.raises(ConfigError, match="planner is 'llm' but planner_bar names no verdict"):
        P.promote(run, force=True, reason="try to force an unmeasured planner")
    code = main(["promote", run, "--dry-run"])
    err = capsys.readouterr().err
    ours = [line for line in err.splitlines() if line.startswith("citegate")]  # not mlflow's
    assert code == 2 and len(ours) == 1 and "planner_bar" in ours[0] and "Traceback" not in err
    assert env.read_bytes() == before
    failed = make_verdict("planner", LOCAL_MODEL_ID, passed=False)
    named = f"models/{write_verdict(env.parent / 'models', failed).name}"
    with pytest.raises(ConfigError, match="names a verdict smollm2.* failed on the planner"):
        P.promote(crafted_run(tmp_path, planner="llm", planner_bar=named), dry_run=True)
    passing = make_verdict("planner", LOCAL_MODEL_ID)
    named = f"models/{write_verdict(env.parent / 'models', passing).name}"
    measured = P.promote(crafted_run(tmp_path, planner="llm", planner_bar=named), dry_run=True)
    assert ("planner", "offline", "llm") in measured.changes


def test_a_model_composer_without_a_passing_verdict_is_never_promoted(
    env: Path, tmp_path: Path
) -> None:
    """A live turn would answer with the extractive composer instead, so the file would not say
    what production does: promote refuses it, forced or not, before evaluating anything."""
    before = env.read_bytes()
    for composer in ("generative", "outline"):
        with pytest.raises(ConfigError, match=f"composer '{composer}' has passed no bar"):
            P.promote(crafted_run(tmp_path, composer=composer), force=True, reason="unmeasured")
    assert env.read_bytes() == before
