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
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from citegate.core import paths
from citegate.core.config import PRODUCTION, PipelineConfig, load_config, read_production
from citegate.core.errors import ConfigError
from citegate.core.redact import safe_mapping
from citegate.corpus.questions import LABELS
from citegate.evaluation import metrics as M
from citegate.models.gate_model import LearnedGate
from citegate.pipeline.decide import learned_decision
from citegate.pipeline.signals import index_facts
from citegate.research.study import StudySet, load_study
from citegate.store.db import connect
from citegate.store.production import (
    load_gate,
    load_reranker,
)
from citegate.store.tables import fragment_texts
from citegate.tracking.promote_models import (
    artifact,
    evaluation_config,
    promoted_config,
    run_gate_model,
    run_ltr_model,
)
from citegate.tracking.promote_report import render, reported_metrics
from citegate.tracking.runner import experiment_id, tracking_uri

GUARDS = paths.EXPERIMENTS / "guards.yaml"
REGISTERED_NAME = "citegate-pipeline-config"
FILE_HEADER = (
    "# Production configuration of the citegate pipeline. Written by `citegate promote`;\n"
    "# read by citegate.store.load_production_config(). Do not edit by hand: promote instead.\n"
)


# ---------------------------------------------------------------- the production file


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


NEGATIVE_KINDS = tuple(label for label in LABELS if label != "answerable")
METRIC_BASES = ("false_answer_rate", "answer_rate", "recall_at_16", "gate_auroc")


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
    path = Path(path or GUARDS)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        evaluation = doc["evaluation"]
        guards = [Guard(g["metric"], g["better"], float(g["tolerance"])) for g in doc["guards"]]
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the guards: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"{path}: needs `evaluation` and `guards` (each with metric, better, tolerance): "
            f"{exc!r}"
        ) from exc
    bad = [g.metric for g in guards if g.better not in ("higher", "lower")]
    if bad:
        raise ConfigError(f"{path}: 'better' must be higher or lower for {bad}")
    for g in guards:
        _check_guard_name(g.metric, path)
    return evaluation, guards


def _check_guard_name(metric: str, path: Path) -> None:
    """A guard names a metric `evaluate` can produce: a known base, a per-kind one where needed."""
    base, _, suffix = metric.partition(".")
    if base not in METRIC_BASES:
        raise ConfigError(
            f"{path}: guard metric {metric!r} is unknown; bases: {list(METRIC_BASES)}"
        )
    kind = suffix.partition(".")[0]
    if base in ("false_answer_rate", "gate_auroc") and kind not in (*NEGATIVE_KINDS, "pooled"):
        kinds = ", ".join(f"{base}.{k}" for k in NEGATIVE_KINDS)
        raise ConfigError(
            f"{path}: guard metric {metric!r} must name a kind of negative ({kinds}); "
            "pooling the kinds mixes easy and hard negatives"
        )


@dataclass(frozen=True)
class EvalRow:
    """One test question replayed under a config: what the guard metrics are computed from."""

    label: str  # answerable | out_of_corpus | out_of_scope
    language: str
    group: str  # questions of one group (verse, article) are resampled together
    answered: bool  # the gate's decision was "answer"
    max_score: float  # the gate signal (max cosine of the final notes)
    gold_hit: bool | None  # a gold fragment is among the final notes; None without gold


def compute_metrics(
    rows: list[EvalRow], n_boot: int = 500, seed: int = 0, alpha: float = 0.05
) -> dict[str, dict[str, float]]:
    """Guard and reported metrics of replayed questions: metric -> {value, low, high, n}.

    Rates (Wilson intervals): `answer_rate`, `recall_at_16`, `false_answer_rate.<kind>` per kind
    of negative, and each per language (`answer_rate.en`, `false_answer_rate.out_of_corpus.ru`).
    AUROC of max cosine (cluster bootstrap over question groups, as notebook 03):
    `gate_auroc.<kind>`. Both also pooled over the kinds (`.pooled`, reported for comparison
    with version-2 files whose names meant that). A metric without observations is absent.
    """
    out: dict[str, dict[str, float]] = {}
    pos = [r for r in rows if r.label == "answerable"]
    _add_rate(out, "answer_rate", [r.answered for r in pos], alpha)
    _add_rate(out, "recall_at_16", [r.gold_hit for r in pos if r.gold_hit is not None], alpha)
    for lang in sorted({r.language for r in pos}):
        mine = [r for r in pos if r.language == lang]
        _add_rate(out, f"answer_rate.{lang}", [r.answered for r in mine], alpha)
        hits = [r.gold_hit for r in mine if r.gold_hit is not None]
        _add_rate(out, f"recall_at_16.{lang}", hits, alpha)
    kinds = sorted({r.label for r in rows} - {"answerable"})
    negatives = {k: [r for r in rows if r.label == k] for k in kinds}
    if len(kinds) > 1:
        negatives["pooled"] = [r for r in rows if r.label != "answerable"]
    for kind, neg in negatives.items():
        _add_rate(out, f"false_answer_rate.{kind}", [r.answered for r in neg], alpha)
        if kind != "pooled":
            for lang in sorted({r.language for r in neg}):
                flags = [r.answered for r in neg if r.language == lang]
                _add_rate(out, f"false_answer_rate.{kind}.{lang}", flags, alpha)
        _add_auroc(out, f"gate_auroc.{kind}", pos + neg, n_boot, seed, alpha)
    return out


