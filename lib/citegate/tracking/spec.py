"""The experiment spec: `experiments/NAME.yaml` read, validated and resolved.

A spec names a notebook and holds only what a run changes from it: parameters (checked against the
notebook's parameters cell when the spec is loaded, so `--dry-run` reports every mistake before
anything runs), the pipeline block, named profiles, expected metrics, a sweep, a lane and a cell
timeout. `extends:` builds one spec on another. The effective parameters of a run are the
notebook's own defaults overlaid by the spec's, the profile's and the command line's (`--set`;
`--corpus` points the question-set parameters at an imported corpus).
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.config_files import resolve
from citegate.core.errors import ConfigError, InputError
from citegate.core.yamlfile import read_yaml
from citegate.corpus.builds import SPLIT_SUFFIX, build_id, fold_count, import_record
from citegate.corpus.questions import load_set

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

    def literal(self) -> tuple[bool, Any]:
        """(True, the default's value) when the default is a literal; (False, None) for an
        expression, whose value only the notebook can compute."""
        try:
            return True, ast.literal_eval(str(self.default))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False, None


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
        """The parameters a run sets (papermill injects them): the spec's, then the profile's,
        then the command line's; the notebook's defaults stand for the rest (`effective`)."""
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

    def notebook_defaults(self) -> dict[str, Any]:
        """The notebook's own value of each parameter it declares with a literal default, in the
        parameters cell's order (RUN_DIR and PIPELINE aside: the runner sets them)."""
        out = {}
        for name, param in self.notebook_params.items():
            is_literal, value = param.literal()
            if is_literal and name not in RESERVED_PARAMS:
                out[name] = value
        return out

    def effective(self, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters a run executes with: the notebook's defaults overlaid by `params` (what
        `resolved` gives papermill), so a run logs and reports a value whether or not its spec
        repeats the notebook's default."""
        return {**self.notebook_defaults(), **params}

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
        is_literal, value = declared.literal()
        return str(value) if is_literal else "design"

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
    data = read_yaml(path, "experiment spec")
    if not isinstance(data, dict) or "extends" not in data:
        return data
    parent = data.pop("extends")
    if not isinstance(parent, str) or not parent or "\x00" in parent:
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


CORPUS_PARAMS = ("CORPORA", "SETS")  # what `--corpus` replaces: whichever the notebook declares


# The parameter naming one of a notebook's CORPORA keys: the corpus a recommendation is made for.
CORPUS_CHOICE_PARAM = "RECOMMEND_FOR"


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
    if CORPUS_CHOICE_PARAM in declared:
        out[CORPUS_CHOICE_PARAM] = searched
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
    merged = {**base, **overrides}
    check_corpus_labels(spec, corpus, spec.effective({**spec.parameters, **merged}))
    return merged


# A notebook's parameters listing the question labels it studies (each must be in its sets).
LABEL_PARAMS = ("NEGATIVES", "LABELS")
LABEL_HINTS = {
    "out_of_corpus": "make a split that holds documents out (`citegate data split {c}` or "
    "`--holdout-by FIELD`): their questions become out_of_corpus",
    "out_of_scope": "import your own out-of-scope questions (`citegate data import-beir ... "
    "--out-of-scope FILE`)",
    "answerable": "import questions with gold document ids",
}


def check_corpus_labels(spec: ExperimentSpec, corpus: str, params: dict[str, Any]) -> None:
    """Refuse (`ConfigError`, one line, at `--dry-run` as at a run) an experiment on imported
    `corpus` whose notebook studies a question label (its `NEGATIVES` or `LABELS` parameter) that
    none of the sets `--corpus` points it at holds: an import without a split has no
    out_of_corpus question, and the notebook would fail after minutes of work."""
    param = next((p for p in LABEL_PARAMS if p in params), None)
    wanted = params.get(param) if param else None
    if not isinstance(wanted, list | tuple):
        return
    record = import_record(corpus) or {"builds": {}}
    split = corpus + SPLIT_SUFFIX
    searched = split if split in record.get("builds", {}) else corpus
    names = [searched, str(record.get("out_of_scope", "out-of-scope"))]
    try:
        held = {q.label for n in names for q in load_set(n).questions}
    except InputError:
        return  # a set that cannot be read is refused by the run itself, naming its file
    for label in wanted:
        if label not in held:
            hint = LABEL_HINTS.get(str(label), "add questions of that label").format(c=corpus)
            raise ConfigError(
                f"--corpus {corpus}: {spec.name} studies {label} questions ({param}), and no set "
                f"it is asked ({', '.join(names)}) holds one: {hint}"
            )
