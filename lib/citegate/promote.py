"""Promoting a tuned config to production: gated, versioned, reversible.

The production file (`experiments/production.yaml`) holds the full `PipelineConfig`, its provenance
and the metrics it was accepted on. `citegate promote RUN_ID` reads the config a run recommends,
diffs it against production, evaluates both on the TEST split with the same cached traces, and
writes the file only if the candidate loses on no guard metric beyond its tolerance (`--force` with
a reason overrides, and says so). Every promotion is an MLflow run, and the file is registered in
the MLflow Model Registry with aliases `production` and `previous`; `--rollback` restores the
previous file byte for byte by the same path.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from citegate import paths
from citegate.config import PipelineConfig, load_config
from citegate.errors import ConfigError

PRODUCTION = paths.EXPERIMENTS / "production.yaml"
GUARDS = paths.EXPERIMENTS / "guards.yaml"
REGISTERED_NAME = "citegate-pipeline-config"
FILE_HEADER = (
    "# Production configuration of the citegate pipeline. Written by `citegate promote`;\n"
    "# read by citegate.load_production_config(). Do not edit by hand: promote instead.\n"
)


# ---------------------------------------------------------------- the production file


def read_production(path: Path | None = None) -> dict[str, Any]:
    """The production document: {version, pipeline, provenance, accepted_on}."""
    path = Path(path or PRODUCTION)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the production config: {exc}") from exc
    if not isinstance(doc, dict) or not {"version", "pipeline", "provenance"} <= set(doc):
        raise ConfigError(f"{path}: needs version, pipeline and provenance")
    PipelineConfig.from_dict(doc["pipeline"], source=f"{path}: pipeline")
    return doc


def corpus_embedders(conn: Any, corpora: tuple[str, ...]) -> set[str]:
    """Embedder ids the given corpora were embedded with."""
    rows = conn.execute(
        "SELECT DISTINCT embedder_id FROM fragments WHERE corpus = ANY(%s)", (list(corpora),)
    ).fetchall()
    return {r[0] for r in rows}


def load_production_config(path: Path | None = None, conn: Any | None = None) -> PipelineConfig:
    """What a production service calls: the validated production config, refused when its embedder
    differs from the one its corpora were embedded with (vectors of two embedders never mix)."""
    doc = read_production(path)
    cfg = PipelineConfig.from_dict(doc["pipeline"], source=str(path or PRODUCTION))
    if conn is None:
        from citegate.db import connect

        with connect() as c:
            return _check_embedder(cfg, corpus_embedders(c, cfg.corpora), path)
    return _check_embedder(cfg, corpus_embedders(conn, cfg.corpora), path)


def _check_embedder(cfg: PipelineConfig, found: set[str], path: Path | None) -> PipelineConfig:
    if not found:
        raise ConfigError(f"{path or PRODUCTION}: corpora {list(cfg.corpora)} are not ingested")
    if cfg.embedder not in found:
        raise ConfigError(
            f"{path or PRODUCTION}: config embedder {cfg.embedder!r} differs from the "
            f"corpus embedder(s) {sorted(found)}; re-ingest or fix the config"
        )
    return cfg


def render_production(
    cfg: PipelineConfig, provenance: dict[str, Any], accepted_on: dict[str, Any], version: int
) -> str:
    """The production file's text (deterministic key order)."""
    doc = {
        "version": version,
        "pipeline": cfg.to_dict(),
        "provenance": provenance,
        "accepted_on": accepted_on,
    }
    return FILE_HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def diff(old: PipelineConfig, new: PipelineConfig) -> list[tuple[str, Any, Any]]:
    """Every changed key as (key, old, new), in declaration order."""
    a, b = old.to_dict(), new.to_dict()
    return [(k, a[k], b[k]) for k in a if a[k] != b[k]]


def format_diff(changes: list[tuple[str, Any, Any]]) -> str:
    """`key: old → new`, one per line."""
    return "\n".join(f"  {k}: {o} → {n}" for k, o, n in changes) or "  (no change)"


# ---------------------------------------------------------------- guard metrics


@dataclass(frozen=True)
class Guard:
    """A metric that must not get worse by more than `tolerance` (direction: higher or lower)."""

    metric: str
    better: str
    tolerance: float

    def passes(self, candidate: float, production: float) -> bool:
        """True when the candidate is no worse than production beyond the tolerance."""
        if self.better == "higher":
            return candidate >= production - self.tolerance
        return candidate <= production + self.tolerance


