"""The documentation: the site builds in strict mode (a broken link or a page missing from the
navigation fails), every `citegate` command and flag the README and the pages quote exists, and
the README stays short enough to read in five minutes."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from citegate.cli import build_parser
from citegate.core import paths

DOCS = paths.ROOT / "docs"
README = paths.ROOT / "README.md"
MAX_README_LINES = 200


def documents() -> list[Path]:
    return [README, *sorted((DOCS / "pages").rglob("*.md"))]


def quoted_commands(text: str) -> list[list[str]]:
    """Every `citegate ...` command line a document quotes: a line of a code block whose first
    word is the command (`citegate`, `.venv/bin/citegate`, after an optional `$ ` prompt), or an
    inline code span that starts with it."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    lines = [line for block in blocks for line in block.splitlines()]
    lines += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    out = []
    for line in lines:
        m = re.match(r"\s*(?:\$\s+)?(?:\S*/)?citegate\s+(.*)", line)
        if m:
            words = m.group(1).split(" # ")[0].split("  #")[0].strip()
            try:
                out.append(shlex.split(words))
            except ValueError:
                out.append(words.split())
    return out


def _sub(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def check(words: list[str]) -> str:
    """ "" when the command and every flag it uses exist, else what is wrong."""
    parser = build_parser()
    chosen, path = parser, ["citegate"]
    for w in words:
        subs = _sub(chosen)
        if not subs or w.startswith(("-", "<")):  # a flag, or a placeholder such as <command>
            break
        if w not in subs:
            return f"{' '.join(path)}: no subcommand {w!r}"
        chosen, path = subs[w], [*path, w]
    known = {o for a in chosen._actions for o in a.option_strings} | {"--debug"}
    flags = [w.split("=")[0] for w in words if w.startswith("--")]
    bad = [f for f in flags if f not in known]
    return f"{' '.join(path)}: no flag {bad}" if bad else ""


def test_every_quoted_command_and_flag_exists() -> None:
    problems = [
        f"{doc.relative_to(paths.ROOT)}: citegate {' '.join(words)}: {why}"
        for doc in documents()
        for words in quoted_commands(doc.read_text(encoding="utf-8"))
        if (why := check(words))
    ]
    assert not problems, "\n".join(problems)
    assert len([w for d in documents() for w in quoted_commands(d.read_text("utf-8"))]) > 40


def test_the_checker_catches_a_made_up_flag_and_command() -> None:
    assert check(["ask", "--answer", "q"]) == ""
    assert "no flag" in check(["ask", "--verbose", "q"])
    assert "no subcommand" in check(["memory", "purge"])
    assert check(["memory", "import", "f.yaml", "--replace"]) == ""


def test_every_file_the_readme_links_exists() -> None:
    """mkdocs checks the pages' links; the README, read on the forge, is checked here."""
    text = README.read_text(encoding="utf-8")
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)]
    local = [t for t in targets if t and "://" not in t]
    missing = [t for t in local if not (paths.ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
    assert len(local) > 10


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs (dev extra) missing")
def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(DOCS / "mkdocs.yml"),
         "-d", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "engineers" / "memory" / "index.html").is_file()
