"""Every parser of user input fed generated inputs (hypothesis). Each either succeeds or
raises the project's user error (`CitegateError`: the CLI prints it in one line, exit 2); none
raises anything else, and no password reaches an output. In-process and bounded: 500 examples
per parser, no deadline (the machine is shared), a few seconds each. The database side (nothing
written on a refusal) is checked with real PostgreSQL in tests/integration/test_hostile_inputs.py.
"""

from __future__ import annotations

import json
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from citegate.cli import one_line
from citegate.cli.run import parse_sets
from citegate.core.config_files import read_production
from citegate.core.errors import CitegateError
from citegate.core.inputs import check_name, clean_question, id_problem
from citegate.core.redact import mask_url
from citegate.corpus.beir import Problems, read_documents, read_queries, read_questions_file
from citegate.store.db import connect_error
from citegate.tracking.spec import SPEC_KEYS, load_spec

FUZZ = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,  # the same inputs every run: a failure is reproducible, timing stable
)
TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from("\x00\x07\u200b\ud800 \t\n"))
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4)
)


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """A scratch folder shared by the examples of this module (each writes its own file)."""
    with tempfile.TemporaryDirectory(prefix="citegate-fuzz-") as tmp:
        yield Path(tmp)


def user_error_or_success(fn: object, *args: object) -> object:
    """Call `fn`; a `CitegateError` is a refusal (its message one printable line once the CLI
    has shown it); any other exception fails the test."""
    try:
        return fn(*args)  # type: ignore[operator]
    except CitegateError as exc:
        assert one_line(str(exc)).encode("utf-8")
        return exc


# ---------------------------------------------------------------- BEIR records, question files


def record_line(rec: object) -> str:
    return json.dumps(rec) if not isinstance(rec, str) else rec


BEIR_RECORDS = st.lists(
    st.fixed_dictionaries(
        {"_id": SCALARS, "text": SCALARS},
        optional={"title": SCALARS, "metadata": JSONISH},
    )
    | JSONISH
    | TEXT,
    max_size=5,
)


@FUZZ
@given(records=BEIR_RECORDS)
def test_beir_corpus_and_queries_records(folder: Path, records: list[object]) -> None:
    path = folder / "corpus.jsonl"
    text = "\n".join(record_line(r) for r in records)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    pr = Problems()
    docs = read_documents(path, pr)
    read_queries(path, pr)
    for d in docs.values():  # what was accepted meets the id rule
        assert id_problem(d.id) is None
    for p in pr.items:
        assert p.message and str(p.path) == str(path)


@FUZZ
@given(rows=st.lists(st.lists(TEXT, min_size=1, max_size=5), max_size=5), csv=st.booleans())
def test_question_files(folder: Path, rows: list[list[str]], csv: bool) -> None:
    path = folder / ("q.csv" if csv else "q.jsonl")
    if csv:
        lines = ["id,text,gold", *(",".join(r) for r in rows)]
    else:
        lines = [
            json.dumps(dict(zip(("id", "text", "gold", "split"), r, strict=False))) for r in rows
        ]
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    got = user_error_or_success(read_questions_file, path, {"d1": object()})
    if isinstance(got, list):
        assert all(id_problem(q.id) is None for q in got)


# ---------------------------------------------------------------- experiment specs, --set values


SPEC = st.dictionaries(st.sampled_from(sorted(SPEC_KEYS)) | TEXT, JSONISH, max_size=6)


@FUZZ
@given(spec=SPEC, valid_base=st.booleans())
def test_experiment_specs(folder: Path, spec: dict[str, object], valid_base: bool) -> None:
    if valid_base:
        spec = {"name": "fuzz", "notebook": "notebooks/03_gate_roc.ipynb", **spec}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8", errors="replace")
    user_error_or_success(load_spec, path)


@FUZZ
@given(pairs=st.lists(TEXT, max_size=4))
def test_set_values(pairs: list[str]) -> None:
    user_error_or_success(parse_sets, pairs)


# ---------------------------------------------------------------- production.yaml


@FUZZ
@given(
    doc=st.dictionaries(
        st.sampled_from(["version", "pipeline", "provenance", "accepted_on"]) | TEXT,
        JSONISH,
        max_size=5,
    )
    | JSONISH
)
def test_production_files(folder: Path, doc: object) -> None:
    path = folder / "production.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8", errors="replace")
    user_error_or_success(read_production, path)


# ---------------------------------------------------------------- DATABASE_URL


PASSWORD = st.text(
    st.sampled_from(string.ascii_letters + string.digits + "?@#%/'\" :&=;"), min_size=8, max_size=24
).filter(lambda p: p.strip() and p.isprintable())


@FUZZ
@given(
    password=PASSWORD,
    encode=st.booleans(),
    query=st.sampled_from(["", "?sslmode=disable", "?sslmod=x", "?Password=", "?password="]),
)
def test_every_database_url_password_is_masked(password: str, encode: bool, query: str) -> None:
    secret = "Zq9" + password  # a password no other part of the URL spells
    shown = quote(secret, safe="") if encode else secret
    url = f"postgresql://alice:{shown}@127.0.0.1:1/db{query}"
    if query.endswith("="):
        url += shown
    masked = mask_url(url)
    error = connect_error(url, _libpq_error(url))
    for out in (masked, error):
        assert secret not in out and shown not in out and quote(secret) not in out, out
        assert "\n" not in out


def _libpq_error(url: str) -> Exception:
    """The error psycopg raises for `url` without reaching a server: libpq's own parse."""
    try:
        conninfo_to_dict(url)
    except (ProgrammingError, UnicodeDecodeError) as exc:  # '%A0': libpq's bytes, not UTF-8
        return exc
    return ConnectionRefusedError(f"connection to server at 127.0.0.1 failed for {url}")


# ---------------------------------------------------------------- questions to ask, names


@FUZZ
@given(question=TEXT)
def test_questions_to_ask(question: str) -> None:
    got = user_error_or_success(clean_question, question)
    if isinstance(got, str):
        assert got.encode("utf-8") and got.strip() == got


@FUZZ
@given(name=TEXT)
def test_names(name: str) -> None:
    user_error_or_success(check_name, "--name", name)
