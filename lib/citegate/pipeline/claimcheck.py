"""The claim check every answer gets: each sentence-level claim against the notes it cites.

A composed answer cites notes by bare number (`[2]`). After composing, the answer is split into
claims (`citations.split_claims`); every claim and every note it cites are scored together by
the support scorer (`support.support_scores`: the retrieval embedder, claims and notes in
one batched call per prefix); a claim is supported when ANY note it cites reaches `threshold` (one supporting source
suffices). Each claim's verdict travels with the answer (`ClaimStatus`): supported, unsupported,
uncited (states something and cites nothing), fabricated (cites only numbers never offered; a
never-offered number beside an offered one is listed too). Notes offered but cited by no claim
are reported as retrieved-but-uncited. Nothing is hidden: the policy (`PipelineConfig.
unsupported_claims`) decides whether a claim that is not supported is shown flagged or removed
with its reason recorded (`AnswerCheck.removed`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from citegate.core.types import ClaimStatus
from citegate.pipeline.citations import Claim, split_claims

# claims x notes -> support scores (rows: claims, columns: notes)
Scorer = Callable[[Sequence[str], Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim: its text, the note numbers it cites (offered ones first, as written), the
    best support score over the offered notes it cites (None when it cites none), its status,
    and the numbers it cites that were never offered."""

    text: str
    cited: tuple[str, ...]
    score: float | None
    status: ClaimStatus
    fabricated: tuple[str, ...] = ()

    @property
    def shown_ok(self) -> bool:
        """Whether the claim may be shown unflagged: supported and citing nothing fabricated."""
        return self.status == ClaimStatus.SUPPORTED and not self.fabricated


@dataclass(frozen=True)
class AnswerCheck:
    """Every claim's verdict, the notes cited by no claim, what the policy removed, and how the
    check was made (threshold, policy, scorer id, milliseconds spent)."""

    verdicts: tuple[ClaimVerdict, ...]
    uncited_notes: tuple[str, ...]
    threshold: float
    policy: str
    scorer: str
    removed: tuple[ClaimVerdict, ...] = ()
    elapsed_ms: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def kept(self) -> tuple[ClaimVerdict, ...]:
        """The claims shown to the user (all of them under "flag")."""
        return tuple(v for v in self.verdicts if v not in self.removed)

    @property
    def supported_share(self) -> float:
        """Supported claims / all claims (nan for an answer with no claim)."""
        n = len(self.verdicts)
        return self.counts.get(ClaimStatus.SUPPORTED, 0) / n if n else float("nan")

    def to_dict(self) -> dict[str, object]:
        """Plain values for `--json` and reports."""
        return {
            "threshold": self.threshold,
            "policy": self.policy,
            "scorer": self.scorer,
            "elapsed_ms": round(self.elapsed_ms, 2),
            "counts": dict(self.counts),
            "claims": [
                {
                    "text": v.text,
                    "cited": list(v.cited),
                    "score": v.score,
                    "status": str(v.status),
                    "fabricated": list(v.fabricated),
                    "removed": v in self.removed,
                }
                for v in self.verdicts
            ],
            "uncited_notes": list(self.uncited_notes),
        }


def _verdict(
    claim: Claim, row: np.ndarray, column: Mapping[str, int], threshold: float
) -> ClaimVerdict:
    """One claim's verdict from its row of scores against the offered notes."""
    cited = tuple(m for m in claim.markers if m in column)
    fabricated = tuple(m for m in claim.markers if m not in column)
    score = max(float(row[column[m]]) for m in cited) if cited else None
    if not claim.markers:
        status = ClaimStatus.UNCITED
    elif score is None:
        status = ClaimStatus.FABRICATED
    else:
        status = ClaimStatus.SUPPORTED if score >= threshold else ClaimStatus.UNSUPPORTED
    return ClaimVerdict(claim.text, cited, score, status, fabricated)


def check_answer(
    answer: str,
    offered: Mapping[str, str],
    scorer: Scorer,
    threshold: float,
    *,
    policy: str = "flag",
    scorer_id: str = "",
) -> AnswerCheck:
    """Check every claim of `answer` against the `offered` notes (number -> full text) it cites.

    Only cited offered notes are scored (one call of `scorer` for all claims and those notes).
    Under policy "remove", every claim that is not `shown_ok` is removed and kept in `removed`."""
    start = time.perf_counter()
    claims = split_claims(answer)
    cited = [k for k in offered if any(k in c.markers for c in claims)]
    column = {k: i for i, k in enumerate(cited)}
    scores = scorer([c.text for c in claims], [offered[k] for k in cited])
    verdicts = tuple(_verdict(c, scores[n], column, threshold) for n, c in enumerate(claims))
    removed = tuple(v for v in verdicts if not v.shown_ok) if policy == "remove" else ()
    counts = {str(s): sum(1 for v in verdicts if v.status == s) for s in ClaimStatus}
    counts["fabricated_markers"] = sum(len(v.fabricated) for v in verdicts)
    uncited = tuple(k for k in offered if k not in column)
    elapsed = (time.perf_counter() - start) * 1000
    return AnswerCheck(verdicts, uncited, threshold, policy, scorer_id, removed, elapsed, counts)


def flag(v: ClaimVerdict) -> str:
    """The mark a claim carries when it is shown but not supported ("" when it is)."""
    if v.shown_ok:
        return ""
    if v.status == ClaimStatus.SUPPORTED:
        return f"[never offered: {', '.join(v.fabricated)}]"
    reasons = {
        ClaimStatus.UNSUPPORTED: f"[unsupported: best {v.score:.3f}]"
        if v.score is not None
        else "",
        ClaimStatus.UNCITED: "[uncited]",
        ClaimStatus.FABRICATED: f"[fabricated citation: {', '.join(v.fabricated)} never offered]",
    }
    return reasons.get(v.status, f"[{v.status}]")


def shown_text(check: AnswerCheck, labels: Mapping[str, str]) -> str:
    """What the user reads: one line per kept claim, `- <claim> [<addresses>]`, the server's
    addresses (`labels`: note number -> address) in place of the bare numbers, and the flag of a
    claim that is not supported."""
    lines = []
    for v in check.kept:
        where = "; ".join(labels.get(k, k) for k in v.cited)
        refs = f" [{where}]" if where else ""
        mark = flag(v)
        lines.append(f"- {v.text}{refs}" + (f" {mark}" if mark else ""))
    return "\n".join(lines)


__all__ = [
    "AnswerCheck",
    "ClaimVerdict",
    "Scorer",
    "check_answer",
    "flag",
    "shown_text",
]
