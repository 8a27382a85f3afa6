"""Claims the local model generated, audited by hand: the claim check's test on real composer
output rather than on paraphrases built from the data.

`data/claims/smollm2-generated-audit.jsonl` holds 50 sentence-level claims that SmolLM2-135M wrote
as the generative composer (notebook 06, answerable gita-split test questions, EN/RU/HI), each
paired with the note the support score ranked best among the five it was shown, and labeled by
reading both: 1 when the note states the claim, 0 otherwise (an invented detail, a reversal, a
restated question or meaningless text), with the reason in one line. One record a line: id,
language, claim, note_address, note, label (0/1), why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.core.inputs import MAX_SOURCE_BYTES, check_size, loads_json

AUDIT_FILE = paths.DATA / "claims" / "smollm2-generated-audit.jsonl"
FIELDS = ("id", "language", "claim", "note_address", "note", "label", "why")


@dataclass(frozen=True)
class AuditedClaim:
    """One generated claim, the note it is checked against, and the auditor's label."""

    id: str
    language: str
    claim: str
    note_address: str
    note: str
    label: int
    why: str


def _record(path: Path, n: int, line: str) -> AuditedClaim:
    """One line as a claim; InputError naming the file and line when it is not one."""
    try:
        obj = loads_json(line)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {n}", f"not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict) or sorted(obj) != sorted(FIELDS):
        raise InputError(path, f"line {n}", f"expected exactly the fields {list(FIELDS)}")
    if obj["label"] not in (0, 1) or isinstance(obj["label"], bool):
        raise InputError(path, f"line {n}", "label must be 0 or 1")
    if not all(isinstance(obj[k], str) and obj[k].strip() for k in FIELDS if k != "label"):
        raise InputError(path, f"line {n}", "every field but label must be a non-empty string")
    return AuditedClaim(**obj)


def load_audited(path: Path = AUDIT_FILE) -> list[AuditedClaim]:
    """Every audited claim of the file (size-limited; one-line errors naming file and line)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, "-", f"cannot read the file ({exc.strerror or exc})") from None
    check_size(path, "-", len(data), MAX_SOURCE_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "-", "is not valid UTF-8") from None
    lines = [(n, s) for n, s in enumerate(text.splitlines(), 1) if s.strip()]
    return [_record(path, n, s) for n, s in lines]


__all__ = ["AUDIT_FILE", "AuditedClaim", "load_audited"]
