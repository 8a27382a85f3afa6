"""Lanes side by side get one core each: `ThreadCap` sets the native thread-pool variables the
kernels inherit while two or more lanes run, and removes them when one is left."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from citegate.tracking.runner import RunOutcome
from citegate.tracking.schedule import THREAD_VARS, ThreadCap, run_scheduled
from citegate.tracking.spec import ExperimentSpec


def test_the_cap_holds_while_two_lanes_run_and_lifts_when_one_is_left() -> None:
    env: dict[str, str] = {}
    cap = ThreadCap(2, env)
    assert env == dict.fromkeys(THREAD_VARS, "1")
    cap.lane_ended()
    assert env == {}
    cap.close()
    assert env == {}


def test_one_lane_is_never_capped_and_a_users_setting_is_kept() -> None:
    env = {"OMP_NUM_THREADS": "4", "PATH": "/bin"}
    cap = ThreadCap(1, env)
    assert env == {"OMP_NUM_THREADS": "4", "PATH": "/bin"}
    cap.close()
    three = ThreadCap(3, env)
    assert env["OMP_NUM_THREADS"] == "4" and env["OPENBLAS_NUM_THREADS"] == "1"
    three.lane_ended()
    assert env["OPENBLAS_NUM_THREADS"] == "1"  # two lanes still run
    three.close()
    assert env == {"OMP_NUM_THREADS": "4", "PATH": "/bin"}


def spec(name: str, lane: str) -> ExperimentSpec:
    return ExperimentSpec(name, Path(f"{name}.ipynb"), "", {}, {}, {}, {}, lane=lane)


def test_kernels_started_beside_another_lane_see_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in THREAD_VARS:
        monkeypatch.delenv(name, raising=False)
    seen: dict[str, str | None] = {}

    def run(s: ExperimentSpec, on_start: Callable[[Path], None]) -> RunOutcome:
        if s.name == "after":  # starts once the other lane has ended
            while any(t.name == "lane-llm" for t in threading.enumerate()):
                time.sleep(0.01)
        seen[s.name] = os.environ.get("OMP_NUM_THREADS")
        if s.name == "first":
            time.sleep(0.2)
        return RunOutcome("r", Path("."), "FINISHED", {}, {})

    run_scheduled(
        [spec("first", "main"), spec("llm", "llm"), spec("after", "main")], run, show=False
    )
    assert seen == {"first": "1", "llm": "1", "after": None}
    assert not any(name in os.environ for name in THREAD_VARS)
    run_scheduled([spec("alone", "main")], run, show=False)
    assert seen["alone"] is None