def load_guards(path: Path | None = None) -> tuple[dict[str, Any], list[Guard]]:
    """The evaluation settings and guard metrics declared in `experiments/guards.yaml`."""
    doc = yaml.safe_load(Path(path or GUARDS).read_text(encoding="utf-8"))
    guards = [Guard(g["metric"], g["better"], float(g["tolerance"])) for g in doc["guards"]]
    bad = [g.metric for g in guards if g.better not in ("higher", "lower")]
    if bad:
        raise ConfigError(f"{path or GUARDS}: 'better' must be higher or lower for {bad}")
    return doc["evaluation"], guards


def evaluate(
    cfg: PipelineConfig,
    evaluation: dict[str, Any],
    n_boot: int = 500,
) -> dict[str, dict[str, float]]:
    """Guard metrics of a config on the test split (cached traces; replay where possible):
    metric -> {value, low, high}."""
    from citegate import metrics as M
    from citegate.study import load_study

    study = load_study(
        evaluation["sets"],
        cfg,
        limit=int(evaluation.get("limit", 0)),
        split="test",
        reranker=cfg.reranker,
        progress=False,
    )
    rows = []
    for s in study.sets.values():
        res = s.replay_all(cfg.replace(corpora=[s.corpus]))
        for q in s.questions:
            r = res[q.id]
            gold = set(s.gold.get(q.id, ()))
            rows.append(
                (
                    q.label,
                    r.decision == "answer",
                    r.max_score,
                    any(c.fragment_id in gold for c in r.notes) if gold else None,
                )
            )
    labels = np.array([r[0] for r in rows])
    answered = np.array([r[1] for r in rows])
    neg, pos = labels != "answerable", labels == "answerable"
    hits = [r[3] for r in rows if r[3] is not None]
    y = pos[pos | neg].astype(int)
    out = {
        "false_answer_rate": _rate(answered[neg], n_boot),
        "answer_rate": _rate(answered[pos], n_boot),
        "recall_at_16": _rate(np.array(hits, dtype=bool), n_boot),
    }
    auc = M.auroc_ci(np.array([r[2] for r in rows])[pos | neg], y, n_boot=n_boot)
    out["gate_auroc"] = {"value": auc.auroc, "low": auc.lower, "high": auc.upper}
    return out


def _rate(flags: np.ndarray, n_boot: int) -> dict[str, float]:
    from citegate.metrics import bootstrap_rate_ci

    rate, lo, hi = bootstrap_rate_ci(list(map(bool, flags)), n_boot=n_boot)
    return {"value": rate, "low": lo, "high": hi}


# ---------------------------------------------------------------- decision and recording


@dataclass
class Decision:
    """The outcome of a promotion attempt."""

    accepted: bool
    forced: bool
    reason: str
    changes: list[tuple[str, Any, Any]]
    candidate: dict[str, dict[str, float]]
    production: dict[str, dict[str, float]]
    guards: list[tuple[Guard, bool]]


def decide(
    guards: list[Guard],
    cand: dict[str, dict[str, float]],
    prod: dict[str, dict[str, float]],
    force: bool,
    reason: str,
) -> tuple[bool, list[tuple[Guard, bool]]]:
    """Accept when every guard passes, or when forced (a reason is then mandatory)."""
    results = [(g, g.passes(cand[g.metric]["value"], prod[g.metric]["value"])) for g in guards]
    if force and not reason.strip():
        raise ConfigError("--force needs --reason: a forced promotion must say why")
    return force or all(ok for _, ok in results), results


def recommended_from_run(run_id: str) -> tuple[PipelineConfig, dict[str, Any]]:
    """The config a run recommends (its `recommended_config.yaml` artifact) and the run's facts."""
    import mlflow

    _client()  # points mlflow at the project's tracking store
    try:
        run = mlflow.get_run(run_id)
    except Exception as exc:  # noqa: BLE001 - MlflowException for an unknown id
        raise ConfigError(f"no MLflow run {run_id!r} in the tracking store") from exc
    with tempfile.TemporaryDirectory() as tmp:
        try:
            local = mlflow.artifacts.download_artifacts(
                run_id=run_id, artifact_path="recommended_config.yaml", dst_path=tmp
            )
        except Exception as exc:  # noqa: BLE001 - mlflow raises several types for a missing file
            raise ConfigError(f"run {run_id} has no recommended_config.yaml artifact") from exc
        cfg = load_config(Path(local))
    facts = {
        "source_run": run_id,
        "experiment": run.data.tags.get("experiment", ""),
        "git_commit": run.data.tags.get("git_commit", "unknown"),
        "corpus_builds": run.data.tags.get("info.corpus_builds", ""),
        "embedder": run.data.tags.get("embedder", cfg.embedder),
        "reranker": cfg.reranker,
        "llm": cfg.llm,
        "run_reranker": run.data.tags.get("reranker", ""),  # what the study itself ranked with
    }
    facts["question_sets"] = {d.dataset.name: d.dataset.digest for d in run.inputs.dataset_inputs}
    return cfg, facts


