"""Fault cases of the experiment runner, end to end with real papermill and a throwaway MLflow:
secrets and look-alike variables, failing sweep children, hung cells, bad specs."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from citegate.cli import main
from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.tracking.recorder import Recorder
from citegate.tracking.runner import RunOutcome, run_experiment, run_folder
from citegate.tracking.spec import load_spec

PROBE = Path(__file__).parents[1] / "fixtures" / "notebooks" / "probe.ipynb"
FAKE_KEY = "sk-fake-Qm3Zt81PLEASEneverLOGme"


def write_spec(folder: Path, **extra: object) -> Path:
    spec = {
        "name": "probe",
        "notebook": str(PROBE),
        "parameters": {"FAIL": False, "MAX_TOKENS": 16},
        "expected": {"answer": {"value": 42, "tolerance": 0.5}},
        **extra,
    }
    path = folder / "probe.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


@pytest.fixture()
def tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    return tmp_path


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunOutcome, Path]]:
    """One probe run with TOKENIZERS_PARALLELISM=false and a fake key the notebook prints, tabulates
    and notes; a sweep child records the config it searched (the parent records none)."""
    tmp = tmp_path_factory.mktemp("leaky")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp / 'mlflow.db'}")
        mp.setenv("CITEGATE_VAR", str(tmp / "var"))
        mp.setenv("TOKENIZERS_PARALLELISM", "false")
        mp.setenv("OPENAI_API_KEY", FAKE_KEY)
        spec = load_spec(write_spec(tmp, sweep={"RECORD_CONFIG": [True]}))
        yield run_experiment(spec), tmp


def test_lookalike_variable_and_fake_key_leave_artifacts_intact(
    leaky_run: tuple[RunOutcome, Path],
) -> None:
    import mlflow

    out, tmp = leaky_run
    assert out.status == "FINISHED" and out.ok, out.error
    run = mlflow.get_run(out.run_id)
    params = run.data.params
    expected = {"param.FAIL", "param.MAX_TOKENS", "profile", "timeout_s"}
    assert expected <= set(params) and params["param.MAX_TOKENS"] == "16"
    assert run.data.tags["git_dirty"] in ("true", "false")
    assert run.data.tags["info.max_tokens"] == "16" and run.data.tags["info.leaked"] == "***"
    notebook = json.loads((out.run_dir / "notebook.ipynb").read_text(encoding="utf-8"))
    assert notebook["cells"][-1]["metadata"]["papermill"]["exception"] is False
    assert "parallelism is false" in json.dumps(notebook)
    assert "parallelism is false" in (out.run_dir / "report.html").read_text(encoding="utf-8")
    assert FAKE_KEY not in json.dumps([params, run.data.tags])
    leaks = [
        f
        for f in [*(tmp / "var").rglob("*"), tmp / "mlflow.db"]
        if f.is_file() and FAKE_KEY.encode() in f.read_bytes()
    ]
    assert not leaks
    assert "***" in (out.run_dir / "tables" / "leak.csv").read_text(encoding="utf-8")


def test_datasets_are_logged_from_the_rows_used(leaky_run: tuple[RunOutcome, Path]) -> None:
    import mlflow

    out, _ = leaky_run
    run = mlflow.get_run(out.run_id)
    inputs = {d.dataset.name: d for d in run.inputs.dataset_inputs}
    assert set(inputs) == {"probe-set"}  # the set without records is not made into a fake frame
    probe = inputs["probe-set"]
    assert json.loads(probe.dataset.profile)["num_rows"] == 3
    assert probe.dataset.digest == "d" * 36
    assert probe.dataset.source and "probe-set.jsonl" in probe.dataset.source
    assert {t.key: t.value for t in probe.tags}["build_id"] == "probe@1"
    assert run.data.tags["dataset.probe-counted"].startswith("rows=7 digest=" + "e" * 64)


def test_logged_config_is_what_the_notebook_recorded(leaky_run: tuple[RunOutcome, Path]) -> None:
    import mlflow

    out, _ = leaky_run
    parent = mlflow.get_run(out.run_id)
    (child,) = mlflow.search_runs(
        search_all_experiments=True,
        filter_string=f"tags.mlflow.parentRunId = '{out.run_id}'",
        output_format="list",
    )
    assert child.data.params["config.corpora"] == "['probe-split']"
    assert child.data.tags["config_source"] == "notebook"
    assert parent.data.params["config.corpora"] == "['gita']"
    assert parent.data.tags["config_source"].startswith("spec")


def test_recorded_dataset_rows_must_match_its_records(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    with pytest.raises(ValueError, match="rows=2 but 1 records"):
        rec.dataset("s", "d" * 64, 2, "src", "b@1", records=[{"id": "q1"}])


def test_failing_sweep_child_fails_parent_and_command(
    tmp_path: Path, tracking: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import mlflow

    spec = write_spec(tmp_path, sweep={"FAIL": [False, True]}, parameters={"FAIL": False})
    assert main(["run", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "sweep child FAIL=True failed: RuntimeError: deliberate failure" in err
    runs = mlflow.search_runs(search_all_experiments=True, output_format="list")
    by_name = {r.info.run_name: r for r in runs}
    assert by_name["FAIL=True"].info.status == "FAILED"
    assert by_name["FAIL=False"].info.status == "FINISHED"
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert parent.info.status == "FAILED" and parent.data.tags["status"] == "FAILED"
    assert "FAIL=True" in parent.data.tags["error"]
    summary = next(paths.runs_dir().glob("probe/*/summary.json"))
    assert json.loads(summary.read_text(encoding="utf-8"))["status"] == "FAILED"


def test_notebook_exception_is_shown_in_full(
    tmp_path: Path, tracking: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import mlflow

    message = " ".join(f"word{i}" for i in range(600)) + " END-OF-MESSAGE"  # ~5,000 characters
    spec = write_spec(tmp_path, parameters={"FAIL": True, "FAIL_MESSAGE": message})
    assert main(["run", str(spec)]) == 1
    assert f"error: RuntimeError: {message} (cell" in capsys.readouterr().err
    run_dir = next(paths.runs_dir().glob("probe/*/"))
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "FAILED" and summary["error"].startswith(f"RuntimeError: {message}")
    report = (run_dir / "report.html").read_text(encoding="utf-8")
    assert f"<b>error</b>: RuntimeError: {message}" in report
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
    assert run.info.status == "FAILED"


def test_hung_cell_times_out_as_a_failed_run(tmp_path: Path, tracking: Path) -> None:
    import mlflow

    spec = load_spec(write_spec(tmp_path, timeout_s=3))
    clock = time.monotonic()
    out = run_experiment(spec, overrides={"SLEEP": 60})
    assert time.monotonic() - clock < 50
    assert out.status == "FAILED" and "timed out after 3 s" in out.error, out.error
    assert mlflow.get_run(out.run_id).info.status == "FAILED"
    assert out.metrics == {"answer": 42.0, "pre_floor": 0.18}  # what it had before the hang


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"parameters": {"SLEPE": 1}},
            r"parameters: unknown parameter 'SLEPE'.*did you mean SLEEP",
        ),
        (
            {"parameters": {"SLEEP": "eight"}},
            r"parameters: parameter SLEEP = 'eight' must be float",
        ),
        ({"parameters": {"MAX_TOKENS": 1.5}}, r"MAX_TOKENS = 1.5 must be int"),
        ({"parameters": {"MAX_TOKENS": True}}, r"MAX_TOKENS = True must be int"),
        ({"parameters": {"FAIL": "no"}}, r"FAIL = 'no' must be bool"),
        ({"parameters": {"RUN_DIR": "/tmp"}}, r"RUN_DIR cannot be set"),
        ({"profiles": {"tiny": {"LIMTI": 8}}}, r"profile 'tiny': unknown parameter 'LIMTI'"),
        ({"sweep": {"SLEEP": [0, "long"]}}, r"sweep: parameter SLEEP = 'long' must be float"),
    ],
)
def test_bad_parameters_are_refused_before_anything_runs(
    tmp_path: Path,
    tracking: Path,
    capsys: pytest.CaptureFixture[str],
    extra: dict,
    message: str,
) -> None:
    path = write_spec(tmp_path, **extra)
    with pytest.raises(ConfigError, match=message):
        load_spec(path)
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("citegate: error: ") and str(path) in err and "Traceback" not in err
    assert main(["run", str(path)]) == 2
    assert not (tracking / "var" / "runs").exists() and not (tracking / "mlflow.db").exists()


def test_numbers_fit_where_the_notebook_declares_float(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, parameters={"SLEEP": 0, "FAIL": False}))
    assert spec.resolved(None, {"SLEEP": 1})["SLEEP"] == 1


def test_bad_set_override_is_refused_in_dry_run(
    tmp_path: Path, tracking: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_spec(tmp_path)
    assert main(["run", str(path), "--dry-run", "--set", "SLEEP=forever"]) == 2
    assert "--set: parameter SLEEP = 'forever' must be float" in capsys.readouterr().err
    assert main(["run", str(path), "--dry-run", "--set", "MAX_TOKNES=8"]) == 2
    assert "did you mean MAX_TOKENS" in capsys.readouterr().err
    assert main(["run", str(path), "--dry-run", "--set", "SLEEP=2"]) == 0
    assert "timeout   3600 s" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"expected": {"m": 0.978}}, r"expected\.m must be a mapping \{value: NUMBER"),
        ({"expected": {"m": {"value": "high", "tolerance": 1}}}, r"expected\.m\.value must be"),
        ({"expected": {"m": {"value": 1}}}, r"expected\.m must be a mapping"),
        ({"parameters": [1, 2]}, r"parameters must be a mapping"),
        ({"profiles": [{"LIMIT": 1}]}, r"profiles must be a mapping"),
        ({"profiles": {"tiny": [1]}}, r"profiles\.tiny must be a mapping"),
        ({"sweep": {"FAIL": True}}, r"sweep\.FAIL must be a non-empty list"),
        ({"sweep": [1]}, r"sweep must be a mapping"),
        ({"timeout_s": 0}, r"timeout_s must be a positive number"),
        ({"timeout_s": "1h"}, r"timeout_s must be a positive number"),
        ({"headline": "answer"}, r"headline must be a list"),
        ({"name": "../escape"}, r"name '\.\./escape' must be a simple name"),
        ({"name": "a/b"}, r"must be a simple name"),
        ({"name": ".."}, r"must be a simple name"),
    ],
)
def test_malformed_spec_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: dict, message: str
) -> None:
    path = write_spec(tmp_path, **extra)
    with pytest.raises(ConfigError, match=message) as info:
        load_spec(path)
    assert str(path) in str(info.value)
    assert main(["run", str(path), "--dry-run"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_run_folder_never_leaves_var_runs(tmp_path: Path, tracking: Path) -> None:
    spec = dataclasses.replace(load_spec(write_spec(tmp_path)), name="../../escape")
    with pytest.raises(ConfigError, match="outside"):
        run_folder(spec, "20250101T000000Z", "0123456789abcdef")
    with pytest.raises(ConfigError, match="outside"):
        run_experiment(spec)
    assert not (tracking / "escape").exists() and not (tracking / "var" / "escape").exists()
    assert not (tracking / "mlflow.db").exists()  # refused before an MLflow run was opened
