"""Passwords in connection strings, generated (hypothesis), through every redaction that shows a
connection string: the `database` line of `citegate doctor` (`mask_url`), the one-line error of a
failed connection (`db.connect_error`, over libpq's own message for that string) and the scrub of
logs and artifacts (`scrub`, with the string in `DATABASE_URL`).

The rule checked: no run of 4 or more characters of the password, as written or as libpq reads
it, appears in what is shown, unless that run also occurs in the parts of the string that are not
secret (user, host, port, database, the other parameters and the keywords) or in the fixed words
of the message. Those parts are shown on purpose, and a password that shares 'host' or '127.' with
them cannot be told from them; masking every such run would hide the host of any URL whose
password contains '.0.0'. Whole passwords, raw or percent-encoded, are never allowed through.

Passwords are drawn with a raw '@', '?', '#', '/', ':', blank, '%', '&', '=', quote, backslash and
non-ASCII letters, in the URL's user info (raw and percent-encoded), in its `password=` query
parameter, and in `key=value` strings (quoted and bare with backslash escapes). 500 examples per
test, derandomized (a failure is reproducible); each example must finish within `DEADLINE`.
"""

from __future__ import annotations

import os
import string
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from citegate.core.redact import MIN_SECRET, mask_url, scrub
from citegate.store.db import connect_error

