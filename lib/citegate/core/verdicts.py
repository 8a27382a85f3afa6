"""A role's verdict: whether one chat model passed the bar of the notebook that measures the role.

A generative role runs only on a model that passed its bar. The notebook measuring a role
(`VERDICT_NOTEBOOKS`: 01 the query planner and the follow-up rewrite, 04 the fallback, 06 the
composer, the outline planner and the judge) writes one verdict per model it measured into its
run folder (`verdicts/`). An engineer adopts a passing one into the config's `models/` folder
(`citegate models adopt`), where it lies by content digest (`verdict-<role>-<digest12>.json`)
beside the gate and LTR models, and the config names it in the role's bar field
(`BAR_FIELDS`, e.g. `rewrite_bar: models/verdict-rewrite-<digest12>.json`). A service,
`citegate promote` and `citegate models` read it back through `read_verdict`, which refuses in
one line a file that is not a verdict, was altered after it was written (its name carries the
digest of its bytes), or claims a pass its own criteria do not give.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from citegate.core.errors import ConfigError
from citegate.core.inputs import loads_json, read_file_bytes

VERDICT_FORMAT = "citegate-verdict/1"
VERDICT_ROLES = ("planner", "rewrite", "outline", "composer", "fallback", "judge")
# The config field that names each role's verdict: one composer runs at a time, so the outline
# planner's and the generative composer's verdicts share `composer_bar`.
BAR_FIELDS = {
    "planner": "planner_bar",
    "rewrite": "rewrite_bar",
    "outline": "composer_bar",
    "composer": "composer_bar",
    "fallback": "fallback_bar",
    "judge": "judge_bar",
}
VERDICT_NOTEBOOKS = {
    "planner": "01_prefloor_recall",
    "rewrite": "01_prefloor_recall",
    "outline": "06_answer_faithfulness",
    "composer": "06_answer_faithfulness",
    "fallback": "04_fallback_disclaimer",
    "judge": "06_answer_faithfulness",
}
VERDICTS_DIR = "verdicts"  # in a run folder: what its notebook measured
# A verdict holds a handful of criteria: a few KB. Anything near this is not one.
MAX_VERDICT_BYTES = 256 * 1024
MAX_VERDICT_DEPTH = 6
RULES = ("wilson_low>=", "wilson_high<=", "ci_low>", "all", "none", "info")
_NAME = re.compile(r"^verdict-([a-z]+)-([0-9a-f]{12})\.json$")


@dataclass(frozen=True)
class CriterionResult:
    """One line of a bar as measured: the criterion's name and label, the value with its 95%
    interval and n, the threshold and how it applies (`rule`: one of `RULES`), whether failing
    it fails the model (`required`), whether it passed (None for information only) and why
    not."""

    name: str
    label: str
    value: float | None
    ci95: tuple[float | None, float | None]
    n: int
    threshold: float | None
    rule: str
    required: bool
    passed: bool | None
    reason: str = ""


@dataclass(frozen=True)
class RoleVerdict:
    """Whether `model` passed the bar of `role` (every required criterion passed), measured by
    `notebook` in the run whose folder is `run`, with each criterion as measured."""

    role: str
    model: str
    notebook: str
    run: str
    criteria: tuple[CriterionResult, ...]

    @property
    def passed(self) -> bool:
        """Every required criterion passed (a bar with no required criterion never passes)."""
        required = [c for c in self.criteria if c.required]
        return bool(required) and all(c.passed is True for c in required)

    def failures(self) -> list[CriterionResult]:
        """The required criteria that did not pass, in the bar's order."""
        return [c for c in self.criteria if c.required and c.passed is not True]

    def why_not(self) -> str:
        """One line: the failed criteria and their reasons ("" when the verdict passed)."""
        return "; ".join(f"{c.label}: {c.reason or 'failed'}" for c in self.failures())

    def as_dict(self) -> dict[str, Any]:
        """The verdict as its JSON file holds it (`passed` written for readers; it is recomputed
        from the criteria on reading, never trusted)."""
        out = asdict(self)
        out["criteria"] = [{**asdict(c), "ci95": list(c.ci95)} for c in self.criteria]
        return {"format": VERDICT_FORMAT, "passed": self.passed, **out}


