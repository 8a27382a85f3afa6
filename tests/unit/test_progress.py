"""Progress bars with a total, as the terminal and the runner's combined display see them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from citegate.core.progress import State, bar, clock, read_state, report_to


@pytest.fixture()
def sink(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "progress.json"
    report_to(path)
    yield path
    report_to(None)


def test_a_bar_knows_its_total_from_the_iterable(sink: Path) -> None:
    with bar(list(range(7)), desc="retrieve", unit="q") as b:
        assert b.total == 7
        for _ in b:
            pass
    state = read_state(sink)
    assert state is not None and (state.n, state.total, state.desc, state.unit) == (
        7,
        7,
        "retrieve",
        "q",
    )


def test_a_hidden_bar_prints_nothing_but_still_reports(
    sink: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in bar(range(3), total=3, desc="fallback smollm2", unit="call", disable=True):
        pass
    out, err = capsys.readouterr()
    assert out == err == ""
    state = read_state(sink)
    assert state is not None and state.n == 3 and state.total == 3


def test_without_a_sink_nothing_is_written(tmp_path: Path) -> None:
    report_to(None)
    for _ in bar(range(2), disable=True):
        pass
    assert read_state(tmp_path / "progress.json") is None


def test_state_line_says_what_it_knows() -> None:
    assert State("retrieve", 120, 250, 60.0, 2.0, "q").line() == "retrieve 120/250 q, 1:05 left"
    assert State("ingest gita", 5, None, 1.0, 5.0, "frag").line() == "ingest gita 5 frag"
    assert State("x", 0, 10, 0.0, None, "it").eta_s() is None


def test_clock() -> None:
    assert (clock(5), clock(65), clock(3725)) == ("0:05", "1:05", "1:02:05")


def test_an_unreadable_state_is_none(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text("{not json", encoding="utf-8")
    assert read_state(tmp_path / "p.json") is None
