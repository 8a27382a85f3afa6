"""The BM25 indexes' folders on disk (`store.bm25`): how a build writes one, how a reader checks
one, and how the folders nobody can use any more are removed.

Layout under the index root: `KEY/` is a published index (tantivy's files and `MANIFEST`, which
names the builds it holds and every file's size and CRC-32); `.KEY.PID.RAND/` is a build in
progress, and `.KEY.PID.RAND.lock` beside it is the lock file its builder holds (`flock`) for as
long as it builds.

Why a lock file and not the pid or an age: the kernel drops an `flock` the moment its holder dies,
`kill -9` included, so a partial folder whose lock can be taken belongs to a dead builder, while a
live build of any length (minutes at 1M fragments) keeps its lock. A pid can be reused or belong
to another container sharing the folder, and an age rule either deletes a slow live build or
keeps a dead one for that long. The lock file is created and locked before its folder exists, and
removed after it, so a partial folder without a lock file is not a live build of this format
(one left by an older format is removed once `LEGACY_PARTIAL_AGE` old).

Why checksums of our own: tantivy checks a file's footer when it opens it, but a flipped byte
inside a file either raises only when a query reaches it or silently changes a ranking (measured
on a 200-document index: flipped bytes in `.fieldnorm` reordered the top 5 without an error). The
manifest's CRC-32 of every file, checked once per process before the index is first opened,
turns any change into "unreadable", and the caller rebuilds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "citegate-bm25.json"
LOCK_SUFFIX = ".lock"
LEGACY_PARTIAL_AGE = 3600.0  # seconds: an unlocked partial folder of an older format this old goes
ORPHAN_LOCK_AGE = 60.0  # seconds: a lock file without its folder, unlocked, this old goes
CHUNK = 1 << 20  # bytes read at a time while checksumming
SKIPPED = (".tantivy-meta.lock", ".tantivy-writer.lock", MANIFEST)  # not checksummed


class UnreadableIndex(Exception):
    """An index folder that fails its manifest (missing, changed or unparsable)."""


@dataclass(frozen=True)
class Manifest:
    """What a published index holds: format version, embedder, corpus -> fragment-set digest."""

    version: str
    embedder_id: str
    sets: dict[str, str]


def _crc(path: Path) -> int:
    crc = 0
    with path.open("rb") as fh:
        while block := fh.read(CHUNK):
            crc = zlib.crc32(block, crc)
    return crc


def _files(folder: Path) -> dict[str, list[int]]:
    """name -> [size, CRC-32] of every file of an index folder but tantivy's lock files."""
    return {
        f.name: [f.stat().st_size, _crc(f)]
        for f in sorted(folder.iterdir())
        if f.is_file() and f.name not in SKIPPED
    }


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Record what a finished (not yet published) index holds and its files' checksums."""
    body = {
        "version": manifest.version,
        "embedder_id": manifest.embedder_id,
        "sets": manifest.sets,
        "files": _files(folder),
    }
    (folder / MANIFEST).write_text(json.dumps(body, sort_keys=True), encoding="utf-8")


def _manifest_body(folder: Path) -> dict[str, Any]:
    try:
        body = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnreadableIndex(f"no readable {MANIFEST}") from exc
    if not isinstance(body, dict) or not isinstance(body.get("files"), dict):
        raise UnreadableIndex(f"{MANIFEST} is not an index manifest")
    return body


def read_manifest(folder: Path) -> Manifest:
    """The manifest of a published index, or `UnreadableIndex`."""
    body = _manifest_body(folder)
    sets = body.get("sets")
    if not isinstance(sets, dict) or not all(isinstance(v, str) for v in sets.values()):
        raise UnreadableIndex(f"{MANIFEST} names no builds")
    return Manifest(str(body.get("version")), str(body.get("embedder_id")), dict(sets))


def verify(folder: Path) -> None:
    """Raise `UnreadableIndex` unless every file the manifest lists is there with its size and
    CRC-32 (a whole read of the index: done once per process per index, `bm25._open`)."""
    files = _manifest_body(folder)["files"]
    for name, want in sorted(files.items()):
        path = folder / name
        try:
            if path.stat().st_size != want[0] or _crc(path) != want[1]:
                raise UnreadableIndex(f"{name} differs from its checksum")
        except OSError as exc:
            raise UnreadableIndex(f"{name} cannot be read ({exc.strerror})") from exc
        except (TypeError, IndexError) as exc:
            raise UnreadableIndex(f"{MANIFEST} lists {name} without its checksum") from exc


@contextlib.contextmanager
def private_folder(root: Path, key: str) -> Iterator[Path]:
    """A new empty folder `.KEY.PID.RAND` under `root` for one build, its lock file held for the
    block; both are removed afterwards (a published folder has been renamed away by then)."""
    root.mkdir(parents=True, exist_ok=True)
    name = f".{key}.{os.getpid()}.{os.urandom(4).hex()}"
    folder, lock = root / name, root / (name + LOCK_SUFFIX)
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        folder.mkdir()
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            lock.unlink(missing_ok=True)
    finally:
        os.close(fd)


def publish(folder: Path, final: Path) -> bool:
    """Move a finished index into place by one rename; False when another builder's identical
    copy was there first (then that one stays and `folder` is removed by its owner)."""
    try:
        os.rename(folder, final)
    except OSError:
        if not final.exists():
            raise
        return False
    return True


def discard(folder: Path) -> None:
    """Remove a published index: renamed out of its key first (a reader never opens a half-deleted
    one), then deleted. Another process having removed it already is fine."""
    aside = folder.with_name(f".{folder.name}.{os.getpid()}.{os.urandom(4).hex()}.discarded")
    try:
        os.rename(folder, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _dead(lock: Path) -> bool:
    """Whether nobody holds `lock` (its builder exited or was killed); False when it is gone."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases the lock we may have taken
    return True


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def prune_partial(root: Path) -> list[str]:
    """Remove the partial folders (and lock files) of builders that are no longer running;
    returns the names removed. A folder whose lock a live builder holds is kept."""
    if not root.is_dir():
        return []
    removed = []
    for entry in sorted(root.iterdir()):
        name = entry.name
        if not name.startswith(".") or name.endswith(LOCK_SUFFIX):
            continue
        lock = root / (name + LOCK_SUFFIX)
        if (
            name.endswith(".discarded")
            or (lock.exists() and _dead(lock))
            or (not lock.exists() and _legacy_dead(entry))
        ):
            shutil.rmtree(entry, ignore_errors=True)
            lock.unlink(missing_ok=True)
            removed.append(name)
    for lock in sorted(root.glob(f".*{LOCK_SUFFIX}")):
        folder = lock.with_name(lock.name.removesuffix(LOCK_SUFFIX))
        # a lock file is created a moment before its builder locks it: only an old one goes
        if not folder.exists() and _age(lock) > ORPHAN_LOCK_AGE and _dead(lock):
            lock.unlink(missing_ok=True)
    return removed


def _legacy_dead(entry: Path) -> bool:
    """A partial folder without a lock file: an older format's, or one being discarded; removed
    once nothing in it changed for `LEGACY_PARTIAL_AGE`."""
    if not entry.is_dir() or _age(entry) < LEGACY_PARTIAL_AGE:
        return False
    return all(_age(f) >= LEGACY_PARTIAL_AGE for f in entry.rglob("*"))


def published(root: Path) -> list[Path]:
    """Every published index folder under `root` (names not starting with a dot)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
