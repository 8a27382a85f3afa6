"""Label audits: the audit file's schema, its card entry, errors naming file + line, the audited
label, and the review sheet's sample (no database)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from citegate.core.errors import InputError
from citegate.corpus import datacheck
from citegate.corpus.audit import (
    AUDITED_LABELS,
    JUDGMENTS,
    audit_path,
    load_audit,
)
from citegate.corpus.builds import heldout_gita_chapters
from citegate.corpus.questions import Question, QuestionSet, apply_audit, build_sets, load_set
from citegate.research.audit_sheet import (
    SheetNote,
    SheetRow,
    audit_sample,
    sheet_digest,
    sheet_markdown,
)
from citegate.research.study import sample

AUDIT = audit_path("gita-split")


def good(**changes: object) -> dict:
    """A valid record (an out_of_corpus question of gita-split judged answerable)."""
    q = next(q for q in load_set("gita-split").questions if q.label == "out_of_corpus")
    rec = {
        "id": q.id,
        "label": q.label,
        "judgment": "answerable",
        "address": "BG 2.48",
        "reason": "2.48 states it",
        "judged_by": "test",
        "method_version": "1",
        "sheet_digest": "0" * 64,
    }
    return {k: v for k, v in {**rec, **changes}.items() if v is not None}


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "gita-split.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------ the committed audit file


def test_committed_audit_records_are_valid_and_indexed() -> None:
    audit = load_audit(AUDIT)  # schema, judgments, address format: InputError otherwise
    assert len(audit) >= 200
    qs = {q.id: q for q in load_set("gita-split").questions}
    held = heldout_gita_chapters()
    for j in audit.values():
        assert j.id in qs and qs[j.id].label == j.label in AUDITED_LABELS
        assert qs[j.id].split == "test"
        assert j.judgment in JUDGMENTS and j.judged_by and j.reason
        if j.judgment == "answerable":
            m = re.fullmatch(r"BG (\d+)\.(\d+)", j.address)
            assert m and int(m.group(1)) not in held, j.id
            assert j.address not in qs[j.id].gold or j.label == "answerable"
        else:
            assert j.address == ""


def test_committed_audit_covers_the_sample() -> None:
    """Every question of the audit sample is judged, and nothing else."""
    want = audit_sample(sample(load_set("gita-split").questions, 400))
    ooc = [q for q in want if q.label == "out_of_corpus"]
    assert len(ooc) >= 150 and len(want) - len(ooc) == 50
    assert set(load_audit(AUDIT)) == {q.id for q in want}


def test_committed_set_carries_the_audit() -> None:
    audit = load_audit(AUDIT)
    s = load_set("gita-split")
    audited = {q.id: q for q in s.questions if q.audit}
    assert set(audited) == set(audit)
    for qid, q in audited.items():
        assert (q.audit, q.audit_address) == (audit[qid].judgment, audit[qid].address)
    held = [q for q in audited.values() if q.audited_label == "held_out_answerable"]
    assert len(held) == sum(
        j.label == "out_of_corpus" and j.judgment == "answerable" for j in audit.values()
    )
    assert all(not q.audit for n in ("gita", "xquad-split") for q in load_set(n).questions)


def test_card_entry_counts_match_the_file() -> None:
    audit = list(load_audit(AUDIT).values())
    entry = datacheck.card_counts(begin=datacheck.AUDIT_BEGIN, end=datacheck.AUDIT_END)
    assert entry == datacheck.audit_markdown(audit)
    for label in AUDITED_LABELS:
        row = next(line for line in entry.splitlines() if line.startswith(f"| {label} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        for judgment, cell in zip(JUDGMENTS, cells[1:], strict=False):
            assert int(cell) == sum(j.label == label and j.judgment == judgment for j in audit)
    for j in audit:
        assert (f"`{j.id}`" in entry) == (j.judgment == "ambiguous")
    card = datacheck.CARD.read_text(encoding="utf-8")
    assert "Who judged" in card and "AI agent" in card


# ------------------------------------------------------------------ schema errors


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("{oops", r"record 2: not valid JSON at line 2"),
        (json.dumps(good(reason=None)), r"record 2: missing field\(s\) \['reason'\]"),
        (json.dumps(good(extra="x")), r"record 2: .*unknown field\(s\) \['extra'\]"),
        (json.dumps(good(judgment="yes")), r"record 2: judgment 'yes' is not one of"),
        (json.dumps(good(label="out_of_scope")), r"record 2: label 'out_of_scope' is not one"),
        (json.dumps(good(address="2.48")), r"record 2: address '2.48' is not a verse address"),
        (json.dumps(good(address="BG 3.5")), r"record 2: address 'BG 3.5' is not indexed"),
        (json.dumps(good(address="BG 19.1")), r"record 2: address 'BG 19.1' is not indexed"),
        (
            json.dumps(good(judgment="not_answerable")),
            r"record 2: a 'not_answerable' judgment names no address",
        ),
        (json.dumps(good(reason=" ")), r"record 2: id, judged_by and reason must not be empty"),
        (json.dumps(good(method_version=1)), r"record 2: field 'method_version' must be a string"),
    ],
)
def test_bad_record_names_file_and_line(tmp_path: Path, record: str, message: str) -> None:
    ok = json.dumps(good(id="HF1-other"))
    path = write(tmp_path, ok, record)
    with pytest.raises(InputError, match=message) as err:
        load_audit(path)
    assert err.value.path == str(path) and err.value.record == 2


def test_duplicate_unknown_and_relabeled_ids(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(good()), json.dumps(good()))
    with pytest.raises(InputError, match=r"record 2: duplicate id .* \(first on line 1\)"):
        load_audit(path)
    s = load_set("gita-split")
    path = write(tmp_path, json.dumps(good()), json.dumps(good(id="no-such-question")))
    with pytest.raises(InputError, match=r"gita-split.jsonl: record 2: question 'no-such"):
        apply_audit(s, path)
    ans = next(q for q in s.questions if q.label == "answerable")
    path = write(tmp_path, json.dumps(good(id=ans.id)))
    with pytest.raises(InputError, match=r"record 1: .* judged as 'out_of_corpus', the set says"):
        apply_audit(s, path)


def test_missing_audit_file_leaves_the_set_alone(tmp_path: Path) -> None:
    s = load_set("gita-split")
    assert apply_audit(s, tmp_path / "none.jsonl") is s
    assert load_audit(tmp_path / "none.jsonl") == {}


def test_build_reads_audits_from_the_given_folder(tmp_path: Path) -> None:
    rec = good()
    (tmp_path / "gita-split.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    sets = build_sets(audits=tmp_path)
    audited = [q for q in sets["gita-split"].questions if q.audit]
    assert [(q.id, q.audit, q.audit_address) for q in audited] == [
        (rec["id"], "answerable", "BG 2.48")
    ]
    assert sets["gita"].digest == load_set("gita").digest  # other sets untouched


# ------------------------------------------------------------------ the question field


def question(**changes: object) -> Question:
    base = Question("q", "text?", "en", "out_of_corpus", ("BG 3.5",), "o", "test", "c", "BG 3.5")
    return replace(base, **changes)


@pytest.mark.parametrize(
    ("label", "audit", "want"),
    [
        ("out_of_corpus", "answerable", "held_out_answerable"),
        ("out_of_corpus", "not_answerable", "out_of_corpus"),
        ("out_of_corpus", "ambiguous", "out_of_corpus"),
        ("out_of_corpus", "", "out_of_corpus"),
        ("answerable", "not_answerable", "answerable"),
        ("answerable", "answerable", "answerable"),
    ],
)
def test_audited_label(label: str, audit: str, want: str) -> None:
    assert question(label=label, audit=audit).audited_label == want
    assert question(label=label, audit=audit).label == label


def test_unaudited_lines_carry_no_audit_fields_and_round_trip(tmp_path: Path) -> None:
    plain, judged = question(), question(id="r", audit="answerable", audit_address="BG 2.48")
    assert "audit" not in json.loads(plain.to_json())
    assert json.loads(judged.to_json())["audit_address"] == "BG 2.48"
    (tmp_path / "t.jsonl").write_text(plain.to_json() + "\n" + judged.to_json() + "\n")
    assert load_set("t", tmp_path).questions == (plain, judged)


def test_set_file_rejects_a_bad_audit_value(tmp_path: Path) -> None:
    bad = json.loads(question().to_json()) | {"audit": "maybe"}
    (tmp_path / "t.jsonl").write_text(question(id="a").to_json() + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"t.jsonl: record 2: audit 'maybe' is not one of"):
        load_set("t", tmp_path)
    bad = json.loads(question().to_json()) | {"audit": "ambiguous", "audit_address": "BG 2.1"}
    (tmp_path / "t.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"record 1: audit_address is only set"):
        load_set("t", tmp_path)


# ------------------------------------------------------------------ the review sheet


def test_audit_sample_is_test_out_of_corpus_then_control() -> None:
    qs = [
        question(id=f"{label}-{split}-{i}", label=label, split=split)
        for i in range(60)
        for label in ("answerable", "out_of_corpus")
        for split in ("tune", "test")
    ]
    got = audit_sample(qs, control=5)
    assert [q.id for q in got] == [f"out_of_corpus-test-{i}" for i in range(60)] + [
        f"answerable-test-{i}" for i in range(5)
    ]


def test_sheet_markdown_and_digest() -> None:
    row = SheetRow(
        "q1",
        "out_of_corpus",
        "en",
        "test",
        "What is yoga?",
        ["BG 8.27"],
        {"BG 8.27": "Steadfast in yoga ..."},
        "answer",
        [SheetNote(1, 7, "BG 2.48", "verse", 0.91, "Evenness of mind is called yoga.")],
    )
    d = sheet_digest([row])
    md = sheet_markdown([row], d)
    assert d in md and "gold BG 8.27 (held out)" in md
    assert "1. `BG 2.48` (verse, cos 0.910): Evenness of mind is called yoga." in md
    assert sheet_digest([replace(row, text="other")]) != d
    assert QuestionSet("s", "c", ()).digest  # the empty set still has a digest


def test_card_entry_that_disagrees_with_the_file_is_refused(tmp_path: Path) -> None:
    card = tmp_path / "CARD.md"
    card.write_text(f"x\n{datacheck.AUDIT_BEGIN}\n| stale |\n{datacheck.AUDIT_END}\n")
    with pytest.raises(InputError, match=r"CARD.md: record -: audit entry disagrees"):
        datacheck.check_audit_card(card)
    datacheck.write_card_counts(
        datacheck.audit_markdown(load_audit(AUDIT).values()),
        card,
        datacheck.AUDIT_BEGIN,
        datacheck.AUDIT_END,
    )
    datacheck.check_audit_card(card)  # rewritten from the file: accepted
