"""The embedded server's memory and parallelism, sized once from the machine it runs on.

PostgreSQL's defaults (shared_buffers 128 MB, work_mem 4 MB, maintenance_work_mem 64 MB) are sized
for a server that must start anywhere; the scale bench's million-row corpora and HNSW builds need
more. `sized_settings` is the one place these numbers come from; `apply_sizing` writes them with
`ALTER SYSTEM` and says which need a restart to take effect. The embedded server applies them when
it starts (`db.start_embedded`, restarting a server it has just created); a server behind
`DATABASE_URL` is changed only when asked (`citegate doctor --size-server`).

The shares are pgtune's rules of thumb, smaller for memory: the embedded server shares the
machine with the embedder and the local LLM, so it takes an eighth of memory for its buffers
(pgtune: a quarter, for a dedicated host).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import psycopg

MB = 1024 * 1024
GB = 1024 * MB
CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


@dataclass(frozen=True)
class Machine:
    """What the server may use: memory in bytes and CPU cores."""

    memory: int
    cores: int


@dataclass(frozen=True)
class SettingState:
    """One setting on a server: what it is now, what sizing wants, whether a restart is pending."""

    name: str
    current: str
    wanted: str
    pending_restart: bool

    @property
    def ok(self) -> bool:
        return _norm(self.current) == _norm(self.wanted)


def this_machine() -> Machine:
    """This process's memory (the smaller of physical memory and a cgroup limit) and cores (the
    CPUs it may run on)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            memory = min(memory, int(text))
    return Machine(memory, len(os.sched_getaffinity(0)))


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def _mb(value: int) -> str:
    return f"{value // MB}MB"


def sized_settings(m: Machine) -> dict[str, str]:
    """The settings for machine `m`, as `ALTER SYSTEM` takes them."""
    shared = _clamp(m.memory // 8, 128 * MB, 8 * GB)
    workers = max(1, m.cores)
    return {
        "shared_buffers": _mb(shared),
        "effective_cache_size": _mb(_clamp(m.memory // 2, 512 * MB, 64 * GB)),
        # one sort or hash per query node; a retrieve runs a handful at once
        "work_mem": _mb(_clamp(m.memory // 256, 4 * MB, 256 * MB)),
        # the HNSW build: at 1M x 384 its graph needs ~1.8 GB to build in memory
        "maintenance_work_mem": _mb(_clamp(m.memory // 8, 64 * MB, 4 * GB)),
        "max_worker_processes": str(max(8, workers)),
        "max_parallel_workers": str(workers),
        "max_parallel_workers_per_gather": str(max(0, workers // 2)),
        "max_parallel_maintenance_workers": str(max(0, workers // 2)),
    }


def _norm(value: str) -> str:
    """'1536MB' and '1.5GB' alike: settings compared in kB where they carry a unit."""
    units = {"kB": 1, "MB": 1024, "GB": 1024 * 1024, "TB": 1024**3}
    for unit, factor in units.items():
        if value.endswith(unit) and value[: -len(unit)].replace(".", "", 1).isdigit():
            return str(int(float(value[: -len(unit)]) * factor))
    return value


def states(conn: psycopg.Connection, wanted: dict[str, str]) -> list[SettingState]:
    """Each wanted setting as the server has it now (SHOW's form, `current_setting`) and whether
    a change to it waits for a restart, in one query."""
    rows = conn.execute(
        "SELECT name, current_setting(name), pending_restart FROM pg_settings WHERE name = ANY(%s)",
        (list(wanted),),
    ).fetchall()
    found = {name: (current, pending) for name, current, pending in rows}
    out = []
    for name, want in wanted.items():
        if name not in found:
            raise ValueError(f"the server has no setting {name!r}")
        current, pending = found[name]
        out.append(SettingState(name, current, want, bool(pending)))
    return out


def apply_sizing(conn: psycopg.Connection, wanted: dict[str, str]) -> list[str]:
    """Write every setting that differs with `ALTER SYSTEM` and reload; returns the names that
    take effect only after a restart (needs a superuser)."""
    changed = [s.name for s in states(conn, wanted) if not s.ok]
    for name in changed:
        conn.execute(f"ALTER SYSTEM SET {name} = '{wanted[name]}'")
    if not changed:
        return []
    conn.execute("SELECT pg_reload_conf()")
    at_start = conn.execute(
        "SELECT name FROM pg_settings WHERE context = 'postmaster' AND name = ANY(%s)", (changed,)
    ).fetchall()
    return sorted(r[0] for r in at_start)
