"""Shared fixtures: a real embedded PostgreSQL per test session, throwaway caches; and the shared
factories (`make_candidate`, `verse`, `FALLBACK_REPLY`), imported by tests as
`from conftest import make_candidate`."""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from citegate.cli import build_parser
from citegate.core.types import Candidate
from citegate.core.verdicts import VERDICT_NOTEBOOKS, RoleVerdict
from citegate.evaluation.bars import Criterion, judge, judge_rate, verdict
from citegate.pipeline.fallback import DISCLAIMERS
from citegate.store import db
from citegate.tracking.promote import guards as promote_guards
from citegate.tracking.promote import production_file

_candidate_ids = itertools.count(1)


def make_candidate(fragment_id: int | None = None, **fields: Any) -> Candidate:
    """A hand-built retrieval candidate: a round-1 dense verse hit with cosine 0.5, id from a
    session-wide counter unless given, key `k<id>`, address `A<id>`, text `text <id>`. Any
    `Candidate` field can be overridden by keyword."""
    fid = next(_candidate_ids) if fragment_id is None else fragment_id
    values: dict[str, Any] = {
        "fragment_id": fid,
        "frag_key": f"k{fid}",
        "corpus": "c",
        "kind": "verse",
        "source_id": "src",
        "track_id": None,
        "start_ms": None,
        "end_ms": None,
        "addr_label": f"A{fid}",
        "text": f"text {fid}",
        "lang": "en",
        "score": 0.5,
        "lanes": ("dense:verses@r1",),
        "round": 1,
    }
    values.update(fields)
    return Candidate(**values)


def make_verdict(
    role: str, model: str, passed: bool = True, run: str = "20261201T000000Z-abcd1234"
) -> RoleVerdict:
    """A role verdict as a notebook writes it: one required rate criterion (18 of 20 against a
    Wilson 95% low of 0.6 passes; 8 of 20 fails) and one shown for information."""
    rate = Criterion("accuracy", "accuracy", 0.6, "wilson_low>=")
    info = Criterion("latency", "latency per call (s)", 0.0, "info", required=False)
    outcomes = [True] * (18 if passed else 8) + [False] * (2 if passed else 12)
    results = [judge_rate(rate, outcomes), judge(info, 1.5, 1.2, 1.9, 20)]
    return verdict(role, model, VERDICT_NOTEBOOKS[role], run, results)


def verse(i: int, score: float, kind: str = "verse") -> Candidate:
    """A Gita verse BG 2.<i> (corpus gita, text `note <i> text`) with a given cosine."""
    return make_candidate(
        i,
        corpus="gita",
        kind=kind,
        source_id="bg",
        addr_label=f"BG 2.{i}",
        text=f"note {i} text",
        score=score,
        lanes=("dense:verse@r1",),
    )


# A well-formed fallback reply: in scope, the English disclaimer copied, three probes.
FALLBACK_REPLY = {
    "in_scope": True,
    "disclaimer": DISCLAIMERS["en"],
    "answer": "Arjuna doubts.",
    "search_queries": ["Arjuna doubt", "knowledge versus action", "karma yoga"],
}


