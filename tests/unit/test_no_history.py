"""Code, comments, specs, tests, notebooks and docs say what the product does and why, never how
it got there: no development issue or stop numbers, no dates of work. A choice is explained by
its reason and the measured figure, with the command that reproduces it."""

from __future__ import annotations

import json
import re
import subprocess

from citegate.core import paths

# the word issue or stop followed by a number, with or without '#'
TRACKER = re.compile(r"\b(?:issues?|stops?)\s?#?\d+", re.IGNORECASE)
# a date next to a word that makes it a date of work ("seen", "measured", "until", "since", ...)
WORK_DATE = re.compile(
    r"\b(?:seen|measured|until|since|as of|on|in)\s+(?:\d{4}-\d{2}-\d{2})\b", re.IGNORECASE
)
SKIPPED = ("data/",)


def tracked_text_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=paths.ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [p for p in out if not p.startswith(SKIPPED)]


def numbered_lines(name: str, text: str) -> list[tuple[str, str]]:
    """(place, line) pairs of a file; a notebook's are its cells' sources (its outputs are what a
    run printed, not what the project says), placed as cell number and line."""
    if not name.endswith(".ipynb"):
        return [(str(n), line) for n, line in enumerate(text.splitlines(), 1)]
    cells = json.loads(text)["cells"]
    return [
        (f"cell {c}:{n}", line)
        for c, cell in enumerate(cells, 1)
        for n, line in enumerate("".join(cell.get("source", [])).splitlines(), 1)
    ]


def test_no_file_names_a_development_issue_a_stop_or_a_date_of_work() -> None:
    found = []
    for name in tracked_text_files():
        try:
            text = (paths.ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue  # binary files (figures) and files deleted but not yet committed
        for place, line in numbered_lines(name, text):
            if TRACKER.search(line) or WORK_DATE.search(line):
                found.append(f"{name}:{place}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_are_for() -> None:
    n, day = 20, "2026-12-03"  # built at run time, so this file holds no such line itself
    for line in (f"(issue #{n})", f"Issue {n}: hostile", f"the 346 ms of stop {n}", f"seen {day}"):
        assert TRACKER.search(line) or WORK_DATE.search(line), line
    for line in ("date: 2026-11-20", "the issue of 3 notes", "BG 2.13", "run 20261201T224706Z"):
        assert not (TRACKER.search(line) or WORK_DATE.search(line)), line


def test_a_notebook_is_read_by_its_sources_not_its_outputs() -> None:
    n = 20
    cell = {"source": ["x = 1\n", f"# issue {n}"], "outputs": [{"text": [f"stop {n}"]}]}
    lines = numbered_lines("a.ipynb", json.dumps({"cells": [{"source": ["y = 2"]}, cell]}))
    assert lines == [("cell 1:1", "y = 2"), ("cell 2:1", "x = 1"), ("cell 2:2", f"# issue {n}")]
