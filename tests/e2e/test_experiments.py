"""The experiment runner: papermill + MLflow (throwaway tracking dir) + reports + checks."""

from __future__ import annotations

import ast
import json
import math
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from citegate.core import paths
from citegate.core.config import DESIGN
from citegate.core.config_files import production
from citegate.core.errors import ConfigError
from citegate.corpus.memory_questions import DEMO_NOTES
from citegate.corpus.notes import source_name
from citegate.store import db
from citegate.tracking.reports import browser_check, chromium
from citegate.tracking.runner import run_experiment
from citegate.tracking.spec import load_spec

PROBE = Path(__file__).parents[1] / "fixtures" / "notebooks" / "probe.ipynb"
SECRET = "vk-test-Zq81x0PLEASEdontLEAK"


@pytest.fixture()
def tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    return uri


def write_spec(tmp_path: Path, **extra: object) -> Path:
    spec = {
        "name": "probe",
        "notebook": str(PROBE),
        "parameters": {"FAIL": False},
        "expected": {"answer": {"value": 42, "tolerance": 0.5}},
        **extra,
    }
    path = tmp_path / "probe.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x"}, "needs name and notebook"),
        ({"name": "x", "notebook": "nope.ipynb"}, "does not exist"),
        ({"name": "x", "notebook": str(PROBE), "parameters": {"limit": 1}}, "UPPER_CASE"),
        ({"name": "x", "notebook": str(PROBE), "pipeline": {"pre_flor": 1}}, "unknown key"),
        ({"name": "x", "notebook": str(PROBE), "colour": 1}, "allowed keys"),
    ],
)
def test_bad_specs_are_clear_errors(tmp_path: Path, data: dict, message: str) -> None:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_spec(tmp_path / "s.yaml")


def test_run_logs_params_metrics_tags_and_scrubs_secrets(
    tmp_path: Path, tracking: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    monkeypatch.setenv("VOYAGE_API_KEY", SECRET)
    out = run_experiment(load_spec(write_spec(tmp_path, pipeline={"pre_floor": 0.3})))
    assert out.status == "FINISHED" and out.ok
    assert out.metrics == {"answer": 42.0, "pre_floor": 0.3, "after": 1.0}  # pipeline block seen
    run = mlflow.get_run(out.run_id)
    assert run.data.params["config.pre_floor"] == "0.3" and run.data.params["param.FAIL"] == "False"
    assert run.data.tags["check"] == "OK"
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}", head)  # the tests run in a git checkout
    assert run.data.tags["git_commit"] == head  # the full commit, never "unknown"
    assert "embedder" in run.data.tags and "citegate_version" in run.data.tags
    everything = json.dumps([run.data.params, run.data.tags])
    for f in out.run_dir.rglob("*"):
        if f.is_file() and f.suffix != ".parquet":
            everything += f.read_text(encoding="utf-8", errors="replace")
    assert SECRET not in everything and "***" in everything
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(out.run_id)}
    assert {"notebook.ipynb", "report.html", "metrics.json", "tables"} <= artifacts
    assert (paths.runs_dir() / "index.html").read_text(encoding="utf-8").count("probe") >= 1


def test_failing_notebook_yields_a_failed_run_with_what_it_had(
    tmp_path: Path, tracking: str
) -> None:
    import mlflow

    out = run_experiment(load_spec(write_spec(tmp_path)), overrides={"FAIL": True})
    assert out.status == "FAILED" and "deliberate failure" in out.error
    assert out.metrics == {"answer": 42.0, "pre_floor": 0.18} and not out.ok
    run = mlflow.get_run(out.run_id)
    assert run.info.status == "FAILED" and run.data.metrics["answer"] == 42.0
    assert (out.run_dir / "report.html").exists()


def test_expectation_failure_is_reported(tmp_path: Path, tracking: str) -> None:
    spec = load_spec(
        write_spec(
            tmp_path,
            expected={
                "answer": {"value": 1, "tolerance": 0.1},
                "missing_metric": {"value": 0, "tolerance": 1},
            },
        )
    )
    out = run_experiment(spec)
    assert out.status == "FINISHED" and not out.ok
    assert {k: ok for k, (_, _, ok) in out.checks.items()} == {
        "answer": False,
        "missing_metric": False,
    }


def test_sweep_logs_nested_child_runs(tmp_path: Path, tracking: str) -> None:
    import mlflow

    out = run_experiment(load_spec(write_spec(tmp_path, sweep={"FAIL": [False]})))
    runs = mlflow.search_runs(search_all_experiments=True)
    children = runs[runs["tags.mlflow.parentRunId"] == out.run_id]
    assert len(children) == 1 and out.ok


SHIPPED = sorted(
    [*paths.EXPERIMENTS.glob("[0-9][0-9]_*.yaml"), *paths.EXPERIMENTS.glob("arms/*.yaml")]
)
# Notebook 04 needs the local LLM server; tests/e2e/test_fallback_llm.py runs it at its tiny profile
# with checks of its own.
RUN_ELSEWHERE = {"04_fallback_disclaimer": "runs in tests/e2e/test_fallback_llm.py"}


