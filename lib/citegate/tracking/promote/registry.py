"""Deciding and recording a promotion: the run's recommendation read from MLflow, evaluated against
production, written to the production file when accepted, and registered in the MLflow Model
Registry (aliases `production` and `previous`); `rollback` restores the previous file."""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.config import PipelineConfig, load_config
from citegate.core.config_files import read_production
from citegate.core.errors import ConfigError
from citegate.core.redact import safe_mapping
from citegate.core.yamlfile import loads_yaml
from citegate.pipeline.roles import bar_problem, check_bars, unvetted_composer
from citegate.store.production import load_gate, load_reranker
from citegate.tracking.promote import production_file
from citegate.tracking.promote.decision import PromotionDecision, decide
from citegate.tracking.promote.evaluate import certificate_checks, evaluate
from citegate.tracking.promote.guards import load_guards
from citegate.tracking.promote.models import (
    artifact,
    evaluation_config,
    promoted_config,
    run_gate_model,
    run_ltr_model,
)
from citegate.tracking.promote.production_file import accepted_on_block, diff, render_production
from citegate.tracking.promote.report import render
from citegate.tracking.runner import experiment_id, tracking_uri
from citegate.tracking.store import check_store

REGISTERED_NAME = "citegate-pipeline-config"


@dataclass(frozen=True)
class Recommended:
    """What a run recommends: its config, the run's facts, its `recommendation.json` (None when
    the run has none) and, for a learned gate, the model file's bytes (`gate_model.json`)."""

    config: PipelineConfig
    facts: dict[str, Any]
    why: dict[str, Any] | None = None
    gate_model: bytes | None = None
    ltr_model: bytes | None = None  # the LTR reranker's model file, when the config runs one


def check_promotable(run_id: str, status: str, tags: dict[str, str]) -> None:
    """Refuse (`ConfigError`, whatever `--force` says) a run that is not FINISHED in MLflow,
    whose notebook did not complete (the runner's `status` tag is not FINISHED, or it recorded
    an `error`) or whose expected-metric check FAILed: its recommendation may rest on a
    partial or wrong computation."""
    problems = []
    if status != "FINISHED":
        problems.append(f"its MLflow status is {status}")
    if tags.get("status") != "FINISHED":
        problems.append(
            f"its notebook did not complete (status tag {tags.get('status', 'missing')!r}: only "
            "a run made by `citegate run` that finished records FINISHED)"
        )
    if tags.get("error"):
        problems.append(f"it recorded an error: {tags['error'].splitlines()[0][:200]}")
    if tags.get("check") == "FAIL":
        problems.append("its expected-metric check FAILED")
    if problems:
        raise ConfigError(
            f"run {run_id} cannot be promoted: {'; '.join(problems)}; --force does not "
            "override this"
        )


def check_role_bars(run_id: str, cfg: PipelineConfig) -> None:
    """Refuse (`ConfigError`, whatever `--force` says) a recommended config that production
    could not answer with as it says: a role it names with no passing verdict (the llm query
    planner without `planner_bar`, which `Service.open` refuses; a model composer without
    `composer_bar`, which a live turn replaces by the extractive composer), or a bar naming a
    verdict that is not adopted into production's models/ folder, altered, failed, or on another
    role or model than the config runs (`roles.check_bars`)."""
    why = bar_problem(cfg) or unvetted_composer(cfg)
    if not why:
        try:
            check_bars(cfg, production_file.PRODUCTION.parent)
        except ConfigError as exc:
            why = str(exc).splitlines()[0]
    if why:
        raise ConfigError(f"run {run_id} cannot be promoted: {why}; --force does not override this")


