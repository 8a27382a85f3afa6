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
import time
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


@dataclass(frozen=True)
class SettingChange:
    """One setting `apply_sizing` wrote: the value the server ran with before, the one written,
    and what `ALTER SYSTEM` had written for it before (None: nothing, the server's files or
    default decided), so the change can be undone exactly."""

    name: str
    old: str
    new: str
    previous: str | None

    @property
    def undo(self) -> str:
        """The SQL statement that puts the server's configuration back as it was."""
        if self.previous is None:
            return f"ALTER SYSTEM RESET {self.name}"
        return f"ALTER SYSTEM SET {self.name} = {_quote(self.previous)}"


@dataclass(frozen=True)
class Sizing:
    """What `size_server` did: the settings it wrote, and every setting the server says waits
    for a restart (`pg_settings.pending_restart`, read after the reload; a change made by
    someone else before counts too, since a restart applies it as well)."""

    changes: list[SettingChange]
    waiting: list[str]

    def undo_command(self) -> str:
        """One shell line that undoes `changes` (psql runs each -c on its own, as ALTER SYSTEM
        must be)."""
        steps = [c.undo for c in self.changes] + ["SELECT pg_reload_conf()"]
        return 'psql "$DATABASE_URL" ' + " ".join(f'-c "{s}"' for s in steps)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def size_server(conn: psycopg.Connection, wanted: dict[str, str]) -> Sizing:
    """Write with `ALTER SYSTEM` every setting that differs from `wanted` or has another value
    waiting for a restart (a restart would otherwise undo the sizing), reload, and read back
    which settings wait for a restart (needs a superuser)."""
    todo = [s for s in states(conn, wanted) if not s.ok or s.pending_restart]
    written = _system_values(conn, [s.name for s in todo])
    changes = [
        SettingChange(
            s.name, s.current, wanted[s.name], s.current if written is None else written.get(s.name)
        )
        for s in todo
    ]
    for change in changes:
        conn.execute(f"ALTER SYSTEM SET {change.name} = {_quote(change.new)}")
    if changes:
        reload_conf(conn)
    return Sizing(changes, pending_restart(conn))


def apply_sizing(conn: psycopg.Connection, wanted: dict[str, str]) -> list[str]:
    """`size_server`, returning the names of the settings that wait for a restart."""
    return size_server(conn, wanted).waiting


def pending_restart(conn: psycopg.Connection) -> list[str]:
    """Every setting whose configured value takes effect only after a restart."""
    rows = conn.execute("SELECT name FROM pg_settings WHERE pending_restart ORDER BY name")
    return [r[0] for r in rows.fetchall()]


def reload_conf(conn: psycopg.Connection, timeout_s: float = 10.0) -> None:
    """Reload the server's configuration and wait until this connection has re-read it (the
    reload is a signal: until then `pg_settings` still shows the old state)."""
    before = conn.execute("SELECT pg_conf_load_time()").fetchone()[0]
    conn.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if conn.execute("SELECT pg_conf_load_time()").fetchone()[0] > before:
            return
        time.sleep(0.02)


def _system_values(conn: psycopg.Connection, names: list[str]) -> dict[str, str] | None:
    """What `ALTER SYSTEM` has written for `names` (postgresql.auto.conf, read through
    pg_file_settings); None where the role may not read that view (an undo then sets the value
    the server ran with)."""
    if not names:
        return {}
    try:
        with conn.transaction():
            rows = conn.execute(
                "SELECT name, setting FROM pg_file_settings WHERE name = ANY(%s) "
                "AND sourcefile LIKE '%%postgresql.auto.conf' ORDER BY seqno",
                (names,),
            ).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return {name: setting for name, setting in rows}
