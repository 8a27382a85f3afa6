"""A role's bar judged from measured values: each criterion's rule applied to its value and
95% interval, giving the `core.verdicts.CriterionResult` lines of a `RoleVerdict`.

The rules (`core.verdicts.RULES`): `wilson_low>=` (a rate whose Wilson 95% lower bound reaches the
threshold: the model must be good with confidence, not by luck on a few questions),
`wilson_high<=` (a rate of failures whose upper bound stays under the threshold), `ci_low>` (any
statistic whose interval's lower bound clears the threshold, e.g. an AUROC above chance), `all`
(every case, e.g. a disclaimer that must always be there), `none` (a count that must be 0, e.g.
fabricated markers shown unflagged) and `info` (shown, never decides).
An unmeasured criterion (n = 0, or no interval) never passes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from citegate.core.verdicts import CriterionResult, RoleVerdict
from citegate.evaluation.metrics.operation import rate_ci

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Criterion:
    """One line of a bar: its name, what it measures, its threshold, how the threshold applies
    (`rule`) and whether failing it fails the model."""

    name: str
    label: str
    threshold: float
    rule: str
    required: bool = True


def judge_rate(c: Criterion, outcomes: Sequence[bool]) -> CriterionResult:
    """`c` on a rate: the share of true `outcomes` with its Wilson 95% interval."""
    if not len(outcomes):
        return judge(c, math.nan, math.nan, math.nan, 0)
    rate, lo, hi = rate_ci([bool(x) for x in outcomes])
    return judge(c, rate, lo, hi, len(outcomes))


def judge(c: Criterion, value: float, lo: float, hi: float, n: int) -> CriterionResult:
    """`c` applied to a measured `value` with its 95% interval (`lo`, `hi`) over `n` cases."""
    passed, reason = _verdict(c, float(value), float(lo), float(hi), int(n))
    return CriterionResult(
        c.name, c.label, _finite(value), (_finite(lo), _finite(hi)), int(n),
        _finite(c.threshold), c.rule, c.required, passed, reason,
    )  # fmt: skip


def verdict(
    role: str, model: str, notebook: str, run: str, results: Sequence[CriterionResult]
) -> RoleVerdict:
    """The `RoleVerdict` of `model` on `role` from its judged criteria."""
    return RoleVerdict(role, model, notebook, run, tuple(results))


def _verdict(c: Criterion, value: float, lo: float, hi: float, n: int) -> tuple[bool | None, str]:
    """(passed, why not) of one criterion; unmeasured never passes, `info` never decides.
    Plain floats in, so every comparison is a plain bool (a verdict file holds true/false)."""
    if c.rule == "info":
        return None, "information only"
    if n == 0 or not math.isfinite(value):
        return False, NOT_MEASURED
    if c.rule == "all":
        ok = value >= c.threshold
        return ok, "" if ok else f"{value:.0%} of {n}, must be {c.threshold:.0%}"
    if c.rule == "none":
        return value == 0, "" if value == 0 else f"{value:g} of {n}, must be none"
    bound = hi if c.rule == "wilson_high<=" else lo
    if not math.isfinite(bound):
        return False, f"{NOT_MEASURED} (no interval over {n})"
    if c.rule == "ci_low>":
        ok = lo > c.threshold
        why = f"{value:.3f} over {n}, 95% CI low {lo:.3f} not above {c.threshold:.3f}"
    elif c.rule == "wilson_high<=":
        ok = hi <= c.threshold
        why = f"{value:.0%} of {n}, Wilson 95% high {hi:.0%} above {c.threshold:.0%}"
    else:
        ok = lo >= c.threshold
        why = f"{value:.0%} of {n}, Wilson 95% low {lo:.0%} below {c.threshold:.0%}"
    return ok, "" if ok else why


def _finite(x: float) -> float | None:
    """A finite float, or None (JSON null) for NaN and infinities."""
    return float(x) if x is not None and math.isfinite(x) else None


__all__ = ["NOT_MEASURED", "Criterion", "judge", "judge_rate", "verdict"]