DEADLINE = timedelta(seconds=5)  # a bound on each example, generous for a shared machine
FUZZ = settings(
    max_examples=500,
    deadline=DEADLINE,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
RUN = 4  # the shortest run of a password that counts as a leak
HOSTILE = "@?#/: %&='\\"
PASSWORD = st.text(
    st.sampled_from(string.ascii_letters + string.digits + HOSTILE) | st.sampled_from("éß日🔑ж"),
    min_size=RUN,
    max_size=24,
)
USER = st.sampled_from(["alice", "postgres", "u", "bob.smith"])
HOST = st.sampled_from(["127.0.0.1", "db.example.org", "localhost"])
QUERY = st.sampled_from(["", "?sslmode=disable", "?application_name=me@x", "?connect_timeout=1"])
# the fixed words of `connect_error` around the two strings it shows
MESSAGE_WORDS = ["invalid URL", "cannot connect to", "failed (check DATABASE_URL)", "***"]


@contextmanager
def environ(**values: str) -> Iterator[None]:
    """Set environment variables for one example (hypothesis runs many per test function)."""
    old = {k: os.environ.get(k) for k in [*values, "DATABASE_URL", "PGPASSWORD"]}
    for k in ("DATABASE_URL", "PGPASSWORD"):
        os.environ.pop(k, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def libpq_password(dsn: str) -> str:
    """The password libpq reads from `dsn` ('' when it reads none or cannot parse it)."""
    try:
        return str(conninfo_to_dict(dsn).get("password") or "")
    except (ProgrammingError, ValueError):
        return ""


def libpq_error(dsn: str) -> Exception:
    """What a connection attempt fails with, short of a server: libpq's parse error (which may
    quote a piece of the string), else a refused connection."""
    try:
        conninfo_to_dict(dsn)
    except (ProgrammingError, ValueError) as exc:
        return exc
    return ConnectionRefusedError("connection to server at 127.0.0.1, port 1 failed")


def leaks(shown: str, secrets: list[str], public: list[str]) -> list[str]:
    """Runs of `RUN`+ characters of a secret in `shown` that no public part contains."""
    found = []
    for secret in secrets:
        for i in range(len(secret) - RUN + 1):
            run = secret[i : i + RUN]
            if run in shown and not any(run in p for p in public):
                found.append(run)
    return found


def check(dsn: str, secrets: list[str], public: list[str]) -> None:
    """Every redaction of `dsn` meets the rule, and none of them raises."""
    secrets = [s for s in {*secrets, libpq_password(dsn)} if s]
    public = [*public, *MESSAGE_WORDS]
    shown = {
        "doctor": mask_url(dsn),
        "error": connect_error(dsn, libpq_error(dsn)),
    }
    with environ(DATABASE_URL=dsn):
        shown["log"] = scrub(f"connecting to {dsn} failed")
        shown["error in a log"] = scrub(shown["error"])
    public.append("connecting to")
    public.append("failed")
    for where, text in shown.items():
        assert "\n" not in text, (where, text)
        assert not leaks(text, secrets, public), (where, dsn, text, leaks(text, secrets, public))


@FUZZ
@given(
    password=PASSWORD, user=USER, host=HOST, query=QUERY, encode=st.booleans(), port=st.booleans()
)
def test_a_password_in_a_urls_user_info(
    password: str, user: str, host: str, query: str, encode: bool, port: bool
) -> None:
    shown = quote(password, safe="") if encode else password
    hostport = f"{host}:5432" if port else host
    dsn = f"postgresql://{user}:{shown}@{hostport}/db{query}"
    check(dsn, [password, shown], [user, hostport, "postgresql://", "/db", query])


@FUZZ
@given(password=PASSWORD, user=USER, host=HOST, encode=st.booleans(), first=st.booleans())
def test_a_password_as_a_url_query_parameter(
    password: str, user: str, host: str, encode: bool, first: bool
) -> None:
    shown = quote(password, safe="") if encode or "&" in password else password
    param = f"password={shown}"
    query = f"?{param}&sslmode=disable" if first else f"?sslmode=disable&{param}"
    dsn = f"postgresql://{user}@{host}/db{query}"
    check(
        dsn, [password, shown], [user, host, "postgresql://", "/db", "password=", "sslmode=disable"]
    )


def keyword_value(password: str, quoted: bool) -> str:
    """`password` as libpq's key=value grammar takes it: in single quotes with ' and \\ escaped,
    or bare with every blank, quote and backslash escaped."""
    if quoted:
        return "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "".join("\\" + c if c.isspace() or c in "'\\" else c for c in password)


@FUZZ
@given(
    password=PASSWORD,
    user=USER,
    host=HOST,
    quoted=st.booleans(),
    spaced=st.booleans(),
    last=st.booleans(),
)
def test_a_password_in_a_key_value_string(
    password: str, user: str, host: str, quoted: bool, spaced: bool, last: bool
) -> None:
    value = keyword_value(password, quoted)
    item = f"password = {value}" if spaced else f"password={value}"
    rest = f"host={host} port=1 user={user} dbname=db"
    dsn = f"{rest} {item}" if last else f"{item} {rest}"
    public = ["host=", host, "port=1", "user=", user, "dbname=db", "password"]
    check(dsn, [password, value], public)


@FUZZ
@given(password=PASSWORD, host=HOST)
def test_pgpassword(password: str, host: str) -> None:
    """libpq's password from the environment: masked in a log by value (from `MIN_SECRET`
    characters, as every secret of the environment: a shorter one would mask ordinary words
    in every artifact), and never shown by a connection error."""
    dsn = f"host={host} port=1 user=alice dbname=db"
    with environ(PGPASSWORD=password):
        line = connect_error(dsn, libpq_error(dsn))
        logged = scrub(f"PGPASSWORD is {password}.")
    public = ["host=", host, "port=1", "user=alice", "dbname=db", *MESSAGE_WORDS]
    assert not leaks(line, [password], public), line
    if len(password) >= MIN_SECRET:
        assert password not in logged, logged


TOKENS = st.sampled_from([*(string.ascii_letters[:6] + HOSTILE + "\t\n\x00é"), "password"])
TOKENS |= st.sampled_from(["postgresql://", "host=", "sslpassword", "user=", "?password="])


@FUZZ
@given(dsn=st.lists(TOKENS, max_size=24).map("".join))
def test_any_string_as_a_connection_string(dsn: str) -> None:
    """Whatever `DATABASE_URL` holds, the redactions never raise, and the password libpq would
    use (if it parses one) is not in what they show, even where it equals another part."""
    password = libpq_password(dsn)
    shown = [mask_url(dsn), connect_error(dsn, libpq_error(dsn))]
    if len(password) >= 3 and "*" not in password:
        assert not any(password in s for s in shown), (dsn, password, shown)
