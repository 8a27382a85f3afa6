"""requirements.lock is the environment pyproject.toml describes: every requirement of the core and
the extras (and of the build system, the installer the Makefile takes from the lock) at a version
inside its range, every entry pinned with hashes, and nothing named in the lock as a direct
requirement that pyproject.toml no longer asks for. `make lock` rewrites the lock when this fails.
The CI's neighbouring versions (.ci/neighbours.txt) lie inside the ranges and off the lock."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from citegate.core import paths

LOCK = paths.ROOT / "requirements.lock"
NEIGHBOURS = paths.ROOT / ".ci" / "neighbours.txt"
MAKEFILE = (paths.ROOT / "Makefile").read_text()


@dataclass
class Entry:
    version: str
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def read_lock() -> dict[str, Entry]:
    """The lock's entries by canonical name: `name==version \\`, its `--hash=` lines, then uv's
    `# via` annotation (one line, or one source per following comment line)."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    in_via = False
    for raw in LOCK.read_text().splitlines():
        line = raw.strip().rstrip("\\").strip()
        if not line:
            continue
        if not raw.startswith((" ", "#")):
            name, sep, version = line.partition("==")
            assert sep and re.fullmatch(r"[A-Za-z0-9._-]+", name), f"not an exact pin: {raw!r}"
            current = entries.setdefault(canonicalize_name(name), Entry(version.strip()))
            in_via = False
        elif current is not None and line.startswith("--hash="):
            current.hashes.append(line.removeprefix("--hash="))
        elif current is not None and line.startswith("# via"):
            rest = line.removeprefix("# via").strip()
            current.via += [rest] if rest else []
            in_via = not rest
        elif current is not None and in_via and line.startswith("#"):
            current.via.append(line.lstrip("#").strip())
        elif not line.startswith("#"):
            raise AssertionError(f"unexpected line in the lock: {raw!r}")
    return entries


def project() -> dict:
    return tomllib.loads((paths.ROOT / "pyproject.toml").read_text())


def requirements() -> list[Requirement]:
    """pyproject.toml's requirements: the core, every extra, and the build system's."""
    data = project()
    listed = list(data["project"]["dependencies"])
    listed += [r for extra in data["project"]["optional-dependencies"].values() for r in extra]
    listed += data["build-system"]["requires"]
    return [Requirement(r) for r in listed]


def test_every_requirement_is_locked_at_a_version_inside_its_range() -> None:
    lock = read_lock()
    for req in requirements():
        name = canonicalize_name(req.name)
        assert name in lock, f"{req} is not in requirements.lock: run `make lock`"
        version = Version(lock[name].version)
        assert req.specifier.contains(version, prereleases=True), (
            f"requirements.lock has {name}=={version}, outside {req}: run `make lock`"
        )


def test_every_lock_entry_is_an_exact_pin_with_sha256_hashes() -> None:
    lock = read_lock()
    assert len(lock) > 50  # the whole environment, not the direct requirements alone
    for name, entry in lock.items():
        assert entry.hashes, f"{name} has no --hash in requirements.lock"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in entry.hashes), name


def test_the_direct_requirements_of_the_lock_are_those_of_pyproject() -> None:
    """A package the lock takes from pyproject.toml (uv's `via citegate`) is still asked for
    there: a dependency dropped from pyproject.toml leaves the lock at the next `make lock`."""
    lock = read_lock()
    direct = {n for n, e in lock.items() if any(v.startswith("citegate") for v in e.via)}
    declared = {canonicalize_name(r.name) for r in requirements()}
    assert direct <= declared, sorted(direct - declared)
    installer = re.search(r"^INSTALLER := (.*)$", MAKEFILE, flags=re.M)
    assert installer, "the Makefile names no INSTALLER"
    missing = {canonicalize_name(n) for n in installer.group(1).split()} - set(lock)
    assert not missing, f"the Makefile installs {sorted(missing)} from the lock, which lacks them"


def test_the_lock_targets_the_python_pyproject_accepts() -> None:
    target = re.search(r"^LOCK_PYTHON := (\S+)$", MAKEFILE, flags=re.M)
    assert target and "--python-version $(LOCK_PYTHON)" in MAKEFILE, "LOCK_TARGET names no Python"
    requires = project()["project"]["requires-python"]
    assert Version(target.group(1)) in Requirement(f"python{requires}").specifier


def test_the_neighbouring_versions_the_ci_keeps_are_inside_the_ranges_and_not_locked() -> None:
    """.ci/install_check.sh installs these before `pip install .`, which must keep them: a
    service that already runs another openai or pandas in the range installs citegate as is."""
    lock = read_lock()
    ranges = {canonicalize_name(r.name): r.specifier for r in requirements()}
    pins = [
        Requirement(line.split("#")[0].strip())
        for line in NEIGHBOURS.read_text().splitlines()
        if line.split("#")[0].strip()
    ]
    assert {canonicalize_name(p.name) for p in pins} >= {"openai", "pandas"}
    for pin in pins:
        name = canonicalize_name(pin.name)
        (exact,) = pin.specifier
        assert exact.operator == "==", pin
        assert ranges[name].contains(exact.version), f"{pin} is outside {ranges[name]}"
        assert exact.version != lock[name].version, f"{pin} is the locked version"


def test_environment_yml_names_the_python_the_lock_targets() -> None:
    """environment.yml (written by `make lock`) gives conda users the lock's Python, inside which
    `make venv PY=python` installs the lock; it lists no package of its own to drift from it."""
    target = re.search(r"^LOCK_PYTHON := (\S+)$", MAKEFILE, re.M)
    env = (paths.ROOT / "environment.yml").read_text(encoding="utf-8")
    deps = re.findall(r"^  - (\S+)$", env, re.M)
    assert target is not None and deps == [f"python={target.group(1)}", "pip", "make"]
    assert "make venv PY=python" in env


def test_the_locked_uv_is_the_one_make_lock_runs() -> None:
    """The virtualenv installs with the lock's uv; `make lock` writes with UV_VERSION's: one uv."""
    pinned = re.search(r"^UV_VERSION := (\S+)$", MAKEFILE, flags=re.M)
    assert pinned and read_lock()["uv"].version == pinned.group(1)
