"""The MLflow tracking store, checked before a run or a promotion uses it.

MLflow retries an HTTP tracking server that refuses connections for minutes (seven retries with
exponential backoff: about 250 s) before it fails, printing nothing meanwhile; a SQLite store
whose file is damaged fails deep inside SQLAlchemy with a `DatabaseError` that names no file.
`check_store` finds both up front, in one line each: a network store that does not accept a
connection within `CONNECT_TIMEOUT_S`, named by its URI (passwords masked), and a SQLite file that
is not a database, named with what to do (move it aside). `store_errors` names the file too when
the damage is found later, by MLflow itself.
"""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from citegate.core.errors import ConfigError
from citegate.core.redact import mask_url

CONNECT_TIMEOUT_S = 5.0  # a tracking server on the network answers a connection in far less
SQLITE_PREFIX = "sqlite:///"
# Ports of the store schemes MLflow takes when the URI names none.
DEFAULT_PORTS = {"http": 80, "https": 443, "postgresql": 5432, "mysql": 3306, "mssql": 1433}


def check_store(uri: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse (`ConfigError`, one line) a tracking store MLflow could not use: a network store
    that does not accept a TCP connection within `timeout` seconds, or a SQLite file that is not
    a readable database. A SQLite file not there yet is fine (MLflow creates it); any other
    store (a local folder, a managed service) is left to MLflow."""
    path = sqlite_path(uri)
    if path is not None:
        check_sqlite(path)
        return
    address = network_address(uri)
    if address is not None:
        check_reachable(uri, address, timeout)


def sqlite_path(uri: str) -> Path | None:
    """The file of a `sqlite:///` URI (four slashes: an absolute path), None for another URI."""
    if not uri.startswith(SQLITE_PREFIX):
        return None
    return Path(uri[len(SQLITE_PREFIX) :].split("?", 1)[0])


def network_address(uri: str) -> tuple[str, int] | None:
    """(host, port) of a store reached over the network, None for a local one."""
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+", 1)[0].lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number: MLflow names that itself
        return None
    if not parts.hostname or port is None:
        return None
    return parts.hostname, port


def check_reachable(uri: str, address: tuple[str, int], timeout: float) -> None:
    """Refuse a store whose host does not accept a TCP connection within `timeout` seconds."""
    try:
        with socket.create_connection(address, timeout=timeout):
            return
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        if isinstance(exc, TimeoutError):
            reason = f"no answer in {timeout:g} s"
        raise ConfigError(
            f"the MLflow tracking server {mask_url(uri)} is not reachable ({reason}): start "
            "it or fix MLFLOW_TRACKING_URI, or unset MLFLOW_TRACKING_URI to record into the "
            "local store under var/mlflow"
        ) from None


def check_sqlite(path: Path) -> None:
    """Refuse a SQLite store file whose first page does not read as a database (`damaged`). A
    file merely locked or unreadable is left to MLflow, which says so itself."""
    if not path.exists():
        return
    try:
        with closing(sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        return
    except sqlite3.DatabaseError as exc:
        raise damaged(path, str(exc)) from None


def damaged(path: Path, reason: str) -> ConfigError:
    """The one line for a SQLite store file MLflow cannot use: the file and what to do."""
    return ConfigError(
        f"{path}: the MLflow tracking store is not a usable SQLite database ({reason}): move it "
        f"aside (mv {path} {path}.damaged) and run again to start a new store, or point "
        "MLFLOW_TRACKING_URI at another store"
    )


@contextmanager
def store_errors(uri: str) -> Iterator[None]:
    """Turn a database error MLflow raises on a SQLite store (damage `check_store` could not
    see from the file's first page) into `damaged`, naming the file. SQLAlchemy wraps sqlite3's
    error as `.orig`; a lock or a missing permission (`OperationalError`) is not damage."""
    path = sqlite_path(uri)
    try:
        yield
    except Exception as exc:
        orig = exc if isinstance(exc, sqlite3.Error) else getattr(exc, "orig", None)
        if path is None or not is_damage(orig):
            raise
        raise damaged(path, str(orig)) from exc


def is_damage(exc: object) -> bool:
    """Whether a sqlite3 error says the file is not a database or is malformed."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)
