"""A small on-disk key/value cache (SQLite) for model outputs: embeddings, rerank scores, LLM calls.

Keys are sha256 digests of (model id, inputs), so a re-run costs nothing and gives identical numbers.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path


def digest(*parts: str) -> str:
    """Stable key for a tuple of strings (NUL-separated, so ('a','bc') != ('ab','c'))."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


class DiskCache:
    """Persistent bytes-valued cache in one SQLite file; safe for several processes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB NOT NULL)")
            self._local.conn = conn
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Values for the keys that are cached (missing keys are absent from the result)."""
        out: dict[str, bytes] = {}
        conn = self._conn()
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for k, v in conn.execute(f"SELECT k, v FROM kv WHERE k IN ({marks})", chunk):
                out[k] = v
        return out

    def get(self, key: str) -> bytes | None:
        """The cached value or None."""
        return self.get_many([key]).get(key)

    def put_many(self, items: Iterable[tuple[str, bytes]]) -> None:
        """Store values (last write wins; values are deterministic per key anyway)."""
        conn = self._conn()
        with conn:
            conn.executemany("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", list(items))

    def __len__(self) -> int:
        return self._conn().execute("SELECT count(*) FROM kv").fetchone()[0]