def _add_rate(out: dict[str, dict[str, float]], name: str, flags: list[bool], alpha: float) -> None:
    if flags:
        rate, lo, hi = M.rate_ci(np.array(flags, dtype=bool), alpha=alpha)
        out[name] = {"value": rate, "low": lo, "high": hi, "n": float(len(flags))}


def _add_auroc(
    out: dict[str, dict[str, float]],
    name: str,
    rows: list[EvalRow],
    n_boot: int,
    seed: int,
    alpha: float,
) -> None:
    y = np.array([r.label == "answerable" for r in rows], dtype=int)
    if not 0 < y.sum() < len(y):
        return
    auc = M.auroc_ci(
        [r.max_score for r in rows],
        y,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
        groups=[r.group for r in rows],
    )
    out[name] = {"value": auc.auroc, "low": auc.lower, "high": auc.upper, "n": float(len(y))}


def evaluate(
    cfg: PipelineConfig,
    evaluation: dict[str, Any],
    n_boot: int = 500,
    gate: LearnedGate | None = None,
) -> dict[str, dict[str, float]]:
    """Guard metrics of a config on the test split (cached traces; replay where possible):
    metric -> {value, low, high, n} (see `compute_metrics`).

    The coverage and two-scale gates replay through the vectorised path (per-language thresholds
    included). A learned gate cannot be decided there: its signals need the final notes' texts
    and the index's addresses, so each question is replayed in full and decided by `gate` (the
    model `cfg` names, loaded next to the production file when not given), and the AUROC is that
    of p(answerable), the signal the learned gate thresholds."""
    study = load_study(
        evaluation["sets"],
        cfg,
        limit=int(evaluation.get("limit", 0)),
        split="test",
        reranker=cfg.reranker,
        progress=False,
    )
    if cfg.gate == "learned" and gate is None:
        gate = load_gate(cfg, PRODUCTION.parent)
    rows = []
    for s in study.sets.values():
        if gate is not None:
            outcomes = _learned_outcomes(s, cfg, gate, study.embedder_id)
        else:
            outcomes = {
                qid: Outcome(r.decision == "answer", r.max_score, tuple(r.notes))
                for qid, r in s.replay_summaries(cfg).items()
            }
        for q in s.questions:
            o = outcomes[q.id]
            gold = set(s.gold.get(q.id, ()))
            hit = any(fid in gold for fid in o.notes) if gold else None
            rows.append(EvalRow(q.label, q.language, q.group, o.answered, o.signal, hit))
    return compute_metrics(rows, n_boot=n_boot)


@dataclass(frozen=True)
class Outcome:
    """One replayed question as the guards see it: answered, the gate's signal, the note ids."""

    answered: bool
    signal: float
    notes: tuple[int, ...]


def _learned_outcomes(
    s: StudySet, cfg: PipelineConfig, gate: LearnedGate, embedder_id: str
) -> dict[str, Outcome]:
    """Each question of a set replayed in full and decided by the learned gate (`decide`)."""
    cfg = cfg.replace(corpora=[s.corpus])
    results = s.replay_all(cfg)
    with connect() as conn:
        facts = index_facts(conn, (s.corpus,), embedder_id)
        texts = fragment_texts(
            conn, sorted({n.fragment_id for r in results.values() for n in r.notes})
        )
    out = {}
    for qid, r in results.items():
        d = learned_decision(r, cfg, gate, facts, texts)
        assert d.decided_by is not None
        out[qid] = Outcome(
            d.decision == "answer", d.decided_by.signal, tuple(n.fragment_id for n in d.notes)
        )
    return out


# ---------------------------------------------------------------- the certificate guard


