"""The README's tour says what `citegate ask` prints under the production config, on the gita build
with the demo's curated notes (what the tour's commands leave): its sample output, line by line,
and the way its other two questions go. In the sample, "…" inside a line stands for any text (the
values a promotion changes: the version, the source run) and a line of "..." for any number of
lines. The docs include the tour from the README (docs/pages/getting-started.md), so this checks
both."""

from __future__ import annotations

import re
from collections.abc import Sequence

import psycopg
import pytest

from citegate.cli import main
from citegate.core import paths
from citegate.corpus.notes import read_notes
from citegate.models.embed import default_embedder
from citegate.pipeline.fallback import NOT_FOUND
from citegate.store import db
from citegate.store.ingest import ingest_corpus
from citegate.store.memory import import_notes

README = paths.ROOT / "README.md"
TOUR = re.compile(r"<!-- --8<-- \[start:tour\] -->\n(.*?)<!-- --8<-- \[end:tour\] -->", re.S)
DEMO_NOTES = paths.DATA / "memory" / "gita-notes.yaml"
BROAD = "What does Krishna say about the soul?"
NAMED = "In Chapter 13, Verse 20, what is Prakrti responsible for?"


def tour() -> str:
    found = TOUR.search(README.read_text(encoding="utf-8"))
    assert found, "README.md has no tour between its start:tour and end:tour markers"
    return found.group(1)


def sample() -> list[str]:
    """The tour's sample output: its text block that starts with the config line."""
    blocks = re.findall(r"```text\n(.*?)```", tour(), flags=re.S)
    samples = [b.splitlines() for b in blocks if b.startswith("config: ")]
    assert len(samples) == 1, "the tour shows one sample of `citegate ask` output"
    return samples[0]


def matches(lines: Sequence[str], printed: str) -> bool:
    """Whether `printed` is what the sample `lines` show ("…": any text in a line; a line of
    "...": any number of lines)."""
    parts = []
    for line in lines:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\n]*".join(re.escape(p) for p in line.split("…")) + r"\n")
    return re.fullmatch("".join(parts), printed.rstrip("\n") + "\n") is not None


def test_the_matcher_reads_ellipses_as_the_tour_says() -> None:
    printed = "config: production (version 3, source run ab)\nx\ny\nz\nend 1 2\n"
    assert matches(["config: production (version …, source run …)", "...", "z", "end …"], printed)
    assert matches(["config: …", "x", "...", "end 1 2"], printed)
    assert not matches(["config: …", "y", "...", "end 1 2"], printed)  # x is not y
    assert not matches(["config: …", "x", "y", "z"], printed)  # the last line is left out


@pytest.fixture(scope="module")
def tour_db(pg_url: str) -> str:
    """A database holding what the tour's commands store: the gita build and the demo notes."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "readme_tour" WITH (FORCE)')
        admin.execute('CREATE DATABASE "readme_tour"')
    url = pg_url.replace("/postgres?", "/readme_tour?")
    emb = default_embedder()
    with db.connect(url) as conn:
        ingest_corpus(conn, "gita", emb, progress=False)
        import_notes(conn, read_notes(DEMO_NOTES), emb)
    return url


def ask(
    url: str, question: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """What `citegate ask --answer` prints for `question` on the database at `url`."""
    monkeypatch.setenv("DATABASE_URL", url)
    assert main(["ask", "--answer", question]) == 0
    return capsys.readouterr().out


@pytest.mark.db
def test_the_tour_sample_is_what_ask_prints(
    tour_db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = sample()
    question = lines[1].removeprefix("question: ")
    assert f'citegate ask --answer "{question}"' in tour()
    printed = ask(tour_db, question, monkeypatch, capsys)
    assert matches(lines, printed), (
        "README.md's tour sample differs from what `citegate ask --answer` prints; paste the "
        f"lines it shows, keeping '…' for the version and the source run:\n{printed}"
    )


@pytest.mark.db
def test_the_tour_questions_are_declined_and_answered_as_it_says(
    tour_db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = " ".join(tour().split())  # the prose as read, whatever its line breaks
    assert BROAD in text and NAMED in text and NOT_FOUND["en"] in text
    broad = ask(tour_db, BROAD, monkeypatch, capsys)
    assert "\ndecision: insufficient" in broad and NOT_FOUND["en"] in broad, broad
    named = ask(tour_db, NAMED, monkeypatch, capsys)
    assert "\nbranch: grounded" in named and "BG 13.20" in named, named
