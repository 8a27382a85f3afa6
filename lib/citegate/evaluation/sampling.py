"""Deterministic salted-hash sampling: the one place that turns a key into a stable rank.

Every split and sample in citegate (held-out chapters and articles, tune/test by group, per-label
study samples, follow-up conversations, LTR training questions) orders its items by the sha256 of
`salt:...:key`. A salt fixes one draw; a new salt is a new draw. Ranks do not depend on the order
or the presence of other items, so adding a question never moves an existing one across a split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def salted_hash(*parts: object) -> str:
    """sha256 hex digest of the parts joined by ':' (`salted_hash("salt", "gita", 3)` hashes
    "salt:gita:3"); with one part it is the plain hash of that part."""
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()


def salted_int(*parts: object) -> int:
    """`salted_hash` read as an integer (for buckets: `salted_int(salt, key) % n`)."""
    return int(salted_hash(*parts), 16)


def salted_order(items: Iterable[T], key: Callable[[T], object], *salt: object) -> list[T]:
    """The items sorted by `salted_hash(*salt, key(item))`, lowest first (ties keep input order)."""
    return sorted(items, key=lambda item: salted_hash(*salt, key(item)))


def salted_sample(
    items: Iterable[T], key: Callable[[T], object], limit: int | None, *salt: object
) -> list[T]:
    """The `limit` items with the lowest salted hash (all of them when `limit` is None); a smaller
    limit gives a subset of a larger one."""
    ordered = salted_order(items, key, *salt)
    return ordered if limit is None else ordered[: max(0, limit)]