def recommended_from_run(run_id: str) -> Recommended:
    """The config a run recommends (its `recommended_config.yaml` artifact), the run's facts, its
    `recommendation.json` and, for gate=learned, the model file the config names (relative to the
    run folder: experiment 05 writes `gate_model.json`), checked against `gate_model_digest`."""
    import mlflow

    _client()  # points mlflow at the project's tracking store
    try:
        run = mlflow.get_run(run_id)
    except Exception as exc:  # noqa: BLE001 - MlflowException for an unknown id
        raise ConfigError(f"no MLflow run {run_id!r} in the tracking store") from exc
    check_promotable(run_id, run.info.status, run.data.tags)
    with tempfile.TemporaryDirectory() as tmp:
        local = artifact(run_id, "recommended_config.yaml", tmp)
        if local is None:
            raise ConfigError(f"run {run_id} has no recommended_config.yaml artifact")
        cfg = load_config(local)
        why_file = artifact(run_id, "recommendation.json", tmp)
        why = _read_json(why_file) if why_file is not None else None
        model = (
            run_gate_model(run_id, cfg, tmp, production_file.PRODUCTION.parent)
            if cfg.gate == "learned"
            else None
        )
        ltr = run_ltr_model(run_id, cfg, tmp, production_file.PRODUCTION.parent)
    facts = {
        "source_run": run_id,
        "experiment": run.data.tags.get("experiment", ""),
        "git_commit": run.data.tags.get("git_commit", "unknown"),
        "corpus_builds": run.data.tags.get("info.corpus_builds", ""),
        "embedder": run.data.tags.get("embedder", cfg.embedder),
        "reranker": cfg.reranker,
        "llm": cfg.llm,
        "run_reranker": _ranked_with(run.data.tags, cfg, why),
    }
    facts["question_sets"] = {d.dataset.name: d.dataset.digest for d in run.inputs.dataset_inputs}
    return Recommended(cfg, facts, why, model, ltr)


def _ranked_with(tags: dict[str, str], cfg: PipelineConfig, why: dict[str, Any] | None) -> str:
    """What the recommendation was measured with: a recommended arm (notebook 01 names it in
    recommendation.json) ranks with its own config's reranker, whatever the run's main one was;
    otherwise the run's own reranker tag."""
    if why is not None and why.get("arm"):
        return cfg.reranker
    return tags.get("reranker", "")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path.name}: not readable JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name}: expected a JSON object")
    return data


def latest_run(experiment: str) -> str:
    """The id of the newest FINISHED top-level run of experiment `experiment` (e.g.
    05_gate_signals); a ConfigError naming it when there is none."""
    client = _client()
    exp = client.get_experiment_by_name(f"citegate/{experiment}")
    runs = [] if exp is None else client.search_runs(
        [exp.experiment_id],
        filter_string="attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=20,
    )  # fmt: skip
    top = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    if not top:
        raise ConfigError(f"no FINISHED run of experiment {experiment!r}: run it first")
    return str(top[0].info.run_id)


def _client() -> Any:
    """An MLflow client on the project's tracking store, refused first when MLflow could not use
    it (`check_store`: a server that is not reachable, a SQLite file that is not a database)."""
    import mlflow

    uri = tracking_uri()
    check_store(uri)
    mlflow.set_tracking_uri(uri)
    return mlflow.MlflowClient()


def _alias(client: Any, alias: str) -> Any | None:
    try:
        return client.get_model_version_by_alias(REGISTERED_NAME, alias)
    except Exception:  # noqa: BLE001 - mlflow raises MlflowException for a missing alias/model
        return None


def _register(client: Any, run: Any, kind: str, tags: dict[str, str]) -> Any:
    """Register the `production/production.yaml` artifact of a promotion run as a version."""
    with contextlib.suppress(Exception):  # mlflow raises if the registered model already exists
        client.create_registered_model(
            REGISTERED_NAME,
            description="citegate PipelineConfig "
            "promoted to production (artifact: production.yaml)",
        )
    return client.create_model_version(
        REGISTERED_NAME,
        source=f"{run.info.artifact_uri}/production",
        run_id=run.info.run_id,
        tags={"kind": kind, **tags},
    )