@dataclass(frozen=True)
class CertificateCheck:
    """One negative kind's certified false-answer bound (recommendation.json's `certified`):
    passes when the exact upper bound at confidence 1−delta is at most the target alpha (and the
    block does not say `feasible: false`, i.e. that no threshold could be certified)."""

    kind: str
    bound: float
    alpha: float
    delta: float
    n_neg: int
    feasible: bool = True
    counted: str = "negatives"  # what n_neg counts: "negative units" for a per-unit certificate

    @property
    def ok(self) -> bool:
        """bound ≤ alpha, with a certified threshold."""
        return self.feasible and self.bound <= self.alpha

    def line(self) -> str:
        """One line naming the kind, bound and alpha, and whether it passes."""
        rel = "≤" if self.bound <= self.alpha else ">"
        verdict = "OK" if self.ok else "FAILS"
        if not self.feasible:
            verdict += " (no threshold could be certified)"
        return (
            f"certificate {self.kind}: bound {self.bound:.4f} {rel} alpha {self.alpha:g} "
            f"(confidence {1 - self.delta:g}, {self.n_neg} {self.counted}): {verdict}"
        )


def certificate_checks(why: dict[str, Any] | None) -> list[CertificateCheck]:
    """The per-kind checks of a recommendation's `certified` block; none without the block (a
    recommendation that certifies nothing, e.g. notebook 03's, is not subject to this guard).

    The block is one {kind, alpha, delta, n_neg, bound} mapping, a list of them, or a mapping of
    kind → such a mapping (nested per corpus too: the kind is then "corpus.kind"), as experiment
    05 writes it ({gate, threshold, feasible, alpha, delta, kinds: {kind: {...}}}); `alpha`,
    `delta` and `feasible` given on an outer level hold for the blocks inside it."""
    if not why or "certified" not in why:
        return []
    checks = list(_certified_blocks(why["certified"], (), {}))
    if not checks:
        raise ConfigError("recommendation.json: the `certified` block certifies no kind")
    return checks


def _certified_blocks(
    node: Any, path: tuple[str, ...], outer: dict[str, Any]
) -> Iterator[CertificateCheck]:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _certified_blocks(item, (*path, str(i)), outer)
        return
    if not isinstance(node, dict):
        return
    keep = ("alpha", "delta", "feasible", "calibrated_on")
    here = {**outer, **{k: node[k] for k in keep if k in node}}
    if "bound" not in node:
        for k, v in node.items():
            yield from _certified_blocks(v, (*path, str(k)), here)
        return
    kind = node.get("kind")
    name = kind if isinstance(kind, str) and kind else ".".join(path) or "pooled"
    try:
        yield CertificateCheck(
            name,
            float(node["bound"]),
            float(here["alpha"]),
            float(here.get("delta", float("nan"))),
            int(node.get("n_neg", 0)),
            here.get("feasible") is not False,
            _counted(str(here.get("calibrated_on", ""))),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"recommendation.json: certified block {name!r} needs numeric alpha and bound "
            f"(and delta, n_neg): {exc!r}"
        ) from exc


def _counted(calibrated_on: str) -> str:
    """What a certificate's n counts, read from where it was calibrated (experiment 05 says
    "per unit" or "per question group" for a certificate over independent units)."""
    per_unit = "per unit" in calibrated_on or "per question group" in calibrated_on
    return "negative units" if per_unit else "negatives"


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
    certificate: list[CertificateCheck] = field(default_factory=list)

    @property
    def certificate_fails(self) -> list[CertificateCheck]:
        """The kinds whose certified bound exceeds alpha (`--force` does not override them)."""
        return [c for c in self.certificate if not c.ok]


def decide(
    guards: list[Guard],
    cand: dict[str, dict[str, float]],
    prod: dict[str, dict[str, float]],
    force: bool,
    reason: str,
) -> tuple[bool, list[tuple[Guard, bool]]]:
    """Accept when every guard passes, or when forced (a reason is then mandatory)."""
    for g in guards:
        for side, vals in (("candidate", cand), ("production", prod)):
            if g.metric not in vals:
                raise ConfigError(
                    f"guard metric {g.metric!r} was not measured for the {side} "
                    f"(no such questions in the evaluation sets?); measured: {sorted(vals)}"
                )
    results = [(g, g.passes(cand[g.metric]["value"], prod[g.metric]["value"])) for g in guards]
    if force and not reason.strip():
        raise ConfigError("--force needs --reason: a forced promotion must say why")
    return force or all(ok for _, ok in results), results


