"""Redaction by value: the secrets the project reads are masked; nothing else is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from citegate.core.redact import MASK, safe_mapping, scrub, scrub_tree

KEY = "sk-fake-0123456789abcdefXYZ"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "VOYAGE_API_KEY", "DATABASE_URL", "MLFLOW_TRACKING_URI"):
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
