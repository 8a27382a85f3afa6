"""The decision of a promotion attempt: the guards compared, the certificate checked, forced or not
(what the registry records and the reports render)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from citegate.core.errors import ConfigError
from citegate.tracking.promote.evaluate import CertificateCheck
from citegate.tracking.promote.guards import Guard


@dataclass
class PromotionDecision:
    """The outcome of a promotion attempt."""

    accepted: bool
    forced: bool
    reason: str
    changes: list[tuple[str, Any, Any]]
    candidate: dict[str, dict[str, float]]
    production: dict[str, dict[str, float]]
    guards: list[tuple[Guard, bool]]
    certificate: list[CertificateCheck] = field(default_factory=list)

    @property
    def certificate_fails(self) -> list[CertificateCheck]:
        """The kinds whose certified bound exceeds alpha (`--force` does not override them)."""
        return [c for c in self.certificate if not c.ok]


def decide(
    guards: list[Guard],
    cand: dict[str, dict[str, float]],
    prod: dict[str, dict[str, float]],
    force: bool,
    reason: str,
) -> tuple[bool, list[tuple[Guard, bool]]]:
    """Accept when every guard passes, or when forced (a reason is then mandatory)."""
    for g in guards:
        for side, vals in (("candidate", cand), ("production", prod)):
            if g.metric not in vals:
                raise ConfigError(
                    f"guard metric {g.metric!r} was not measured for the {side} "
                    f"(no such questions in the evaluation sets?); measured: {sorted(vals)}"
                )
    results = [(g, g.passes(cand[g.metric]["value"], prod[g.metric]["value"])) for g in guards]
    if force and not reason.strip():
        raise ConfigError("--force needs --reason: a forced promotion must say why")
    return force or all(ok for _, ok in results), results
