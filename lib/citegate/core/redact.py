"""Keep secrets out of MLflow, logs and reports.

Redaction is by VALUE, for the secrets the project actually reads: the API keys and MLflow
credentials named in `SECRET_ENV`, and the password inside a URL-valued one (`DATABASE_URL`,
`MLFLOW_TRACKING_URI`). A value shorter than `MIN_SECRET` characters is not masked by value (masking
"false" or "1" everywhere corrupts artifacts); URL passwords are also masked by pattern, whatever
their length. Names of unrelated variables and of params never decide anything here: a param called
`MAX_TOKENS` is logged like any other.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

# Names that look secret. Only for deciding which variables a child process (the local LLM server)
# inherits; never used to redact values or drop params.
SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|password|passwd|credential|auth)")
KEY_ENV = (
    "OPENAI_API_KEY",
    "VOYAGE_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
)
URL_ENV = ("DATABASE_URL", "MLFLOW_TRACKING_URI")
SECRET_ENV = KEY_ENV + URL_ENV
MIN_SECRET = 8
MASK = "***"  # plain ASCII: needs no escaping in JSON, HTML or CSV
TEXT_SUFFIXES = {".html", ".csv", ".yaml", ".yml", ".txt", ".md", ".log"}
JSON_SUFFIXES = {".ipynb", ".json"}

_SEP = r"\s/\"'<>"  # characters that end a URL's userinfo in running text
# scheme://user:password@host, the password running up to the LAST '@' before the host
URL_USERINFO = re.compile(rf"([A-Za-z][A-Za-z0-9+.-]*://[^:@{_SEP}]*:)([^{_SEP}]*)@")
URL_QUERY_PASSWORD = re.compile(rf"(?i)([?&;](?:password|passwd|pwd|sslpassword)=)([^&#{_SEP}]+)")
DSN_PASSWORD = re.compile(r"(?i)(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def url_passwords(value: str) -> list[str]:
    """Passwords inside a URL or libpq keyword string: userinfo, `?password=` and `password=`."""
    found = [m.group(2) for m in URL_USERINFO.finditer(value)]
    found += [m.group(2) for m in URL_QUERY_PASSWORD.finditer(value)]
    found += [m.group(1).strip("'") for m in DSN_PASSWORD.finditer(value)]
    return found + [unquote(p) for p in found]


def secret_values() -> list[str]:
    """Values that must never be written, longest first (so a longer one is masked whole)."""
    values: list[str] = []
    for name in SECRET_ENV:
        value = os.environ.get(name, "")
        if not value:
            continue
        passwords = url_passwords(value)
        if passwords or name in URL_ENV:
            values += passwords
        else:
            values.append(value)
    return sorted({v for v in values if len(v) >= MIN_SECRET}, key=len, reverse=True)


def _forms(value: str) -> Iterator[str]:
    """A secret as it may appear in a file: raw, JSON-escaped, HTML-escaped."""
    yield value
    yield json.dumps(value)[1:-1]
    yield html.escape(value)
    yield html.escape(value, quote=False)


def scrub(text: str) -> str:
    """The text with every secret value masked and every URL password hidden."""
    for value in secret_values():
        for form in _forms(value):
            text = text.replace(form, MASK)
    text = URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    return URL_QUERY_PASSWORD.sub(lambda m: m.group(1) + MASK, text)


def safe_mapping(data: Mapping[str, Any]) -> dict[str, str]:
    """Params/tags fit to log: every key kept, values stringified and scrubbed."""
    return {k: scrub(str(v)) for k, v in data.items()}


def scrub_json(obj: Any) -> Any:
    """A parsed JSON document with every string (keys too) scrubbed."""
    if isinstance(obj, str):
        return scrub(obj)
    if isinstance(obj, list):
        return [scrub_json(v) for v in obj]
    if isinstance(obj, dict):
        return {scrub(k): scrub_json(v) for k, v in obj.items()}
    return obj


def scrub_file(path: Path) -> bool:
    """Mask secrets in one artifact in place (JSON stays valid JSON); True when it changed."""
    if path.suffix == ".parquet":
        return _scrub_parquet(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix in JSON_SUFFIXES:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            clean = scrub(text)  # not JSON after all: treat it as text
        else:
            cleaned = scrub_json(data)
            if cleaned == data:
                return False
            indent = 1 if path.suffix == ".ipynb" else 2  # nbformat's layout / the recorder's
            clean = json.dumps(cleaned, indent=indent, ensure_ascii=False) + "\n"
    else:
        clean = scrub(text)
    if clean == text:
        return False
    path.write_text(clean, encoding="utf-8")
    return True


def _scrub_parquet(path: Path) -> bool:
    import pandas as pd

    frame = pd.read_parquet(path)
    changed = False
    for column in frame.columns:
        if pd.api.types.is_object_dtype(frame[column]) or pd.api.types.is_string_dtype(
            frame[column]
        ):
            clean = frame[column].map(lambda v: scrub(v) if isinstance(v, str) else v)
            if not clean.equals(frame[column]):
                frame[column] = clean
                changed = True
    if changed:
        frame.to_parquet(path, index=False)
    return changed


def scrub_tree(folder: Path) -> int:
    """Mask secrets in every text, JSON and Parquet artifact under a folder; returns files changed."""
    changed = 0
    suffixes = TEXT_SUFFIXES | JSON_SUFFIXES | {".parquet"}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in suffixes:
            changed += scrub_file(path)
    return changed
