"""Progress bars with a total and an ETA, on the terminal and in `citegate run`'s combined display.

Every long step (ingest's embedding, the retrieval pass, the LLM studies) makes its bar with `bar()`,
a tqdm bar given its total up front, so tqdm shows the count, the rate and the time left. A notebook
executed by `citegate run` writes its output into the executed notebook, not to the terminal, so a
bar also writes its state (description, done, total, elapsed, rate) as JSON to the file that
`report_to()` named: the notebook's `Recorder` points it at the run folder's `progress.json`, and
the runner's display reads that file for every experiment it is running.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from tqdm.std import tqdm as std_tqdm

PROGRESS_FILE = "progress.json"
_SINK: list[Path] = []  # the file bars of this process report to (none: the terminal only)


def report_to(path: Path | None) -> None:
    """Make every bar of this process also write its state to `path` (None: stop)."""
    _SINK[:] = [Path(path)] if path is not None else []


class _Reporting:
    """Mixed into a tqdm class: each display (throttled by `mininterval`) and the close also write
    the bar's state to the `report_to()` file."""

    def display(self, *args: Any, **kwargs: Any) -> Any:
        """Draw as tqdm does, then report the state."""
        shown = super().display(*args, **kwargs)  # type: ignore[misc]
        self.report()
        return shown

    def close(self) -> None:
        """Report the final count, then close."""
        if not self.disable:  # type: ignore[attr-defined]
            self.report()
        super().close()  # type: ignore[misc]

    def report(self) -> None:
        """Write {desc, n, total, elapsed, rate, unit} atomically to the sink, if there is one."""
        if not _SINK or self.disable:  # type: ignore[attr-defined]
            return
        state = self.format_dict  # type: ignore[attr-defined]
        rate = state["rate"] or (state["n"] / state["elapsed"] if state["elapsed"] else None)
        data = {k: state[k] for k in ("n", "total", "elapsed", "unit")}
        data.update(desc=self.desc, rate=rate)  # type: ignore[attr-defined]
        tmp = _SINK[0].with_name(f".{_SINK[0].name}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(_SINK[0])
        except OSError:
            pass  # a display aid: a run folder that vanished must not fail the work


class Bar(_Reporting, tqdm):  # type: ignore[misc,type-arg]
    """A tqdm bar (a widget in a notebook, text on a terminal) that also reports its state."""


class HiddenBar(_Reporting, std_tqdm):  # type: ignore[misc,type-arg]
    """A bar the caller asked not to show (`progress=False`): drawn to nowhere, so a notebook's
    output is unchanged, but still reported to the runner's display."""


class _Nowhere(io.StringIO):
    """A text stream that keeps nothing."""

    def write(self, s: str) -> int:
        """Drop `s`."""
        return len(s)


def bar(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    disable: bool = False,
) -> tqdm:
    """A bar over `iterable` (or updated by hand) with its total: `len(iterable)` when not given.
    `disable` hides it from the terminal and the notebook; it still reports to `report_to()`'s file."""
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {"total": total, "desc": desc, "unit": unit, "mininterval": 0.5}
    if disable and _SINK:
        return HiddenBar(iterable, file=_Nowhere(), **kwargs)
    return Bar(iterable, disable=disable, **kwargs)


@dataclass(frozen=True)
class State:
    """A reported bar state, as the runner's display reads it back."""

    desc: str
    n: float
    total: float | None
    elapsed: float
    rate: float | None
    unit: str

    def eta_s(self) -> float | None:
        """Seconds left at the current rate (None without a total or a rate)."""
        if not self.total or not self.rate:
            return None
        return max(self.total - self.n, 0) / self.rate

    def line(self) -> str:
        """'retrieve gita 120/250 q, 2:10 left' (or without the part it cannot know)."""
        total = f"/{self.total:g}" if self.total else ""
        eta = self.eta_s()
        left = f", {clock(eta)} left" if eta is not None else ""
        return f"{self.desc} {self.n:g}{total} {self.unit}{left}".strip()


def read_state(path: Path) -> State | None:
    """The last state a bar reported to `path`, or None (no file yet, or unreadable)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return State(
            str(data["desc"]),
            float(data["n"]),
            None if data["total"] is None else float(data["total"]),
            float(data["elapsed"]),
            None if data["rate"] is None else float(data["rate"]),
            str(data["unit"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clock(seconds: float) -> str:
    """Seconds as m:ss (h:mm:ss past an hour)."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"
