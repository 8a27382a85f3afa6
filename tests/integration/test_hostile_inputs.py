"""The inputs a hostile but realistic user tried. Each is refused in one line with exit
2 naming the input and the rule, changing nothing (or gives the right result); no traceback and
no password reaches the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fingerprint

from citegate.cli import main
from citegate.core import paths

pytestmark = pytest.mark.db


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_refusal(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def beir_folder(root: Path, doc_id: str = "d0", extra: str = "", text: str = "") -> Path:
    """A 3-document BEIR folder whose first document has id `doc_id` (and `text`), with one
    raw `extra` line appended to corpus.jsonl."""
    root.mkdir(parents=True)
    (root / "qrels").mkdir()
    docs = [{"_id": doc_id, "title": "T", "text": text or "The soul is eternal."}]
    docs += [{"_id": f"d{i}", "title": "T", "text": f"Topic {i} text."} for i in (1, 2)]
    lines = [json.dumps(d) for d in docs] + ([extra] if extra else [])
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    queries = [{"_id": "q0", "text": "Is the soul eternal?"}]
    (root / "queries.jsonl").write_text(json.dumps(queries[0]) + "\n", encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text(f"q0\t{doc_id}\t1\n", encoding="utf-8")
    return root


# ---------------------------------------------------------------- rows 1-2: DATABASE_URL


@pytest.mark.parametrize(
    ("url", "secret", "needle"),
    [
        ("postgresql://alice:pa?ssW0rdX@127.0.0.1:1/db", "ssW0rdX", "cannot connect"),
        ("postgresql://alice:S3cretPW1@127.0.0.1:1/db?sslmod=x", "S3cretPW1", "sslmod"),
        ("postgresql://alice:S3cretPW1@127.0.0.1:1/db?Password=S3cretPW1", "S3cretPW1", "Password"),
        ("postgresql://alice:pa ss word@127.0.0.1:1/db", "ss word", "percent-encoded"),
    ],
)
def test_doctor_never_prints_the_password_nor_a_traceback(
    url: str,
    secret: str,
    needle: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", url)
    code, out, err = run_cli(["doctor"], capsys)
    assert_one_line_refusal(code, err, needle)
    assert secret not in out + err and "alice:***@" in out


# ---------------------------------------------------------------- rows 4, 8: export-run


def test_export_of_a_failed_run_is_refused_naming_its_cause(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = paths.runs_dir() / "03_gate_roc" / "20260101T000000Z-abcdef12"
    run_dir.mkdir(parents=True)
    summary = {"run_id": "abcdef1234", "status": "FAILED", "error": "ModelFailure: dead server"}
    (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    code, _, err = run_cli(["export-run", "abcdef12"], capsys)
    assert_one_line_refusal(code, err, "run abcdef12 is FAILED", "ModelFailure", "FINISHED")
    assert not (paths.var_dir() / "exports").exists()


def test_export_set_names_a_set_never_a_path(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.jsonl").write_text("{}\n", encoding="utf-8")
    rel = str(Path("..") / ".." / ".." / outside.relative_to("/") / "stolen")
    code, _, err = run_cli(["export-run", "--set", "../" * 6 + rel], capsys)
    assert_one_line_refusal(code, err, "is a path, not a name")
    assert sorted(p.name for p in outside.iterdir()) == ["stolen.jsonl"]
    assert not (paths.var_dir() / "exports").exists()


def test_an_unexpected_error_is_one_line_with_a_log_holding_the_traceback(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = paths.runs_dir() / "03_gate_roc" / "20260101T000000Z-feedbeef"
    run_dir.mkdir(parents=True)
    summary = {"run_id": "feedbeef00", "status": "FINISHED"}
    (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    (run_dir / "config.json").write_text("{}", encoding="utf-8")
    (run_dir / "datasets.json").write_text('["not a record"]', encoding="utf-8")  # hand-edited
    code, _, err = run_cli(["export-run", "feedbeef"], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("citegate export-run: internal error TypeError") and "feedbeef" in err
    logs = list((paths.var_dir() / "logs").glob("*-export-run-*.log"))
    assert len(logs) == 1 and str(logs[0]) in err
    assert "Traceback (most recent call last)" in logs[0].read_text(encoding="utf-8")
    with pytest.raises(TypeError):
        main(["--debug", "export-run", "feedbeef"])


# ---------------------------------------------------------------- rows 5, 6, 11: import-beir


@pytest.mark.parametrize(
    ("doc_id", "extra", "needle"),
    [
        ("d\x000", "", "U+0000 (a control character)"),
        ("d\x070", "", "U+0007 (a control character)"),
        ("d\u200b0", "", "U+200B (an invisible format character)"),
        ("d" * 201, "", "201 characters long; the limit is 200"),
        (
            "d0",
            '{"_id": "x", "text": "t", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "nested",
        ),
    ],
)
def test_bad_ids_and_deep_json_are_refused_and_nothing_is_written(
    cli_db: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    doc_id: str,
    extra: str,
    needle: str,
) -> None:
    before = fingerprint(cli_db)
    folder = beir_folder(tmp_path / "beir", doc_id, extra)
    code, _, err = run_cli(["data", "import-beir", str(folder), "--name", "mine"], capsys)
    assert code == 2 and "Traceback" not in err and needle in err, err
    assert "nothing was imported" in err
    assert fingerprint(cli_db) == before and not (paths.var_dir() / "imports").exists()


def test_a_long_name_is_refused_before_anything_is_read(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = fingerprint(cli_db)
    folder = beir_folder(tmp_path / "beir")
    code, _, err = run_cli(["data", "import-beir", str(folder), "--name", "a" * 300], capsys)
    assert_one_line_refusal(code, err, "300 characters long; the limit is 64")
    assert fingerprint(cli_db) == before


def test_a_document_over_the_size_limit_is_refused_with_its_size(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = fingerprint(cli_db)
    folder = beir_folder(tmp_path / "beir", text="word " * (6 * 1024 * 1024 // 5 + 1))
    code, _, err = run_cli(["data", "import-beir", str(folder), "--name", "mine"], capsys)
    assert code == 2 and "6.0 MB, over the limit of 5.0 MB" in err and "--max-source-mb" in err
    assert fingerprint(cli_db) == before
    small = beir_folder(tmp_path / "small")
    assert run_cli(["data", "import-beir", str(small), "--name", "mine"], capsys)[0] == 0
    before = fingerprint(cli_db)
    questions = tmp_path / "q.csv"
    questions.write_text("id,text,gold\nq1," + "x" * 2000 + ",d1\n", encoding="utf-8")
    code, _, err = run_cli(
        [
            "data",
            "import-questions",
            str(questions),
            "--corpus",
            "mine",
            "--max-source-mb",
            "0.001",
        ],
        capsys,
    )
    assert_one_line_refusal(code, err, "q.csv", "over the limit of 1,048 bytes")
    assert fingerprint(cli_db) == before


# ---------------------------------------------------------------- rows 7, 9: ask


def test_ask_refuses_an_undecodable_byte_in_one_line(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    question = b"what is the soul \xff".decode("utf-8", errors="surrogateescape")  # as argv has it
    code, _, err = run_cli(["ask", question, "--design"], capsys)
    assert_one_line_refusal(code, err, "not valid UTF-8")


def test_ask_refuses_an_empty_config_file(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing here\n", encoding="utf-8")
    code, out, err = run_cli(["ask", "What is the soul?", "--config", str(empty)], capsys)
    assert_one_line_refusal(code, err, str(empty), "the config file is empty", "--design")
    assert out == ""