def _version_text(version: Any) -> str:
    import mlflow

    with tempfile.TemporaryDirectory() as tmp:
        local = mlflow.artifacts.download_artifacts(
            artifact_uri=f"{version.source}/production.yaml", dst_path=tmp
        )
        return Path(local).read_text(encoding="utf-8")


def _promotion_run(
    client: Any,
    kind: str,
    text: str,
    decision: PromotionDecision | None,
    report: str,
    tags: dict[str, str],
) -> Any:
    import mlflow

    exp = experiment_id(mlflow, "promotions")
    with mlflow.start_run(experiment_id=exp, run_name=f"{kind}-{_now()}") as run:
        mlflow.set_tags(safe_mapping({"kind": kind, **tags}))
        if decision is not None:
            mlflow.log_params(
                safe_mapping({f"change.{k}": f"{o} -> {n}" for k, o, n in decision.changes})
            )
            for side, vals in (
                ("candidate", decision.candidate),
                ("production", decision.production),
            ):
                mlflow.log_metrics({f"{side}.{m}": v["value"] for m, v in vals.items()})
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "production").mkdir()
            (Path(tmp) / "production" / "production.yaml").write_text(text, encoding="utf-8")
            (Path(tmp) / "report.html").write_text(report, encoding="utf-8")
            mlflow.log_artifacts(tmp)
        return client.get_run(run.info.run_id)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def _ensure_current_registered(client: Any) -> Any | None:
    """The first promotion registers the file in the repo as the production version it replaces."""
    current = _alias(client, "production")
    if current is None and production_file.PRODUCTION.exists():
        text = production_file.PRODUCTION.read_text(encoding="utf-8")
        run = _promotion_run(
            client,
            "baseline",
            text,
            None,
            "<p>baseline registration</p>",
            {"note": "the production file found in the repository"},
        )
        number = str(loads_yaml(text, production_file.PRODUCTION).get("version", ""))
        current = _register(client, run, "baseline", {"file_version": number})
        client.set_registered_model_alias(REGISTERED_NAME, "production", current.version)
    return current


def promote(
    run_id: str,
    *,
    force: bool = False,
    reason: str = "",
    dry_run: bool = False,
    guards_path: Path | None = None,
) -> PromotionDecision:
    """Evaluate the run's recommended config against production; write and register it if it
    passes the guards (or is forced with a reason) and its certificate holds for every kind.

    Every model file the config needs is promoted with it (the run's `gate_model.json`, and
    `ltr_model.json` when it runs the LTR reranker): the new production file names
    `models/gate-<digest12>.json` and `models/ltr-<digest12>.json` next to itself, with digests."""
    evaluation, guards = load_guards(guards_path)
    rec = recommended_from_run(run_id)
    check_role_bars(run_id, rec.config)
    checks = certificate_checks(rec.why)
    cand_cfg, cand_gate = promoted_config(rec.config, rec.gate_model, rec.ltr_model)
    prod_doc = read_production(production_file.PRODUCTION)
    prod_cfg = PipelineConfig.from_dict(prod_doc["pipeline"])
    cand_m = evaluate(evaluation_config(cand_cfg, rec.ltr_model), evaluation, gate=cand_gate)
    prod_m = evaluate(prod_cfg, evaluation)
    passed, results = decide(guards, cand_m, prod_m, force, reason)
    certified = all(c.ok for c in checks)
    decision = PromotionDecision(
        passed and certified,
        force and certified and not all(ok for _, ok in results),
        reason,
        diff(prod_cfg, cand_cfg),
        cand_m,
        prod_m,
        results,
        checks,
    )
    if dry_run:
        return decision
    models = {cand_cfg.gate_model: rec.gate_model, cand_cfg.reranker_model: rec.ltr_model}
    _record(decision, cand_cfg, rec.facts, int(prod_doc["version"]), models)
    return decision


