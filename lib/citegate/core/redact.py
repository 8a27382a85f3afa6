"""Keep secrets out of MLflow, logs and reports.

Redaction is by VALUE, for the secrets the project actually reads: the API keys, MLflow
credentials and `PGPASSWORD` named in `SECRET_ENV`, and the password inside a URL-valued one
(`DATABASE_URL`, `MLFLOW_TRACKING_URI`). A value shorter than `MIN_SECRET` characters is not
masked by value (masking "false" or "1" everywhere corrupts artifacts); URL passwords are also
masked by pattern, whatever their length. A message that may quote a piece of a connection string
(libpq's parse errors) loses every run of 4 characters it shares with a password
(`mask_fragments`). Names of unrelated variables and of params never decide anything here: a
param called `MAX_TOKENS` is logged like any other.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

# Names that look secret. Only for deciding which variables a child process (the local LLM server)
# inherits; never used to redact values or drop params.
SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|password|passwd|credential|auth)")
KEY_ENV = (
    "PGPASSWORD",  # libpq's password when the connection string names none
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
# a password query parameter wherever it is left once the user info is masked: to the next '&'
QUERY_SECRET = re.compile(r"(?i)([?&]\s*(?:ssl)?password\s*=)([^&]+)")
DSN_PASSWORD = re.compile(r"(?i)(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def url_passwords(value: str) -> list[str]:
    """Passwords inside a URL or libpq keyword string: what libpq itself parses out of it
    (`conninfo_passwords`), and by pattern the userinfo, `?password=` and `password=`."""
    found = [m.group(2) for m in URL_USERINFO.finditer(value)]
    found += [m.group(2) for m in URL_QUERY_PASSWORD.finditer(value)]
    found += [m.group(2) for m in QUERY_SECRET.finditer(value)]
    found += [m.group(1).strip("'") for m in DSN_PASSWORD.finditer(value)]
    found += [p for p in [userinfo_password(value)] if p]
    found += [value[a:b] for a, b in _keyword_secret_spans(value)]
    return conninfo_passwords(value) + found + [unquote(p) for p in found]


SECRET_PARAMS = ("password", "sslpassword")
_DSN_SECRET = re.compile(
    r"(?<![\w])((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']\S*|(?=\s|$))", re.IGNORECASE
)


def conninfo_passwords(value: str) -> list[str]:
    """The passwords libpq reads from a connection string (URL or `key=value`), parsed by libpq
    itself (`psycopg.conninfo`), in the forms they may take in text: decoded, percent-encoded.
    None when libpq cannot parse it (`mask_url` then masks by pattern)."""
    try:
        params = conninfo_to_dict(value)
    except (ProgrammingError, ValueError, TypeError):
        return []
    found = [str(params[k]) for k in SECRET_PARAMS if params.get(k)]
    return found + [quote(p, safe="") for p in found] + [quote(p) for p in found]


def mask_url(url: str) -> str:
    """Hide every password in a connection string so it can be printed or logged.

    By span: the URL's user info (up to its LAST '@' before the query, so a raw '@', '/', '#',
    ':' or blank in the password hides it all; to the last '@' of all when what follows a '?'
    cannot be a query libpq reads, `_split_uri_rest`), the `password=` / `sslpassword=` query
    parameters (any case, up to the next '&'), the same keys in a `key=value` string as libpq's
    grammar reads them (`_keyword_secret_spans`). Then by value: every password found
    (`url_passwords`: libpq's own parse and the patterns), in every form, wherever else it
    appears. What is left (user, host, port, database, other parameters) is shown as written."""
    scheme, sep, rest = url.partition("://")
    masked = _mask_dsn(url) if not sep else scheme + sep + _mask_uri_rest(rest, url)
    return mask_values(masked, url_passwords(url))


def mask_values(text: str, secrets: list[str]) -> str:
    """`text` with each of `secrets` (longest first; none shorter than 3 characters, which
    would mask ordinary words) replaced by the mask."""
    for secret in sorted({v for v in secrets if len(v) >= 3}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def mask_fragments(text: str, secrets: list[str], n: int = 4) -> str:
    """`text` with every run that shares `n` or more consecutive characters with one of
    `secrets` masked. For messages that echo a piece of a connection string (libpq's parse
    errors quote what follows a raw '@' or '?' in a password): a piece of a password is as
    much a leak as the whole. Not for artifacts, where a short common piece ('2024') of a
    password would mask ordinary text everywhere."""
    grams = {s[i : i + n] for s in secrets for i in range(len(s) - n + 1)}
    if not grams:
        return text
    hidden = [False] * len(text)
    for i in range(len(text) - n + 1):
        if text[i : i + n] in grams:
            hidden[i : i + n] = [True] * n
    out, i = [], 0
    while i < len(text):
        if hidden[i]:
            while i < len(text) and hidden[i]:
                i += 1
            out.append(MASK)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _mask_dsn(dsn: str) -> str:
    """A `key=value` connection string with the value of every password key masked: the spans
    libpq's own grammar gives them (`_keyword_secret_spans`), then by pattern what is left."""
    for start, end in reversed(_keyword_secret_spans(dsn)):
        dsn = dsn[:start] + MASK + dsn[end:]
    return _DSN_SECRET.sub(lambda m: m.group(1) + MASK, dsn)


def _keyword_secret_spans(dsn: str) -> list[tuple[int, int]]:
    """(start, end) of each password value in a `key=value` string, read as libpq reads one:
    blanks around '=', a value quoted with ' or bare up to a blank, a backslash escaping the
    next character in both. Where the string breaks that grammar after a password key (an
    unterminated quote, no '='), the span runs to the end: libpq refuses it, but what follows
    is still what the user meant as the password."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(dsn)
    while True:
        i = _skip_blanks(dsn, i)
        if i >= n:
            return spans
        start = i
        while i < n and dsn[i] != "=" and not dsn[i].isspace():
            i += 1
        secret = dsn[start:i].lower() in SECRET_PARAMS
        i = _skip_blanks(dsn, i)
        if i >= n or dsn[i] != "=":
            return spans + ([(i, n)] if secret and i < n else [])
        i = _skip_blanks(dsn, i + 1)
        end = _value_end(dsn, i)
        if secret and end > i:
            spans.append((i, end))
        i = end


def _skip_blanks(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _value_end(dsn: str, i: int) -> int:
    """Where the value starting at `i` ends (past its closing quote); the end of the string
    for an unterminated quote."""
    quoted = i < len(dsn) and dsn[i] == "'"
    i += quoted
    while i < len(dsn):
        if dsn[i] == "\\":
            i += 2
        elif (quoted and dsn[i] == "'") or (not quoted and dsn[i].isspace()):
            return i + quoted
        else:
            i += 1
    return len(dsn)


def _mask_uri_rest(rest: str, url: str) -> str:
    """The part of a URL after `scheme://` with its user info password and its password query
    parameters masked."""
    base, qmark, query = _split_uri_rest(rest, url)
    userinfo, at, hostpart = base.rpartition("@")
    if at and ":" in userinfo:
        base = userinfo.split(":", 1)[0] + f":{MASK}@" + hostpart
    if qmark:
        query = "&".join(_mask_param(p) for p in query.split("&"))
    return QUERY_SECRET.sub(lambda m: m.group(1) + MASK, f"{base}{qmark}{query}")


def _split_uri_rest(rest: str, url: str) -> tuple[str, str, str]:
    """(user info and host part, '?' or '', query) of the part of a URL after `scheme://`.

    The user info ends at the last '@' before the query, so a raw '@', '/', '#', ':' or blank
    in a password stays inside it (libpq ends it at the first '@': what follows is then read
    as the host, and is still part of what the user wrote as the password). The query starts
    at the first '?' after libpq's user info. An '@' after that '?' is a query value's
    ('application_name=me@x') only when libpq reads user info and parses the whole URL; else
    ('alice:s3cr3t@corp?2024@host', 'u:a/b?c@host') the user info runs to the last '@'."""
    first_at = rest.find("@")
    libpq_end = first_at if first_at >= 0 and "/" not in rest[:first_at] else -1
    qmark_at = rest.find("?", libpq_end + 1)
    if qmark_at >= 0 and "@" in rest[qmark_at:] and not (libpq_end >= 0 and _parses(url)):
        qmark_at = rest.find("?", rest.rfind("@"))
    if qmark_at < 0:
        return rest, "", ""
    return rest[:qmark_at], "?", rest[qmark_at + 1 :]


def userinfo_password(url: str) -> str | None:
    """The password of a URL's user info as `mask_url` reads it (up to the last '@'), raw; None
    when there is none. libpq's messages may quote it ('unexpected spaces found in ...')."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, _ = _split_uri_rest(rest, url)[0].rpartition("@")
    return userinfo.split(":", 1)[1] if sep and at and ":" in userinfo else None


def _parses(url: str) -> bool:
    """Whether libpq parses the connection string."""
    try:
        conninfo_to_dict(url)
    except (ProgrammingError, ValueError, TypeError):
        return False
    return True


def _mask_param(param: str) -> str:
    key, eq, _ = param.partition("=")
    return f"{key}={MASK}" if eq and unquote(key).strip().lower() in SECRET_PARAMS else param


def secret_values() -> list[str]:
    """Values that must never be written, longest first (so a longer one is masked whole)."""
    values: list[str] = []
    for name in SECRET_ENV:
        value = os.environ.get(name, "")
        if not value:
            continue
        values += url_passwords(value)
        if name not in URL_ENV:
            values.append(value)
    return sorted({v for v in values if len(v) >= MIN_SECRET}, key=len, reverse=True)


def _forms(value: str) -> Iterator[str]:
    """A secret as it may appear in a file: raw, JSON-escaped, HTML-escaped."""
    yield value
    yield json.dumps(value)[1:-1]
    yield html.escape(value)
    yield html.escape(value, quote=False)


def scrub(text: str) -> str:
    """The text with every secret value masked and every URL password hidden: a connection
    string from the environment shown as `mask_url` shows it (its password hidden whatever its
    length or characters), then each secret value in each form."""
    for name in URL_ENV:
        value = os.environ.get(name, "")
        if len(value) >= MIN_SECRET and value in text:
            text = text.replace(value, mask_url(value))
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
