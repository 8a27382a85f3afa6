"""`citegate memory import|list|show|remove` through the command line's entry point: exit 0 with
what was done, or exit 2 with one line on stderr and the database as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fingerprint, notes_yaml, write_file

from citegate.cli import main
from citegate.core.config_files import production

pytestmark = pytest.mark.db


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`citegate memory ...`: (exit code, stdout, stderr)."""
    code = main(["memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line a refused command prints (exit 2, nothing on stdout)."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith("citegate: error: ")
    return err


def test_import_prints_what_it_wrote_then_unchanged_then_what_replace_replaced(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, label = tiny
    path = write_file(tmp_path, notes_yaml(label))
    src = str(path.resolve())  # a file outside the project: its absolute path is its source
    code, out, _ = run(capsys, "import", str(path))
    assert code == 0
    assert (
        out.strip() == f"{src}: 2 notes written into tiny (0 replaced, 0 removed), 5 units embedded"
    )
    assert run(capsys, "import", str(path))[:2] == (0, f"{src}: unchanged (tiny)\n")
    changed = write_file(tmp_path, notes_yaml(label, "The self is eternal."))
    before = fingerprint(url)
    assert "pass --replace to replace it" in refused(capsys, "import", str(changed))
    assert fingerprint(url) == before
    code, out, _ = run(capsys, "import", str(changed), "--replace")
    assert code == 0 and "2 notes written into tiny (2 replaced, 0 removed)" in out
    assert "The self is eternal." in run(capsys, "show", "eternal-self", "--corpus", "tiny")[1]


def test_a_bad_file_or_a_cite_the_corpus_lacks_is_one_line_and_changes_nothing(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, label = tiny
    before = fingerprint(url)
    lacking = write_file(tmp_path, notes_yaml("nowhere " * 12), "bad.yaml")
    err = refused(capsys, "import", str(lacking))
    assert "bad.yaml: record 1 (eternal-self): cites '" in err and "corpus tiny does not" in err
    assert "nowhere " * 6 not in err  # the input is never echoed back whole
    unread = write_file(
        tmp_path, notes_yaml(label).replace("kind: memory", "kind: aside"), "x.yaml"
    )
    assert "x.yaml: record 2 (setting): kind must be" in refused(capsys, "import", str(unread))
    missing = str(tmp_path / "absent.yaml")
    assert "absent.yaml" in refused(capsys, "import", missing)
    assert fingerprint(url) == before


def test_list_filters_by_corpus_and_kind_and_says_when_there_are_none(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, label = tiny
    assert run(capsys, "list")[:2] == (0, "no curated notes\n")
    path = write_file(tmp_path, notes_yaml(label))
    assert run(capsys, "import", str(path))[0] == 0
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert out.splitlines() == [
        f"tiny\teternal-self\tpinned\ten\t{label}\t{path.resolve()}",
        f"tiny\tsetting\tmemory\ten\t-\t{path.resolve()}",
    ]
    assert run(capsys, "list", "--kind", "memory")[1].splitlines() == [
        f"tiny\tsetting\tmemory\ten\t-\t{path.resolve()}"
    ]
    assert run(capsys, "list", "--corpus", "other")[1] == "no curated notes in other\n"


def test_show_prints_the_whole_note_and_refuses_an_unknown_key(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, label = tiny
    path = write_file(tmp_path, notes_yaml(label))
    run(capsys, "import", str(path))
    code, out, _ = run(capsys, "show", "eternal-self", "--corpus", "tiny")
    assert code == 0
    for part in (
        f"note:eternal-self (pinned, en) in tiny, from {path.resolve()}",
        "author: editors; date: 2026-01-01",
        "  - is the self eternal\n  - does the soul die",
        f"cites: {label}",
        "The self is never born and never dies.",
    ):
        assert part in out
    assert "no note of that key" in refused(capsys, "show", "nope", "--corpus", "tiny")
    # without --corpus: production's first corpus, which holds no note `setting`
    err = refused(capsys, "show", "setting")
    assert err.startswith(f"citegate: error: {production().corpora[0]}: ")


def test_remove_by_key_or_source_and_an_unknown_key_removes_nothing(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, label = tiny
    run(capsys, "import", str(write_file(tmp_path, notes_yaml(label))))
    before = fingerprint(url)
    assert "name the notes" in refused(capsys, "remove", "--corpus", "tiny")
    assert "'nope'" in refused(capsys, "remove", "setting", "nope", "--corpus", "tiny")
    assert "from that source" in refused(capsys, "remove", "--source", "x.yaml", "--corpus", "tiny")
    assert fingerprint(url) == before
    code, out, _ = run(capsys, "remove", "setting", "--corpus", "tiny")
    assert (code, out) == (0, "removed 1 note from tiny\n")
    source = str((tmp_path / "notes.yaml").resolve())  # as `memory list` shows it
    code, out, _ = run(capsys, "remove", "--source", source, "--corpus", "tiny")
    assert (code, out) == (0, "removed 1 note from tiny\n")
    assert run(capsys, "list")[1] == "no curated notes\n"


def test_two_notes_files_of_one_name_in_two_folders_are_two_sources(
    tiny: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, label = tiny
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    a = write_file(tmp_path / "a", notes_yaml(label))
    other = notes_yaml(label).replace("eternal-self", "self-b").replace("key: setting", "key: b")
    b = write_file(tmp_path / "b", other)
    assert run(capsys, "import", str(a))[0] == 0
    code, out, _ = run(capsys, "import", str(b))  # not taken for a's file changed
    assert code == 0 and out.startswith(f"{b.resolve()}: 2 notes written into tiny (0 replaced")
    write_file(tmp_path / "b", other.replace("never dies.", "never dies at all."))
    code, out, _ = run(capsys, "import", str(b), "--replace")
    assert code == 0 and "(2 replaced, 0 removed)" in out  # a's notes untouched
    listed = [line.split("\t")[1::4] for line in run(capsys, "list")[1].splitlines()]
    assert sorted(listed) == sorted(
        [
            [k, str(f.resolve())]
            for k, f in [("eternal-self", a), ("setting", a), ("self-b", b), ("b", b)]
        ]
    )
    monkeypatch.chdir(tmp_path)  # --source may name the file by a relative path too
    assert run(capsys, "remove", "--source", "a/notes.yaml", "--corpus", "tiny")[:2] == (
        0,
        "removed 2 notes from tiny\n",
    )
    assert {line.split("\t")[1] for line in run(capsys, "list")[1].splitlines()} == {"self-b", "b"}


# Control, bidi and zero-width characters in a note, as YAML escapes (the file itself is plain).
HOSTILE_BODY = (
    r"The self \u202eis never\u200b born \x1b[2J\x07and \u2066never\u2069 dies.\n\tIt\x9b lasts."
)
HOSTILE = {"\u202e", "\u200b", "\x1b", "\x07", "\u2066", "\u2069", "\x9b", "\ufeff", "\r"}


def hostile_notes(label: str) -> str:
    """A notes file whose pinned note holds hostile characters in its body, a trigger and its
    author."""
    return (
        notes_yaml(label)
        .replace("body: The self is never born and never dies.", f'body: "{HOSTILE_BODY}"')
        .replace(
            "triggers: [is the self eternal,", r'triggers: ["is the self eternal", "\ufeffx\ry",'
        )
        .replace("author: editors", r'author: "ed\u202eitors"', 1)
    )


def test_control_and_bidi_characters_of_a_note_are_shown_escaped_never_raw(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, label = tiny
    path = write_file(tmp_path, hostile_notes(label), "hostile.yaml")
    assert run(capsys, "import", str(path))[0] == 0
    code, out, _ = run(capsys, "show", "eternal-self", "--corpus", "tiny")
    assert code == 0 and not HOSTILE & set(out), ascii(out)
    assert "author: ed\\u202eitors; date: 2026-01-01" in out
    assert "  - \\ufeffx\\x0dy\n" in out  # one trigger, one line
    body = (
        "body:\n  The self \\u202eis never\\u200b born \\x1b[2J\\x07and \\u2066never\\u2069 dies."
    )
    assert body + "\n  \tIt\\x9b lasts.\n" in out  # the body's own line break and tab kept
    code, out, _ = run(capsys, "list")
    assert code == 0 and not HOSTILE & set(out) and len(out.splitlines()) == 2
    assert all(line.count("\t") == 5 for line in out.splitlines())


def test_ask_shows_a_pinned_note_with_control_characters_escaped(
    tiny: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, label = tiny
    assert run(capsys, "import", str(write_file(tmp_path, hostile_notes(label))))[0] == 0
    ask = ["ask", "is the self eternal", "--corpus", "tiny"]
    assert main(ask) == 0
    out = capsys.readouterr().out
    assert "note:eternal-self" in out and not HOSTILE & set(out), ascii(out)
    assert "The self \\u202eis never\\u200b born \\x1b[2J\\x07and" in out
    assert main([*ask, "--json"]) == 0
    out = capsys.readouterr().out
    assert not HOSTILE & set(out), ascii(out)
    (note,) = [n for n in json.loads(out)["notes"] if n["address"] == "note:eternal-self"]
    assert note["text"] == HOSTILE_BODY.encode().decode("unicode_escape")  # as stored
