"""The notes file reader (`corpus.notes`): a valid file reads to notes; every refusal is one
line naming the file and the record, never the input echoed back."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from citegate.core.errors import InputError
from citegate.corpus.memory_questions import DEMO_NOTES
from citegate.corpus.notes import NoteKind, body_chunks, read_notes, source_name

GOOD = textwrap.dedent(
    """\
    format: citegate-notes/1
    corpus: gita
    notes:
      - key: soul
        kind: pinned
        lang: en
        triggers: [what happens to the soul]
        body: The self changes bodies as a person changes clothes.
        cites: [BG 2.22]
        author: editors
        date: "2026-01-02"
      - key: setting
        kind: memory
        lang: ru
        triggers: [где происходит Гита]
        body: Диалог на поле битвы.
        cites: []
        author: editors
        date: 2026-01-03
    """
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "notes.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_file_reads_to_notes(tmp_path: Path) -> None:
    nf = read_notes(write(tmp_path, GOOD))
    assert nf.corpus == "gita" and nf.source == str(tmp_path.resolve() / "notes.yaml")
    soul, setting = nf.notes
    assert soul.kind == NoteKind.PINNED and soul.cites == ("BG 2.22",)
    assert soul.address == "note:soul" and setting.written == "2026-01-03"  # a YAML date too


def test_the_content_hash_ignores_the_source_file(tmp_path: Path) -> None:
    a = read_notes(write(tmp_path, GOOD)).notes[0]
    other = tmp_path / "other.yaml"
    other.write_text(GOOD, encoding="utf-8")
    b = read_notes(other).notes[0]
    assert a.source != b.source and a.content_hash() == b.content_hash()
    changed = read_notes(write(tmp_path, GOOD.replace("as a person", "as one")))
    assert changed.notes[0].content_hash() != a.content_hash()


@pytest.mark.parametrize(
    ("old", "new", "record", "why"),
    [
        ("format: citegate-notes/1", "format: other", "-", "format must be"),
        ("corpus: gita\n", "corpus: gita\nextra: 1\n", "-", "unknown key"),
        ("    kind: pinned", "    kind: sticky", "1 (soul)", "kind must be"),
        ("    lang: en", "    lang: fr", "1 (soul)", "lang must be"),
        ("  - key: soul", "  - key: Soul!", "1", "key must match"),
        ("  - key: setting", "  - key: soul", "2 (soul)", "used by an earlier note"),
        ("    cites: [BG 2.22]", "    cites: []", "1 (soul)", "must cite at least one"),
        ("    cites: []", "    cites: [BG 2.22]", "2 (setting)", "a memory note is never cited"),
        ("    cites: [BG 2.22]", "    cites: [BG 2.22, BG 2.22]", "1 (soul)", "repeats"),
        ("    body: The self", "    bodyx: The self", "1 (soul)", "unknown field"),
        ('    date: "2026-01-02"', '    date: "2026-02-30"', "1 (soul)", "YYYY-MM-DD"),
        ('    author: editors\n    date: "2026-01-02"\n', "", "1 (soul)", "missing"),
        (
            "triggers: [what happens to the soul]",
            "triggers: [" + "x" * 201 + "]",
            "1 (soul)",
            "the limit is 200",
        ),
        ("triggers: [what happens to the soul]", "triggers: []", "1 (soul)", "1 to 8"),
        (
            "    body: The self changes bodies as a person changes clothes.",
            '    body: "  "',
            "1 (soul)",
            "body must be non-empty",
        ),  # fmt: skip
        ("    cites: [BG 2.22]", "    cites: [note:setting]", "1 (soul)", "not a fragment addr"),
        ("    cites: [BG 2.22]", '    cites: ["BG 2.22\\nBG 2.23"]', "1 (soul)", "not a fragment"),
        ("    cites: [BG 2.22]", "    cites: [" + "B" * 101 + "]", "1 (soul)", "limit is 100"),
        ("    author: editors", "    author: ''", "1 (soul)", "author must be non-empty"),
    ],
)
def test_each_refusal_names_file_and_record_in_one_line(
    tmp_path: Path, old: str, new: str, record: str, why: str
) -> None:
    assert old in GOOD
    with pytest.raises(InputError) as err:
        read_notes(write(tmp_path, GOOD.replace(old, new, 1)))
    msg = str(err.value)
    assert "\n" not in msg and "notes.yaml" in msg and f"record {record}" in msg and why in msg
    assert "x" * 100 not in msg  # never the input echoed back


def test_an_alias_or_anchor_is_refused_by_the_one_reader(tmp_path: Path) -> None:
    text = GOOD.replace("cites: [BG 2.22]", "cites: &c [BG 2.22]").replace("cites: []", "cites: *c")
    with pytest.raises(InputError, match="notes.yaml: record -: line"):
        read_notes(write(tmp_path, text))


def test_a_key_written_twice_is_refused_not_silently_overwritten(tmp_path: Path) -> None:
    text = GOOD.replace(
        "body: Диалог на поле битвы.", "body: Диалог на поле битвы.\n    body: Второе тело."
    )
    with pytest.raises(InputError) as err:
        read_notes(write(tmp_path, text))
    msg = str(err.value)
    assert "notes.yaml: record 2: line 17, column 5: field body: a key appears twice" in msg
    assert "\n" not in msg and "Второе" not in msg  # one line, never the input echoed back
    top = GOOD.replace("corpus: gita\n", "corpus: gita\ncorpus: other\n")
    with pytest.raises(InputError, match=r"record -: line 3, column 1: a key appears twice"):
        read_notes(write(tmp_path, top))


def test_a_raw_control_character_is_refused_naming_its_place_and_code_point(
    tmp_path: Path,
) -> None:
    text = GOOD.replace("Диалог на поле битвы.", "Диалог\x07 на поле битвы.")
    with pytest.raises(
        InputError, match=r"record -: line 16, column 17: not YAML text \(character U\+0007\)"
    ):
        read_notes(write(tmp_path, text))


@pytest.mark.parametrize(
    ("date", "line", "column"),
    [("2026-02-30", 19, 11), ("2026-13-01", 19, 11), ("2026-02-30 12:00:00", 19, 11)],
)
def test_an_impossible_date_names_the_record_the_field_and_its_place(
    tmp_path: Path, date: str, line: int, column: int
) -> None:
    text = GOOD.replace("    date: 2026-01-03", f"    date: {date}")
    with pytest.raises(InputError) as err:
        read_notes(write(tmp_path, text))
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / 'notes.yaml'}: record 2: line {line}, column {column}: ")
    assert "field date: not a valid date" in msg and date[:7] not in msg and "\n" not in msg
    quoted = GOOD.replace('    date: "2026-01-02"', '    date: "2026-02-30"')
    with pytest.raises(InputError, match=r"record 1 \(soul\): date must be YYYY-MM-DD"):
        read_notes(write(tmp_path, quoted))


def test_a_long_body_is_chunked_and_a_short_one_is_one_chunk() -> None:
    assert body_chunks("One sentence.") == ["One sentence."]
    long = " ".join(f"Sentence number {i} says something." for i in range(120))
    chunks = body_chunks(long)
    assert len(chunks) > 1 and all(len(c) <= 1400 for c in chunks)


def test_a_source_is_the_path_in_the_project_else_the_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert source_name(DEMO_NOTES) == "data/memory/gita-notes.yaml"
    monkeypatch.chdir(DEMO_NOTES.parent)  # the same from any folder, by any path naming it
    assert source_name("gita-notes.yaml") == "data/memory/gita-notes.yaml"
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        write(folder, GOOD)
    assert read_notes(a / "notes.yaml").source != read_notes(b / "notes.yaml").source
    (tmp_path / "link.yaml").symlink_to(a / "notes.yaml")
    monkeypatch.chdir(tmp_path)
    assert {n.source for n in read_notes("link.yaml").notes} == {str(a.resolve() / "notes.yaml")}


def test_the_shipped_demo_notes_read() -> None:
    nf = read_notes(DEMO_NOTES)
    kinds = [n.kind for n in nf.notes]
    assert len(nf.notes) >= 40 and {NoteKind.PINNED, NoteKind.BOOST, NoteKind.MEMORY} <= set(kinds)
    assert {n.lang for n in nf.notes} >= {"en", "ru"}


def test_a_file_without_notes_or_with_a_body_over_the_limit_is_refused(tmp_path: Path) -> None:
    empty = GOOD.split("notes:")[0] + "notes: []\n"
    with pytest.raises(InputError, match="notes.yaml: record -: notes must be a non-empty list"):
        read_notes(write(tmp_path, empty))
    long = GOOD.replace("as a person changes clothes.", "x" * 4001)
    with pytest.raises(InputError, match=r"record 1 \(soul\): body is \d+ characters; the limit"):
        read_notes(write(tmp_path, long))
