"""Label audits: a judge's reading of whether the indexed corpus can answer a labeled question.

A split build's `out_of_corpus` label means "the gold verse is held out", not "the corpus cannot
answer": many such questions are answered by a verse that stays indexed. An audit file
(`data/questions/audits/<set>.jsonl`) records, per question, a judgment read from what the split
corpus returns (`citegate audit-sheet` builds the sheet the judge reads), and the question-set
builder copies it into `Question.audit` / `Question.audit_address`.

One record per line: `id`, `label` (the set's label when judged), `judgment` (one of `JUDGMENTS`),
`address` (the supporting indexed verse "BG c.v" when answerable, else ""), `reason`, `judged_by`,
`method_version`, `sheet_digest` (sha256 of the review sheet the judge read). Every problem raises
`InputError` naming the file and the line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus.builds import heldout_gita_chapters

AUDITS = paths.QUESTIONS / "audits"
JUDGMENTS = ("answerable", "not_answerable", "ambiguous")
AUDITED_LABELS = ("answerable", "out_of_corpus")  # what an audit may judge (not out_of_scope)
METHOD_VERSION = "1"
HELD_OUT_ANSWERABLE = "held_out_answerable"
_ADDRESS = re.compile(r"BG (\d{1,2})\.(\d{1,3})")
_FIELDS: dict[str, type] = {
    "id": str,
    "label": str,
    "judgment": str,
    "address": str,
    "reason": str,
    "judged_by": str,
    "method_version": str,
    "sheet_digest": str,
}


@dataclass(frozen=True)
class Judgment:
    """One audited question: the judge's answer to "can the indexed corpus answer this?"."""

    id: str
    label: str
    judgment: str
    address: str
    reason: str
    judged_by: str
    method_version: str
    sheet_digest: str
    line: int = 0  # line number in the audit file (for error messages), not written

    def to_json(self) -> str:
        """One JSONL line (fields in schema order, `line` omitted)."""
        return json.dumps({k: getattr(self, k) for k in _FIELDS}, ensure_ascii=False)


def audit_path(set_name: str, folder: Path | None = None) -> Path:
    """Where the audit of a question set lives (it may not exist: the set is then unaudited)."""
    return Path(folder or AUDITS) / f"{set_name}.jsonl"


def load_audit(path: Path, held: frozenset[int] | None = None) -> dict[str, Judgment]:
    """Read and validate an audit file: question id -> judgment. A missing file is an empty
    audit; bad JSON, a missing/unknown/mistyped field, an unknown judgment or label, a bad or
    held-out supporting address, or a duplicate id raises `InputError` naming file and line.
    `held`: the chapters a supporting address may not lie in (default gita-split's; a fold audit
    passes none here and each fold set checks its own, `check_fold_addresses`)."""
    path = Path(path)
    if not path.exists():
        return {}
    out: dict[str, Judgment] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        j = parse_judgment(path, n, _object(path, n, line), held)
        if j.id in out:
            raise InputError(path, n, f"duplicate id {j.id!r} (first on line {out[j.id].line})")
        out[j.id] = j
    return out


def _object(path: Path, n: int, line: str) -> dict[str, Any]:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(path, n, f"not valid JSON at line {n}: {exc.msg}") from None
    if not isinstance(rec, dict):
        raise InputError(path, n, "expected a JSON object")
    return rec


def parse_judgment(
    path: Path, n: int, rec: Mapping[str, Any], held: frozenset[int] | None = None
) -> Judgment:
    """One validated audit record (`n`: its line number)."""
    missing = sorted(set(_FIELDS) - set(rec))
    unknown = sorted(set(rec) - set(_FIELDS))
    if missing or unknown:
        raise InputError(path, n, f"missing field(s) {missing}, unknown field(s) {unknown}")
    for name, kind in _FIELDS.items():
        if not isinstance(rec[name], kind):
            raise InputError(path, n, f"field {name!r} must be a string, got {rec[name]!r}")
    if rec["judgment"] not in JUDGMENTS:
        raise InputError(path, n, f"judgment {rec['judgment']!r} is not one of {JUDGMENTS}")
    if rec["label"] not in AUDITED_LABELS:
        raise InputError(path, n, f"label {rec['label']!r} is not one of {AUDITED_LABELS}")
    if not rec["id"].strip() or not rec["judged_by"].strip() or not rec["reason"].strip():
        raise InputError(path, n, "id, judged_by and reason must not be empty")
    _check_address(path, n, rec["judgment"], rec["address"], held)
    return Judgment(**rec, line=n)


def _check_address(
    path: Path, n: int, judgment: str, address: str, held: frozenset[int] | None = None
) -> None:
    """An answerable judgment names one indexed verse "BG c.v"; the others name none."""
    if judgment != "answerable":
        if address:
            raise InputError(path, n, f"a {judgment!r} judgment names no address, got {address!r}")
        return
    m = _ADDRESS.fullmatch(address)
    if not m:
        raise InputError(path, n, f"address {address!r} is not a verse address like 'BG 2.48'")
    held = heldout_gita_chapters() if held is None else held
    if int(m.group(1)) in held or not 1 <= int(m.group(1)) <= 18:
        raise InputError(path, n, f"address {address!r} is not indexed (held-out chapter)")


def check_against(path: Path, audit: Mapping[str, Judgment], labels: Mapping[str, str]) -> None:
    """Every audited id exists in the set (`labels`: id -> label) with the label it was judged
    under; else `InputError` naming the audit file and the record's line."""
    for j in audit.values():
        if j.id not in labels:
            raise InputError(path, j.line, f"question {j.id!r} is not in the set")
        if labels[j.id] != j.label:
            raise InputError(
                path, j.line, f"{j.id!r} was judged as {j.label!r}, the set says {labels[j.id]!r}"
            )


def audit_counts(audit: Iterable[Judgment]) -> dict[str, dict[str, int]]:
    """label -> judgment -> count (every judgment present, zeros included)."""
    items = list(audit)
    c = Counter((j.label, j.judgment) for j in items)
    labels = sorted({j.label for j in items})
    return {lab: {jd: c[(lab, jd)] for jd in JUDGMENTS} for lab in labels}


def check_fold_addresses(path: Path, audit: Mapping[str, Judgment], held: frozenset[int]) -> None:
    """Every judgment a fold set carries names no verse of the chapters that fold holds out
    (`InputError` naming the audit file and line)."""
    for j in audit.values():
        _check_address(path, j.line, j.judgment, j.address, held)