def verdict_text(verdict: RoleVerdict) -> str:
    """The canonical JSON text of a verdict (sorted keys, NaN written as null): the same verdict
    always gives the same bytes, so the same file name."""
    return (
        json.dumps(_plain(verdict.as_dict()), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )


def verdict_file_name(verdict: RoleVerdict) -> str:
    """`verdict-<role>-<digest12>.json`: the first 12 hex digits of the SHA-256 of its text."""
    digest = hashlib.sha256(verdict_text(verdict).encode("utf-8")).hexdigest()
    return f"verdict-{verdict.role}-{digest[:12]}.json"


def write_verdict(folder: Path, verdict: RoleVerdict) -> Path:
    """Write `verdict` into `folder` under its digest name and return the path. A file of that
    name already holds the same bytes (the name is their digest), so it is left as it is."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / verdict_file_name(verdict)
    if not path.exists():
        path.write_text(verdict_text(verdict), encoding="utf-8")
    return path


def read_verdict(path: Path) -> RoleVerdict:
    """The verdict in the file at `path`, refused in one `ConfigError` naming the file when it is
    not a regular file of at most `MAX_VERDICT_BYTES`, not JSON of at most `MAX_VERDICT_DEPTH`
    levels, not a verdict (`parse_verdict`), or altered: a file named `verdict-<role>-<digest>`
    must hold bytes of that digest and a verdict on that role. A missing file raises the
    `OSError` for the caller to say where it looked."""
    data = read_file_bytes(path, "verdict file", MAX_VERDICT_BYTES)
    try:
        doc = loads_json(data.decode("utf-8"), MAX_VERDICT_DEPTH)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a verdict file: {_reason(exc)}") from None
    verdict = parse_verdict(doc, str(path))
    if m := _NAME.match(Path(path).name):
        if hashlib.sha256(data).hexdigest()[:12] != m.group(2):
            raise ConfigError(
                f"{path}: the verdict file was altered after it was written (its bytes no longer "
                "have the digest its name carries); adopt it again from its run"
            )
        if m.group(1) != verdict.role:
            raise ConfigError(f"{path}: its name says {m.group(1)!r}, its verdict {verdict.role!r}")
    return verdict


def parse_verdict(doc: Any, where: str) -> RoleVerdict:
    """A `RoleVerdict` from parsed JSON, every field checked (one-line `ConfigError` naming
    `where` and the field). A `passed` the criteria do not give is refused, not believed."""
    if not isinstance(doc, dict) or doc.get("format") != VERDICT_FORMAT:
        raise ConfigError(f"{where}: not a verdict file (format is not {VERDICT_FORMAT!r})")
    role = _text(doc, "role", where)
    if role not in VERDICT_ROLES:
        raise ConfigError(f"{where}: unknown role {role[:40]!r}; known: {', '.join(VERDICT_ROLES)}")
    items = doc.get("criteria")
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{where}: 'criteria' must be a non-empty list")
    criteria = tuple(_criterion(c, f"{where}: criteria[{i}]") for i, c in enumerate(items))
    verdict = RoleVerdict(
        role, _text(doc, "model", where), _text(doc, "notebook", where), _text(doc, "run", where),
        criteria,
    )  # fmt: skip
    if doc.get("passed") is not verdict.passed:
        raise ConfigError(
            f"{where}: 'passed' says {doc.get('passed')!r} but its criteria give {verdict.passed}"
        )
    return verdict


def _criterion(item: Any, where: str) -> CriterionResult:
    """One criterion of a verdict file, its fields type-checked."""
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: must be an object")
    rule = _text(item, "rule", where)
    if rule not in RULES:
        raise ConfigError(f"{where}: unknown rule {rule[:20]!r}; known: {', '.join(RULES)}")
    ci = item.get("ci95")
    if not isinstance(ci, list) or len(ci) != 2:
        raise ConfigError(f"{where}: 'ci95' must be a list of two numbers or nulls")
    n = item.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ConfigError(f"{where}: 'n' must be a whole number of at least 0")
    required, passed = item.get("required"), item.get("passed")
    if not isinstance(required, bool) or not (passed is None or isinstance(passed, bool)):
        raise ConfigError(f"{where}: 'required' must be true or false, 'passed' also or null")
    return CriterionResult(
        _text(item, "name", where), _text(item, "label", where), _number(item, "value", where),
        (_number({"v": ci[0]}, "v", where), _number({"v": ci[1]}, "v", where)), n,
        _number(item, "threshold", where), rule, required, passed, _text(item, "reason", where, True),
    )  # fmt: skip


def _text(doc: dict[str, Any], key: str, where: str, empty: bool = False) -> str:
    """A string field of at most 500 characters (non-empty unless `empty`)."""
    value = doc.get(key, "" if empty else None)
    if not isinstance(value, str) or (not value and not empty) or len(value) > 500:
        raise ConfigError(f"{where}: {key!r} must be a {'' if empty else 'non-empty '}string")
    return value


def _number(doc: dict[str, Any], key: str, where: str) -> float | None:
    """A finite number or null."""
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}: {key!r} must be a finite number or null")
    return float(value)


def _plain(value: Any) -> Any:
    """JSON-safe values: tuples as lists, non-finite floats as null."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _reason(exc: Exception) -> str:
    """The first line of a decoding error, without the input."""
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


__all__ = [
    "BAR_FIELDS",
    "MAX_VERDICT_BYTES",
    "VERDICTS_DIR",
    "VERDICT_FORMAT",
    "VERDICT_NOTEBOOKS",
    "VERDICT_ROLES",
    "CriterionResult",
    "RoleVerdict",
    "parse_verdict",
    "read_verdict",
    "verdict_file_name",
    "verdict_text",
    "write_verdict",
]