RECOMMENDATION_FILES = ("recommended_config.yaml", "recommendation.json")


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
            run_gate_model(run_id, cfg, tmp, PRODUCTION.parent) if cfg.gate == "learned" else None
        )
        ltr = run_ltr_model(run_id, cfg, tmp, PRODUCTION.parent)
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
    return Recommended(cfg, facts, why, model, ltr)


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
    import mlflow

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
        number = str(yaml.safe_load(text).get("version", ""))
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
) -> Decision:
    """Evaluate the run's recommended config against production; write and register it if it
    passes the guards (or is forced with a reason) and its certificate holds for every kind.

    Every model file the config needs is promoted with it (the run's `gate_model.json`, and
    `ltr_model.json` when it runs the LTR reranker): the new production file names
    `models/gate-<digest12>.json` and `models/ltr-<digest12>.json` next to itself, with digests."""
    evaluation, guards = load_guards(guards_path)
    rec = recommended_from_run(run_id)
    checks = certificate_checks(rec.why)
    cand_cfg, cand_gate = promoted_config(rec.config, rec.gate_model, rec.ltr_model)
    prod_doc = read_production(PRODUCTION)
    prod_cfg = PipelineConfig.from_dict(prod_doc["pipeline"])
    cand_m = evaluate(evaluation_config(cand_cfg, rec.ltr_model), evaluation, gate=cand_gate)
    prod_m = evaluate(prod_cfg, evaluation)
    passed, results = decide(guards, cand_m, prod_m, force, reason)
    certified = all(c.ok for c in checks)
    decision = Decision(
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


def accepted_on_block(measured: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The `accepted_on` block of a new production file: every measured metric under its own
    (per-kind) name, with its 95% interval and the number of questions behind it."""
    return {
        m: {
            "value": round(v["value"], 4),
            "ci95": [round(v["low"], 4), round(v["high"], 4)],
            "n": int(v["n"]),
        }
        for m, v in measured.items()
    }


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
            seen.append(int(yaml.safe_load(_version_text(v))["version"]))
    return max(seen) + 1


def _record(
    decision: Decision,
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
            target = PRODUCTION.parent / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    PRODUCTION.write_text(text, encoding="utf-8")
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
    restored = PipelineConfig.from_dict(yaml.safe_load(text)["pipeline"])  # never an invalid file
    # Its model files stayed in models/ (content-addressed, never removed): check they are intact.
    if restored.reranker_model:
        load_reranker(restored, PRODUCTION.parent)
    if restored.gate == "learned":
        load_gate(restored, PRODUCTION.parent)
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
    """The diff, the guard table (then every reported metric) and the decision, for the terminal."""
    names = [g.metric for g, _ in decision.guards] + reported_metrics(decision)
    width = max([len("metric"), *map(len, names)])
    lines = [
        "config changes (production → candidate):",
        format_diff(decision.changes),
        "",
        f"{'metric':<{width}} {'production':>28} {'candidate':>28}  result",
    ]
    for g, ok in decision.guards:
        p, c = decision.production[g.metric], decision.candidate[g.metric]
        lines.append(
            f"{g.metric:<{width}} {_ci(p):>28} {_ci(c):>28}  "
            f"{'OK' if ok else 'WORSE'} ({g.better} is better, tol {g.tolerance})"
        )
    for m in reported_metrics(decision):
        p, c = decision.production.get(m), decision.candidate.get(m)
        lines.append(f"{m:<{width}} {_ci(p):>28} {_ci(c):>28}  (reported, not guarded)")
    verdict = "ACCEPTED" if decision.accepted else "REFUSED"
    if decision.forced:
        verdict += f" (forced: {decision.reason})"
    if decision.certificate:
        lines += ["", *(c.line() for c in decision.certificate)]
    fails = decision.certificate_fails
    if fails:
        kinds = ", ".join(c.kind for c in fails)
        verdict += f": the certified false-answer bound exceeds alpha for {kinds} (not forceable)"
    lines += [
        "",
        "rates: Wilson 95% intervals; gate_auroc: 95% bootstrap over question groups; n in ()",
        f"decision: {verdict}",
    ]
    return "\n".join(lines)


def _ci(v: dict[str, float] | None) -> str:
    if v is None:
        return "(not measured)"
    n = f" ({int(v['n'])})" if "n" in v else ""
    return f"{v['value']:.3f} [{v['low']:.3f}, {v['high']:.3f}]{n}"


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
            "certificate": [
                {**asdict(c), "ok": c.ok, "line": c.line()} for c in decision.certificate
            ],
        },
        indent=2,
        default=str,
    )
