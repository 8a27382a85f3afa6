"""Experiments side by side by lane (`citegate.tracking.schedule`): the same numbers as a serial run,
lanes really overlapping, one summary; real papermill, a throwaway MLflow store."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from citegate.cli import main
from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.tracking.runner import RunOutcome, run_experiment
from citegate.tracking.schedule import Finished, lanes_of, run_scheduled, summary
from citegate.tracking.spec import ExperimentSpec, load_spec

PROBE = Path(__file__).parents[1] / "fixtures" / "notebooks" / "probe.ipynb"


@pytest.fixture()
def tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    return tmp_path


def probe_spec(folder: Path, name: str, lane: str, **params: Any) -> Path:
    spec = {
        "name": name,
        "lane": lane,
        "notebook": str(PROBE),
        "parameters": {"FAIL": False, **params},
        "expected": {"answer": {"value": 42, "tolerance": 0.5}},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def runner(
    overrides: dict[str, dict[str, Any]] | None = None, profile: str | None = None
) -> Callable[[ExperimentSpec, Callable[[Path], None]], RunOutcome]:
    def run(spec: ExperimentSpec, on_start: Callable[[Path], None]) -> RunOutcome:
        extra = (overrides or {}).get(spec.name, {})
        return run_experiment(spec, profile=profile, overrides=extra, on_start=on_start)

    return run


def test_lanes_keep_the_given_order_within_a_lane(tmp_path: Path) -> None:
    specs = [
        load_spec(probe_spec(tmp_path, n, lane))
        for n, lane in [("a", "main"), ("b", "llm"), ("c", "main"), ("d", "llm")]
    ]
    assert lanes_of(specs) == {"main": [0, 2], "llm": [1, 3]}


def test_lanes_run_side_by_side_with_the_serial_numbers(tmp_path: Path, tracking: Path) -> None:
    import mlflow

    specs = [
        load_spec(probe_spec(tmp_path, "slow_main", "main", SLEEP=3.0)),
        load_spec(probe_spec(tmp_path, "slow_llm", "llm", SLEEP=3.0)),
        load_spec(probe_spec(tmp_path, "after_main", "main", FAIL=True)),
    ]
    seen: list[str] = []
    both = run_scheduled(specs, runner(), show=False, announce=lambda f: seen.append(f.spec.name))
    serial = run_scheduled(specs, runner(), parallel=False, show=False)
    assert [f.spec.name for f in both] == ["slow_main", "slow_llm", "after_main"]  # given order
    assert [f.outcome.metrics for f in both] == [f.outcome.metrics for f in serial]
    assert [f.outcome.status for f in both] == ["FINISHED", "FINISHED", "FAILED"]
    assert sorted(seen) == sorted(s.name for s in specs)
    assert {f.lane for f in both} == {"main", "llm"} and {f.lane for f in serial} == {"all"}
    runs = {f.spec.name: mlflow.get_run(f.outcome.run_id).info for f in both}
    first, second = runs["slow_main"], runs["slow_llm"]
    assert first.start_time < second.end_time and second.start_time < first.end_time  # overlap
    assert runs["after_main"].start_time >= first.end_time  # one lane: one after the other
    text = summary(both, 12.0)
    assert "slow_llm" in text and "1 OK 0 FAIL" in text and "total: 2 of 3 experiments OK" in text


def test_an_exception_stops_its_lane_and_is_raised_after_the_others(
    tmp_path: Path, tracking: Path
) -> None:
    specs = [
        load_spec(probe_spec(tmp_path, "breaks", "main")),
        load_spec(probe_spec(tmp_path, "skipped", "main")),
        load_spec(probe_spec(tmp_path, "other", "llm")),
    ]
    ran: list[str] = []

    def run(spec: ExperimentSpec, on_start: Callable[[Path], None]) -> RunOutcome:
        ran.append(spec.name)
        if spec.name == "breaks":
            raise RuntimeError("runner broke")
        return run_experiment(spec, on_start=on_start)

    with pytest.raises(RuntimeError, match="runner broke"):
        run_scheduled(specs, run, show=False)
    assert sorted(ran) == ["breaks", "other"]


def test_citegate_run_prints_each_result_and_one_summary(
    tmp_path: Path, tracking: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = probe_spec(tmp_path, "one", "main")
    b = probe_spec(tmp_path, "two", "llm", FAIL=True)
    assert main(["run", str(a), str(b)]) == 1
    out, err = capsys.readouterr()
    assert "== one: FINISHED" in out and "== two: FAILED" in out and "deliberate failure" in err
    table = out[out.index("experiment ") :]
    assert table.count("report.html") == 2 and "total: 1 of 2 experiments OK" in table
    assert str(paths.runs_dir()) in table


@pytest.mark.db
@pytest.mark.slow
def test_02_beside_04_gives_the_serial_numbers(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real notebooks with every cache cold in each pass (its own CITEGATE_CACHE and CITEGATE_VAR):
    the retrieval pass of 02 and the LLM calls of 04 running at once, against the same PostgreSQL,
    record exactly the metrics they record one after the other, with the kernels of both
    lanes held to one thread each (`ThreadCap`)."""
    monkeypatch.setenv("DATABASE_URL", demo_db)
    specs = [
        load_spec(paths.EXPERIMENTS / "02_rerank_calibration.yaml"),
        load_spec(paths.EXPERIMENTS / "04_fallback_disclaimer.yaml"),
    ]
    assert [s.lane for s in specs] == ["main", "second"]
    small_04 = {"LANGUAGES": ["en"], "VARIANTS": ["asked_painted"]}
    results: list[list[Finished]] = []
    for parallel in (True, False):
        where = tmp_path / ("side_by_side" if parallel else "serial")
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{where / 'mlflow.db'}")
        monkeypatch.setenv("CITEGATE_VAR", str(where / "var"))
        monkeypatch.setenv("CITEGATE_CACHE", str(where / "cache"))
        run = runner({"04_fallback_disclaimer": small_04}, profile="tiny")
        results.append(run_scheduled(specs, run, parallel=parallel, show=False))
    side_by_side, serial = results
    for a, b in zip(side_by_side, serial, strict=True):
        assert a.outcome.status == b.outcome.status == "FINISHED", a.outcome.error
        assert numbers(a.outcome.metrics) == numbers(b.outcome.metrics) and a.outcome.metrics
        assert all(math.isfinite(v) for v in a.outcome.metrics.values())


def numbers(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics a run computes from its data: all but the measured wall times (latency_s_*)."""
    return {k: v for k, v in metrics.items() if not k.startswith("latency_s")}


@pytest.mark.parametrize("lane", ["", "two words", 3])
def test_a_bad_lane_is_a_clear_error(tmp_path: Path, lane: object) -> None:
    with pytest.raises(ConfigError, match="lane must be a simple name"):
        load_spec(probe_spec(tmp_path, "x", lane))  # type: ignore[arg-type]