@pytest.mark.db
@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem, marks=[pytest.mark.skip(RUN_ELSEWHERE[p.stem])])
        if p.stem in RUN_ELSEWHERE
        else pytest.param(p, id=p.stem)
        for p in SHIPPED
    ],
)
def test_each_notebook_runs_with_tiny_parameters(
    path: Path, demo_db: str, tracking: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", demo_db)
    spec = load_spec(path)
    try:
        out = run_experiment(spec, profile="tiny")
    finally:
        forget_demo_notes(demo_db)
    assert out.status == "FINISHED", out.error
    assert out.metrics and all(math.isfinite(v) for v in out.metrics.values())
    assert list((out.run_dir / "figures").glob("*.png"))
    report = (out.run_dir / "report.html").read_text(encoding="utf-8")
    assert "Conclusion" in report and "import " not in report  # no code cells in the report
    if chromium():
        seen = browser_check(out.run_dir / "report.html", out.run_dir / "screenshot.png")
        assert seen["images"] >= 1 and seen["broken"] == 0 and not seen["overflow"], seen


def forget_demo_notes(url: str) -> None:
    """Notebook 07 imports the demo notes into the shared demo database: remove them, so no
    other test retrieving from it meets a curated note."""
    with db.connect(url) as conn:
        conn.execute("DELETE FROM curated_notes WHERE source = %s", (source_name(DEMO_NOTES),))
        conn.commit()


def test_every_shipped_experiment_loads_and_arms_select_their_pipeline() -> None:
    specs = [load_spec(p) for p in SHIPPED]
    assert len(specs) >= 5
    arms = {s.name: s.config("probe") for s in specs if "arms" in s.path.parts}
    assert arms["03_gate_roc_rrf_hybrid"].arm == "rrf_hybrid"
    assert arms["03_gate_roc_rrf_hybrid"].gate == "two_scale"


# Specs measured on production's pipeline (05: the gate it recommends must be fit on the notes
# production hands it, or its promotion would revert the retrieval; 06: its composers answer over
# production's notes and its recommendation changes production's answer stage alone; 07: its
# recommendation turns curated memory on over production's retrieval; 08: production's whole
# turn, its recommendation production's own config with the certified pointer floor);
# re-measured at a promotion.
ON_PRODUCTION = {
    "05_gate_signals",
    "06_answer_faithfulness",
    "07_curated_memory",
    "08_end_to_end",
}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_specs_pin_the_numbers_their_metrics_were_measured_on(path: Path) -> None:
    """A notebook run by hand answers with production (CONFIG = "production"); the shipped specs
    set the config their expected metrics were measured on (the design numbers, or production for
    `ON_PRODUCTION`), and the runner's config follows it."""
    spec = load_spec(path)
    assert ast.literal_eval(spec.notebook_params["CONFIG"].default) == "production"
    if spec.name in ON_PRODUCTION:
        assert "CONFIG" not in spec.parameters and spec.config_name() == "production"
        want = production().replace(**spec.pipeline)  # production names its own embedder
    else:
        assert spec.parameters["CONFIG"] == "design" and spec.config_name() == "design"
        want = DESIGN.replace(embedder="probe", **spec.pipeline)
    assert spec.config("probe") == want


def test_the_arm_spec_extends_03_and_holds_only_what_differs() -> None:
    base = load_spec(paths.EXPERIMENTS / "03_gate_roc.yaml")
    arm_path = paths.EXPERIMENTS / "arms" / "03_gate_roc_rrf_hybrid.yaml"
    arm = load_spec(arm_path)
    raw = yaml.safe_load(arm_path.read_text(encoding="utf-8"))
    assert raw["extends"] == "../03_gate_roc.yaml" and "parameters" not in raw
    assert set(raw) == {"extends", "name", "description", "pipeline", "headline", "expected"}
    assert (arm.notebook, arm.parameters, arm.profiles) == (
        base.notebook,
        base.parameters,
        base.profiles,
    )
    assert arm.name != base.name and arm.pipeline == {"arm": "rrf_hybrid", "gate": "two_scale"}
    assert set(arm.expected) != set(base.expected)


def test_extends_merges_parameters_and_profiles_and_replaces_the_rest(tmp_path: Path) -> None:
    write_spec(tmp_path, profiles={"tiny": {"SLEEP": 0.0}, "slow": {"SLEEP": 1.0}})
    child = tmp_path / "sub" / "child.yaml"
    child.parent.mkdir()
    child.write_text(
        yaml.safe_dump(
            {
                "extends": "../probe.yaml",
                "name": "child",
                "parameters": {"MAX_TOKENS": 8},
                "profiles": {"tiny": {"SLEEP": 0.5}},
                "expected": {"after": {"value": 1, "tolerance": 0}},
            }
        ),
        encoding="utf-8",
    )
    spec = load_spec(child)
    assert spec.name == "child" and spec.notebook == PROBE and spec.path == child
    assert spec.parameters == {"FAIL": False, "MAX_TOKENS": 8}
    assert spec.profiles == {"tiny": {"SLEEP": 0.5}, "slow": {"SLEEP": 1.0}}
    assert set(spec.expected) == {"after"}  # replaced, not merged
    assert spec.config_name() == "design"  # the probe notebook has no CONFIG parameter


@pytest.mark.parametrize(
    ("child", "message"),
    [
        ({"extends": "../probe.yaml"}, "needs its own name"),
        ({"extends": 3, "name": "c"}, "extends must be the path of a spec"),
        ({"extends": "../nowhere.yaml", "name": "c"}, "cannot read the experiment spec"),
        ({"extends": "child.yaml", "name": "c"}, "makes a cycle"),
    ],
)
def test_bad_extends_is_a_clear_error(tmp_path: Path, child: dict, message: str) -> None:
    write_spec(tmp_path)
    path = tmp_path / "sub" / "child.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(child), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_spec(path)


def test_spec_config_follows_the_config_parameter(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, pipeline={"pre_floor": 0.3}))
    assert spec.config("probe") == DESIGN.replace(embedder="probe", pre_floor=0.3)
    prod = spec.config("probe", {"CONFIG": "production"})
    assert prod == production().replace(pre_floor=0.3)
