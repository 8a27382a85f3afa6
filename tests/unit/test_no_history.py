"""Code, comments, specs, tests, notebooks and docs say what the product does and why, never how
it got there: no development issue or stop numbers, no dates of work, no production version tags
in names, no narrated past ("it did X before", "as it was released", "the earlier copies", a
session or a run told as a story). A choice is explained by its reason and the measured figure,
with the command that reproduces it."""

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
# A version tag in a name or a comment: a bare v<number> word or a name ending in _v<number>.
# Production's version is the production file's `version:` counter, never part of a name. Not a
# tag: a dotted release (v2.3.1), or a model or API id, where the v<number> follows '-', '/', '.'
# or '@' (e5-small-v2, /v1/chat).
VERSION_TAG = re.compile(r"(?<![\w./@-])v\d+\b(?!\.\d)|(?<=[a-z])_v\d+\b")
# The past told as a story: a release or an earlier copy as the reference, a session or a run as
# the time something was seen, first-person measurement, a fix as a point in time.
NARRATED = re.compile(
    r"\bas shipped\b|\bformer(?:ly)?\b|\byesterday\b"
    r"|\b(?:this|last|previous|earlier|that) session\b"
    r"|\b(?:in|on|from|during) the (?:last|previous|latest|earlier) run\b"
    r"|\bwe (?:measured|saw|found|ran|tried|fixed)\b"
    r"|\b(?:before|after|until) the (?:fix|change|rewrite|refactor)\b",
    re.IGNORECASE,
)
# The phrase USED_TO spells, as the past (a habit that ended), not as a tool's purpose: after "is",
# "were", "never" and the like it is a purpose; after anything else, the past.
USED_TO = re.compile(r"(?:\b(\w+)\s+)?\bused to\b", re.IGNORECASE)
PURPOSE = {"is", "are", "was", "were", "be", "been", "being", "never", "not", "only", "also"}
# Committed data (corpora, questions, model files) is quoted, not written by the project.
SKIPPED = ("data/", "experiments/models/")
# Lines in files that other branches rewrite: each entry (path, text on the line). It must be
# empty: the lead rewrites these lines after merging those branches, then removes the entries.
OWNED_ELSEWHERE: tuple[tuple[str, str], ...] = ()


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


def tells_history(line: str) -> bool:
    """Whether a line names an issue, a stop, a date of work or a version tag, or narrates."""
    if TRACKER.search(line) or WORK_DATE.search(line) or VERSION_TAG.search(line):
        return True
    if NARRATED.search(line):
        return True
    return any((m.group(1) or "").lower() not in PURPOSE for m in USED_TO.finditer(line))


def test_no_file_names_a_development_issue_a_date_a_version_tag_or_narrates() -> None:
    found = []
    for name in tracked_text_files():
        try:
            text = (paths.ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue  # binary files (figures) and files deleted but not yet committed
        for place, line in numbered_lines(name, text):
            if tells_history(line) and not any(
                name == path and part in line for path, part in OWNED_ELSEWHERE
            ):
                found.append(f"{name}:{place}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_are_for() -> None:
    # built at run time, so this file holds no such line itself
    n, day, v, past = 20, "2026-12-03", "v", "used" + " to"
    caught = (
        f"(issue #{n})", f"Issue {n}: hostile", f"the 346 ms of stop {n}", f"seen {day}",
        f"the levers_{v}7 arm", f"as in {v}6's provenance", f"recall of {v}12",
        "as " + "shipped in the release", "the five for" + "mer copies", "it was for" + "merly 0.45",
        "measured in this ses" + "sion", "in the " + "last run it took 3 s",
        "we " + "measured 0.9", "yester" + "day's bench", "before the " + "fix it hung",
        f"the study {past} hard-code them", f"{past.capitalize()} raise an error",
    )  # fmt: skip
    for line in caught:
        assert tells_history(line), line
    kept = (
        "date: 2026-11-20", "the issue of 3 notes", "BG 2.13", "run 20261201T224706Z",
        "intfloat/multilingual-e5-small-v2", "gpt-4o", "what changed in v2.3.1?",
        "POST /v1/chat/completions", "version: 12", "production's version 12",
        f"its groups were never {past} fit", f"a key is {past} sign", "HTTP404 and IPv4",
        "a pytest session-scoped fixture", "the reload reaches this connection",
    )  # fmt: skip
    for line in kept:
        assert not tells_history(line), line


def test_a_notebook_is_read_by_its_sources_not_its_outputs() -> None:
    n = 20
    cell = {"source": ["x = 1\n", f"# issue {n}"], "outputs": [{"text": [f"stop {n}"]}]}
    lines = numbered_lines("a.ipynb", json.dumps({"cells": [{"source": ["y = 2"]}, cell]}))
    assert lines == [("cell 1:1", "y = 2"), ("cell 2:1", "x = 1"), ("cell 2:2", f"# issue {n}")]