def next_version(client: Any, current: int) -> int:
    """The version of the next production file: one more than the current file's and than
    every file ever registered (after a rollback the current file is older than the newest,
    and its number + 1 would name a second, different file "version N")."""
    seen = [current]
    for v in client.search_model_versions(f"name='{REGISTERED_NAME}'"):
        tag = (v.tags or {}).get("file_version", "")
        if tag.isdigit():
            seen.append(int(tag))
            continue
        with contextlib.suppress(Exception):  # an unreadable old version names no number
            seen.append(int(loads_yaml(_version_text(v), "a registered version")["version"]))
    return max(seen) + 1


def _record(
    decision: PromotionDecision,
    cfg: PipelineConfig,
    facts: dict[str, Any],
    current: int,
    models: dict[str, bytes | None] | None = None,
) -> None:
    """Log the attempt as a promotion run; when accepted, write the production file (numbered
    by `next_version`) and register it as the `production` alias."""
    client = _client()
    previous = _ensure_current_registered(client) if decision.accepted else None
    version = next_version(client, current)
    provenance = {
        **facts,
        "promoted_by": getpass.getuser(),
        "promoted_at": _now(),
        "forced": decision.forced,
        "reason": decision.reason or "passed all guards",
    }
    accepted_on = accepted_on_block(decision.candidate)
    text = render_production(cfg, provenance, accepted_on, version)
    report = render(decision, facts)
    tags = {
        "decision": "accepted" if decision.accepted else "refused",
        "forced": str(decision.forced).lower(),
        "reason": decision.reason,
        "source_run": facts["source_run"],
        "promoted_by": provenance["promoted_by"],
    }
    run = _promotion_run(client, "promote", text, decision, report, tags)
    _write_report(report, "promote")
    if not decision.accepted:
        return
    for name, data in (models or {}).items():  # content-addressed: never another model's file
        if name and data is not None:
            target = production_file.PRODUCTION.parent / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    production_file.PRODUCTION.write_text(text, encoding="utf-8")
    new = _register(client, run, "promote", {**tags, "file_version": str(version)})
    client.set_registered_model_alias(REGISTERED_NAME, "production", new.version)
    if previous is not None:
        client.set_registered_model_alias(REGISTERED_NAME, "previous", previous.version)


def rollback() -> tuple[str, str]:
    """Restore the `previous` production file byte for byte; swap the aliases. Returns versions."""
    client = _client()
    current, previous = _alias(client, "production"), _alias(client, "previous")
    if previous is None or current is None:
        raise ConfigError("nothing to roll back to: the registry has no 'previous' version")
    text = _version_text(previous)
    doc = loads_yaml(text, "the previous version")  # a file once promoted: never invalid
    restored = PipelineConfig.from_dict(doc["pipeline"])
    # Its model files stayed in models/ (content-addressed, never removed): check they are intact.
    if restored.reranker_model:
        load_reranker(restored, production_file.PRODUCTION.parent)
    if restored.gate == "learned":
        load_gate(restored, production_file.PRODUCTION.parent)
    production_file.PRODUCTION.write_text(text, encoding="utf-8")
    tags = {
        "restored_version": str(previous.version),
        "replaced_version": str(current.version),
        "promoted_by": getpass.getuser(),
    }
    report = (
        f"<h1>Rollback</h1><p>Restored registry version {previous.version} "
        f"(replacing {current.version}) by {tags['promoted_by']}.</p>"
    )
    _promotion_run(client, "rollback", text, None, report, tags)
    client.set_registered_model_alias(REGISTERED_NAME, "production", previous.version)
    client.set_registered_model_alias(REGISTERED_NAME, "previous", current.version)
    return str(previous.version), str(current.version)


def _write_report(report: str, kind: str) -> Path:
    folder = paths.runs_dir() / "promotions"
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{_now()}-{kind}.html"
    out.write_text(report, encoding="utf-8")
    return out
