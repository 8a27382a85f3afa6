"""Adopting a role verdict: a passing verdict a notebook wrote into its run folder, copied into a
config's `models/` folder by content digest, so that the config's bar field can name it and a
fresh clone finds it (`citegate models adopt`). A failed verdict, or one from a run that did not
finish or failed its expected-metric check, is refused in one line: a role runs only on a model
that passed the bar its notebook measures, in a run whose numbers are right.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from citegate.core.errors import ConfigError
from citegate.core.inputs import read_file_bytes
from citegate.core.verdicts import (
    BAR_FIELDS,
    VERDICT_ROLES,
    VERDICTS_DIR,
    RoleVerdict,
    read_verdict,
    write_verdict,
)

SUMMARY_FILE = "summary.json"  # what `citegate run` writes into a run folder when a run ends
MAX_SUMMARY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Adopted:
    """A verdict adopted: the file written (or already there), the verdict, and the line the
    config needs (`rewrite_bar: models/verdict-rewrite-<digest12>.json`)."""

    path: Path
    verdict: RoleVerdict
    config_line: str


def adopt(source: Path, role: str, into: Path, model: str | None = None) -> Adopted:
    """Copy the passing verdict on `role` (and `model`, when given) from `source` (a run folder,
    its verdicts/ folder, or one verdict file) into `into` (a config's models/ folder)."""
    if role not in VERDICT_ROLES:
        raise ConfigError(f"unknown role {role!r}; known: {', '.join(VERDICT_ROLES)}")
    verdict, run_folder = _pick(source, role, model)
    check_run(run_folder)
    if not verdict.passed:
        raise ConfigError(
            f"{verdict.model} failed the {role} bar in run {verdict.run} ({verdict.why_not()}); "
            "only a passing verdict is adopted"
        )
    path = write_verdict(into, verdict)
    line = f"{BAR_FIELDS[role]}: {into.name}/{path.name}"
    return Adopted(path, verdict, line)


def _pick(source: Path, role: str, model: str | None) -> tuple[RoleVerdict, Path]:
    """The one verdict on `role` (and `model`) at `source`, and the run folder it came from."""
    if source.is_file():
        return read_verdict(source), source.parent.parent
    folder = source / VERDICTS_DIR if (source / VERDICTS_DIR).is_dir() else source
    if not folder.is_dir():
        raise ConfigError(f"{source}: no such run folder or verdict file")
    found = [read_verdict(p) for p in sorted(folder.glob("verdict-*.json"))]
    mine = [v for v in found if v.role == role and (model is None or v.model == model)]
    if len(mine) == 1:
        return mine[0], folder.parent if folder.name == VERDICTS_DIR else folder
    models = sorted({v.model for v in found if v.role == role})
    if not mine:
        having = f" (it has verdicts on {', '.join(models)})" if models else ""
        raise ConfigError(f"{folder}: no verdict on the {role} role{having}")
    raise ConfigError(
        f"{folder}: {len(mine)} verdicts on the {role} role ({', '.join(models)}); name one with "
        "--model"
    )


def check_run(run_folder: Path) -> None:
    """Refuse a verdict whose run did not finish or failed its expected-metric check, as its
    run folder's `summary.json` says; a folder without one (a notebook run by hand) is refused
    too: only a run `citegate run` finished can vouch for a model."""
    path = run_folder / SUMMARY_FILE
    try:
        summary = json.loads(read_file_bytes(path, "run summary", MAX_SUMMARY_BYTES))
    except OSError:
        raise ConfigError(
            f"{run_folder}: no {SUMMARY_FILE}: only a run that `citegate run` finished can vouch "
            "for a model"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ConfigError(f"{path}: not a run summary (not JSON)") from None
    if not isinstance(summary, dict) or summary.get("status") != "FINISHED":
        status = summary.get("status") if isinstance(summary, dict) else None
        raise ConfigError(f"{run_folder}: the run did not finish (status {status!r})")
    if summary.get("check") == "FAIL":
        raise ConfigError(f"{run_folder}: the run's expected-metric check FAILED")


__all__ = ["Adopted", "adopt", "check_run"]