@pytest.fixture(scope="session", autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point generated state at a temp dir (the embedding cache stays shared to keep tests fast)."""
    var = tmp_path_factory.mktemp("var")
    old = {k: os.environ.get(k) for k in ("CITEGATE_VAR", "CITEGATE_CACHE", "DATABASE_URL")}
    os.environ["CITEGATE_CACHE"] = os.environ.get("CITEGATE_CACHE") or str(
        Path(__file__).resolve().parents[1] / "var" / "cache"
    )
    os.environ["CITEGATE_VAR"] = str(var)
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URI of a fresh embedded PostgreSQL server for this test session.

    Its data dir is a private temp dir, not pytest's numbered tmp dirs (which a concurrent pytest
    session may rotate away under a running server).
    """
    folder = Path(tempfile.mkdtemp(prefix="citegate-pg-"))
    yield db.start_embedded(folder / "pgdata")
    db.stop_embedded(folder / "pgdata")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def fresh_db(pg_url: str) -> Iterator[str]:
    """A new empty database on the session server, dropped afterwards."""
    name = f"t_{os.getpid()}_{os.urandom(4).hex()}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = pg_url.replace("/postgres?", f"/{name}?")
    yield url
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture()
def conn(fresh_db: str) -> Iterator[psycopg.Connection]:
    """A migrated connection to a fresh database."""
    with db.connect(fresh_db) as c:
        yield c


@pytest.fixture(scope="session")
def demo_db(pg_url: str) -> str:
    """A database holding every demo corpus build, ingested once per test session.

    Uses the shared embedding cache, so only a cold machine pays for embedding.
    """
    from citegate.corpus.builds import BUILDS
    from citegate.models.embed import default_embedder
    from citegate.store.ingest import ingest_corpus

    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "demo" WITH (FORCE)')
        admin.execute('CREATE DATABASE "demo"')
    url = pg_url.replace("/postgres?", "/demo?")
    emb = default_embedder()
    with db.connect(url) as conn:
        for name in BUILDS:
            ingest_corpus(conn, name, emb, progress=False)
    return url


@pytest.fixture()
def demo(demo_db: str) -> Iterator[psycopg.Connection]:
    """A connection to the demo database."""
    with db.connect(demo_db) as c:
        yield c


@pytest.fixture()
def promote_env(tmp_path: Path, demo_db: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """For promotion tests: the demo database, a throwaway MLflow store and run folder, a
    coverage-gate production file (returned; tests/fixtures/production_coverage.yaml) and a
    guards file evaluating 6 questions per label."""
    monkeypatch.setenv("DATABASE_URL", demo_db)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    prod = tmp_path / "production.yaml"
    # A fixed coverage-gate production file (version 2, without the learned gate), not the
    # committed file: what these tests promote against must not change with each promotion.
    shutil.copy(Path(__file__).parent / "fixtures" / "production_coverage.yaml", prod)
    monkeypatch.setattr(production_file, "PRODUCTION", prod)
    guards = yaml.safe_load(promote_guards.GUARDS.read_text(encoding="utf-8"))
    guards["evaluation"]["limit"] = 6
    (tmp_path / "guards.yaml").write_text(yaml.safe_dump(guards), encoding="utf-8")
    monkeypatch.setattr(promote_guards, "GUARDS", tmp_path / "guards.yaml")
    return prod


def fingerprint(url: str) -> tuple[object, ...]:
    """What a refused command must leave as it was: every fragment's corpus, key and hash,
    every corpus origin, and every curated note (and how many units it has embedded)."""
    with psycopg.connect(url) as c:
        frags = c.execute(
            "SELECT count(*), md5(coalesce(string_agg(corpus || frag_key || content_hash, ',' "
            "ORDER BY corpus, frag_key), '')) FROM fragments"
        ).fetchone()
        origins = c.execute("SELECT corpus, origin FROM corpora ORDER BY 1").fetchall()
        notes = c.execute(
            "SELECT count(*), md5(coalesce(string_agg(corpus || note_key || source || "
            "content_hash, ',' ORDER BY corpus, note_key), '')), "
            "(SELECT count(*) FROM curated_note_units) FROM curated_notes"
        ).fetchone()
    return (frags, tuple(origins), notes)


@pytest.fixture()
def cli_db(fresh_db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Commands against a fresh migrated database, generated state in a fresh var/."""
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    with db.connect(fresh_db):  # migrates
        pass
    return fresh_db


TINY_TEXT = (
    "Arjuna sees his teachers and kinsmen in the opposing army and lays down his bow.\n\n"
    "Krishna teaches that the self is eternal: it is not born and it does not die.\n"
)


def notes_yaml(cite: str, body: str = "The self is never born and never dies.") -> str:
    """A notes file of corpus `tiny`: a pinned note citing `cite`, and a memory note."""
    return textwrap.dedent(
        f"""\
        format: citegate-notes/1
        corpus: tiny
        notes:
          - key: eternal-self
            kind: pinned
            lang: en
            triggers: [is the self eternal, does the soul die]
            body: {body}
            cites: ["{cite}"]
            author: editors
            date: "2026-01-01"
          - key: setting
            kind: memory
            lang: en
            triggers: [where is the dialogue]
            body: A dialogue on a battlefield.
            cites: []
            author: editors
            date: "2026-01-01"
        """
    )


# Placeholders a hint's command may hold, filled in before it is parsed (`parses`).
PLACEHOLDERS = {"DIR": "some/folder", "PATH": "some/file.txt"}


def parses(command: str) -> bool:
    """Whether `command` (placeholders filled in) parses with `citegate`'s own parser."""
    words = [PLACEHOLDERS.get(w, w) for w in shlex.split(command)]
    assert words[0] == "citegate", command
    try:
        build_parser().parse_args(words[1:])
    except SystemExit:
        return False
    return True


def write_file(folder: Path, text: str, name: str = "notes.yaml") -> Path:
    """`text` written to `folder/name`; its path."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def tiny(cli_db: str, tmp_path: Path) -> tuple[str, str]:
    """The commands' fresh database with a two-paragraph folder corpus `tiny`; (url, an address
    it holds)."""
    from citegate.models.embed import default_embedder
    from citegate.store.ingest import ingest_corpus

    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "text.txt").write_text(TINY_TEXT, encoding="utf-8")
    with db.connect(cli_db) as conn:
        ingest_corpus(conn, str(folder), default_embedder(), corpus="tiny", progress=False)
        label = conn.execute("SELECT min(addr_label) FROM fragments").fetchone()[0]
    return cli_db, label
