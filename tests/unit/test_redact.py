"""Redaction by value: the secrets the project reads are masked; nothing else is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from citegate.core.redact import MASK, mask_fragments, mask_url, safe_mapping, scrub, scrub_tree
from citegate.store.db import connect_error

KEY = "sk-fake-0123456789abcdefXYZ"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "VOYAGE_API_KEY",
        "DATABASE_URL",
        "MLFLOW_TRACKING_URI",
        "PGPASSWORD",
    ):
        monkeypatch.delenv(name, raising=False)


def test_unrelated_variables_named_like_secrets_mask_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "citegate-bot")
    monkeypatch.setenv("MY_SECRET_MODE", "enabled")
    text = '{"exception": false, "by": "citegate-bot", "mode": "enabled"}'
    assert scrub(text) == text


def test_params_are_never_dropped_only_their_secret_values_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    logged = safe_mapping({"param.MAX_TOKENS": 160, "REWRITE_MAX_TOKENS": 64, "auth": KEY})
    assert logged == {"param.MAX_TOKENS": "160", "REWRITE_MAX_TOKENS": "64", "auth": MASK}


def test_short_key_values_are_not_masked_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "none")  # a placeholder, not a key: masking it corrupts
    assert scrub("reranker none") == "reranker none"


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("postgresql://u:p@ss@w0rd@db.host:5432/d", "postgresql://u:***@db.host:5432/d"),
        ("url postgresql://u:s3cret@h/d and x", "url postgresql://u:***@h/d and x"),
        ("postgresql://h/d?user=u&password=hunter2", "postgresql://h/d?user=u&password=***"),
        (
            "postgresql://h/d?password=hunter2&sslmode=off",
            "postgresql://h/d?password=***&sslmode=off",
        ),
        ("https://example.org:8080/a@b", "https://example.org:8080/a@b"),
    ],
)
def test_url_passwords_are_masked_by_pattern(text: str, clean: str) -> None:
    assert scrub(text) == clean


def test_database_url_password_is_masked_wherever_it_appears(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:s3cr%40tpassw0rd@h/d")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.local/?password=trackingpass1")
    out = scrub("tried s3cr@tpassw0rd and s3cr%40tpassw0rd; then trackingpass1; host h")
    assert out == "tried *** and ***; then ***; host h"


def test_scrubbed_notebook_stays_valid_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nasty = 'abc"def\\ghi-long-enough'  # needs JSON escaping: a raw replace would miss it
    monkeypatch.setenv("VOYAGE_API_KEY", nasty)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    nb = {
        "cells": [{"outputs": [{"text": f"the key is {nasty}"}], "metadata": {"collapsed": False}}],
        "metadata": {"papermill": {"exception": False}},
    }
    path = tmp_path / "notebook.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    (tmp_path / "report.html").write_text("<pre>abc&quot;def\\ghi-long-enough</pre>", "utf-8")
    assert scrub_tree(tmp_path) == 2
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["cells"][0]["outputs"][0]["text"] == f"the key is {MASK}"
    assert data["metadata"]["papermill"]["exception"] is False
    assert "ghi-long" not in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_parquet_tables_are_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "leak.parquet"
    pd.DataFrame({"leak": [f"key {KEY}"], "n": [1]}).to_parquet(path, index=False)
    assert scrub_tree(tmp_path) == 1
    assert KEY.encode() not in path.read_bytes()
    assert pd.read_parquet(path).to_dict("records") == [{"leak": f"key {MASK}", "n": 1}]


RAW_AT = "postgresql://alice:s3cr3t@corp?2024@127.0.0.1:1/db"


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        (RAW_AT, "postgresql://alice:***@127.0.0.1:1/db"),
        (
            "postgresql://alice:s3cr3t@corp 2024@127.0.0.1:1/db",
            "postgresql://alice:***@127.0.0.1:1/db",
        ),
        (
            "postgresql://alice:s3cr3t@corp#2024@127.0.0.1:1/db",
            "postgresql://alice:***@127.0.0.1:1/db",
        ),
        ("postgresql://alice:s3/cr:3t@127.0.0.1:1/db", "postgresql://alice:***@127.0.0.1:1/db"),
        ("postgresql://u:a/b?sslmode=x@h/db", "postgresql://u:***@h/db"),
        (
            "postgresql://u:pw@h/db?application_name=me@x",
            "postgresql://u:***@h/db?application_name=me@x",
        ),
        ("postgresql://h/db?password=x@yz12", "postgresql://h/db?password=***"),
        ("host=h password=abcd\\ efgh port=1", "host=h password=*** port=1"),
        ("host=h password = 'ab cd\\' ef' port=1", "host=h password = *** port=1"),
        ("host=h password='unterminated port=1", "host=h password=***"),
        ("host=h password 'nope'", "host=h password ***"),
    ],
)
def test_every_part_of_a_raw_password_is_masked(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_libpq_parse_errors_lose_every_piece_of_the_password() -> None:
    with pytest.raises(ProgrammingError) as info:
        conninfo_to_dict(RAW_AT)  # libpq quotes '2024@127.0.0.1:1/db': a piece of the password
    assert "2024" in str(info.value)
    line = connect_error(RAW_AT, info.value)
    assert "2024" not in line and "corp" not in line and "s3cr" not in line, line
    assert line.startswith("invalid URL postgresql://alice:***@127.0.0.1:1/db: ")


def test_mask_fragments_masks_runs_of_four_shared_characters() -> None:
    assert mask_fragments('at "2024@127.0.0.1"', ["s3cr3t@corp?2024"]) == 'at "***@127.0.0.1"'
    assert mask_fragments("a 202 b", ["x2024"]) == "a 202 b"  # three shared: kept


def test_pgpassword_and_database_url_are_masked_in_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "pg-env-secret-77")
    monkeypatch.setenv("DATABASE_URL", "postgresql://alice:a b/c@127.0.0.1:1/db")
    out = scrub("PGPASSWORD pg-env-secret-77; url postgresql://alice:a b/c@127.0.0.1:1/db")
    assert out == "PGPASSWORD ***; url postgresql://alice:***@127.0.0.1:1/db"