def _client() -> Any:
    import mlflow

    from citegate.experiments import tracking_uri

    mlflow.set_tracking_uri(tracking_uri())
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
    client: Any, kind: str, text: str, decision: Decision | None, report: str, tags: dict[str, str]
) -> Any:
    import mlflow

    from citegate.experiments import experiment_id
    from citegate.redact import safe_mapping

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
    if current is None and PRODUCTION.exists():
        text = PRODUCTION.read_text(encoding="utf-8")
        run = _promotion_run(
            client,
            "baseline",
            text,
            None,
            "<p>baseline registration</p>",
            {"note": "the production file found in the repository"},
        )
        current = _register(client, run, "baseline", {})
        client.set_registered_model_alias(REGISTERED_NAME, "production", current.version)
    return current


def promote(
    run_id: str,
    *,
    force: bool = False,
    reason: str = "",
    dry_run: bool = False,
    guards_path: Path | None = None,
) -> Decision:
    """Evaluate the run's recommended config against production; write and register it if it
    passes the guards (or is forced with a reason)."""
    evaluation, guards = load_guards(guards_path)
    cand_cfg, facts = recommended_from_run(run_id)
    prod_doc = read_production()
    prod_cfg = PipelineConfig.from_dict(prod_doc["pipeline"])
    cand_m, prod_m = evaluate(cand_cfg, evaluation), evaluate(prod_cfg, evaluation)
    accepted, results = decide(guards, cand_m, prod_m, force, reason)
    decision = Decision(
        accepted,
        force and not all(ok for _, ok in results),
        reason,
        diff(prod_cfg, cand_cfg),
        cand_m,
        prod_m,
        results,
    )
    if dry_run:
        return decision
    _record(decision, cand_cfg, facts, int(prod_doc["version"]) + 1)
    return decision


def _record(decision: Decision, cfg: PipelineConfig, facts: dict[str, Any], version: int) -> None:
    from citegate.promote_report import render

    client = _client()
    previous = _ensure_current_registered(client) if decision.accepted else None
    provenance = {
        **facts,
        "promoted_by": getpass.getuser(),
        "promoted_at": _now(),
        "forced": decision.forced,
        "reason": decision.reason or "passed all guards",
    }
    accepted_on = {
        m: {"value": round(v["value"], 4), "ci95": [round(v["low"], 4), round(v["high"], 4)]}
        for m, v in decision.candidate.items()
    }
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
    PRODUCTION.write_text(text, encoding="utf-8")
    new = _register(client, run, "promote", tags)
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
    PipelineConfig.from_dict(yaml.safe_load(text)["pipeline"])  # never restore an invalid file
    PRODUCTION.write_text(text, encoding="utf-8")
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


def summary(decision: Decision) -> str:
    """The diff, the guard table and the decision, for the terminal."""
    lines = [
        "config changes (production → candidate):",
        format_diff(decision.changes),
        "",
        f"{'guard':<20} {'production':>22} {'candidate':>22}  result",
    ]
    for g, ok in decision.guards:
        p, c = decision.production[g.metric], decision.candidate[g.metric]
        lines.append(
            f"{g.metric:<20} {_ci(p):>22} {_ci(c):>22}  "
            f"{'OK' if ok else 'WORSE'} ({g.better} is better, tol {g.tolerance})"
        )
    guarded = {g.metric for g, _ in decision.guards}
    for m in sorted(set(decision.candidate) - guarded):
        lines.append(
            f"{m:<20} {_ci(decision.production[m]):>22} "
            f"{_ci(decision.candidate[m]):>22}  (reported, not guarded)"
        )
    verdict = "ACCEPTED" if decision.accepted else "REFUSED"
    if decision.forced:
        verdict += f" (forced: {decision.reason})"
    lines += ["", f"decision: {verdict}"]
    return "\n".join(lines)


def _ci(v: dict[str, float]) -> str:
    return f"{v['value']:.3f} [{v['low']:.3f}, {v['high']:.3f}]"


def as_json(decision: Decision) -> str:
    """The decision as JSON (for machines)."""
    return json.dumps(
        {
            "accepted": decision.accepted,
            "forced": decision.forced,
            "reason": decision.reason,
            "changes": decision.changes,
            "candidate": decision.candidate,
            "production": decision.production,
            "guards": [{"metric": g.metric, "ok": ok} for g, ok in decision.guards],
        },
        indent=2,
        default=str,
    )
