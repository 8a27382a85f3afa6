"""`citegate ask` through `citegate.cli.main`: bad questions and configs are one-line errors (exit
2), a dead model server is a model error (exit 2), never an insufficient corpus, and `--trace
--json` carries every candidate's fate; it answers with the production config unless --design or
--config PATH says otherwise, and says which. Real PostgreSQL (a fresh migrated database, with a tiny
ingested corpus where retrieval needs candidates) and a real closed port for the dead server."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml
from conftest import make_verdict
from llm_stub import dead_url

from citegate.cli import build_parser, main
from citegate.cli.ask import question_and_corpora
from citegate.core import inputs
from citegate.core.config import DESIGN, save_config
from citegate.core.config_files import PRODUCTION, read_production
from citegate.core.errors import QuestionError
from citegate.core.verdicts import write_verdict
from citegate.models.embed import default_embedder
from citegate.models.gate_model import LearnedGate
from citegate.pipeline import service
from citegate.pipeline.retrieve import retrieve
from citegate.pipeline.turn import answer_turn
from citegate.store.ingest import ingest_corpus

TEXT = (
    "Arjuna sees his teachers and kinsmen in the opposing army and lays down his bow.\n\n"
    "Krishna teaches that the self is eternal: it is not born and it does not die.\n\n"
    "One should act without attachment to the fruits of action; this is karma yoga.\n"
)


@pytest.fixture()
def db_env(fresh_db: str, conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch) -> str:
    """DATABASE_URL on a fresh migrated database, and no model keys in the environment."""
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    for name in ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return fresh_db


@pytest.fixture()
def tiny_corpus(db_env: str, conn: psycopg.Connection, tmp_path: Path) -> Iterator[str]:
    """A three-paragraph corpus `tiny` ingested into the fresh database."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "gita_notes.txt").write_text(TEXT, encoding="utf-8")
    ingest_corpus(conn, str(folder), default_embedder(), corpus="tiny", progress=False)
    yield "tiny"


# --------------------------------------------------------------------------- the question


@pytest.mark.parametrize(
    ("question", "why"),
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("\x01\x02 \x7f", "empty"),
        ("🙏🙏 ✨", "no letter or digit"),
        ("?!… —", "no letter or digit"),
        ("what is\x00dharma?", "NUL byte"),
    ],
)
def test_unusable_questions_are_refused(question: str, why: str) -> None:
    with pytest.raises(QuestionError, match=why):
        inputs.clean_question(question)


def test_clean_question_strips_control_characters_but_keeps_text() -> None:
    assert inputs.clean_question("  What is\x07 dharma?\r\n") == "What is dharma?"
    assert inputs.clean_question("line one\n\tline two") == "line one\n\tline two"
    assert inputs.clean_question("Что такое дхарма") == "Что такое дхарма"
    assert inputs.clean_question("कर्म") == "कर्म"  # letters of any script count
    assert inputs.clean_question("2.13") == "2.13"  # a bare verse number is a question too


@pytest.mark.parametrize("question", ["", "  ", "🙏", "a\x00b"])
def test_ask_refuses_a_bad_question_in_one_line(
    question: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", question]) == 2
    err = capsys.readouterr().err
    assert err.startswith("citegate: error: the question") and err.count("\n") == 1
    assert "Traceback" not in err


def test_answer_turn_refuses_a_bad_question_before_any_call() -> None:
    with pytest.raises(QuestionError, match="empty"):
        answer_turn(None, " \t", None, None, None, None)  # type: ignore[arg-type]


def test_retrieve_refuses_a_bad_question_before_any_query() -> None:
    with pytest.raises(QuestionError, match="no letter or digit"):
        retrieve(None, "🙏", None, None, None)  # type: ignore[arg-type]


def test_ask_with_a_missing_config_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    assert main(["ask", "What is dharma?", "--config", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("citegate: error:") and "missing.yaml" in err and "Traceback" not in err


# --------------------------------------------------------------------------- a dead model server


DEAD_MODEL = "openrouter/dead-model"  # every role of the configs below: a remote model


def kill_the_model_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point OpenRouter at a closed loopback port: a role whose config names an openrouter/
    model then fails its call (a key alone moves no role: the configs name the model)."""
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-dead-0000")
    monkeypatch.setenv("OPENROUTER_BASE_URL", dead_url())


def config_file(folder: Path, name: str, **changes: object) -> list[str]:
    """`--config PATH` of the design numbers with every role on `DEAD_MODEL` and `changes`."""
    path = folder / f"{name}.yaml"
    save_config(DESIGN.replace(llm=DEAD_MODEL, **changes), path)
    return ["--config", str(path)]


def declining_config(folder: Path) -> list[str]:
    """`--config PATH` of the design numbers with a gate that declines every question (bail-out
    at cosine 0.99): the turn takes the corpus fallback (the config names a run whose bar its
    model passed), whose model call then fails. A corpus without fragments cannot stand in for
    it: retrieval refuses to search one."""
    gate = {"bail_out_score": 0.99, "sufficient_score": 0.995, "good_enough_score": 0.999}
    bar = write_verdict(folder, make_verdict("fallback", DEAD_MODEL)).name
    return config_file(folder, "declining", fallback_bar=bar, **gate)


def generative_config(folder: Path) -> list[str]:
    """`--config PATH` of the design numbers with the generative composer, its model passed as
    if by notebook 06's bar: the coverage gate passes the tiny corpus to the composer, whose
    model call then fails (the extractive composer, the default, calls no model)."""
    bar = write_verdict(folder, make_verdict("composer", DEAD_MODEL)).name
    return config_file(folder, "generative", composer="generative", composer_bar=bar)


@pytest.mark.db
@pytest.mark.parametrize("declines", [True, False], ids=["gate-declines", "tiny-corpus"])
def test_ask_answer_with_a_dead_server_is_a_model_error(
    tiny_corpus: str,
    declines: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    kill_the_model_server(monkeypatch)
    # The design numbers: the coverage gate passes the tiny corpus to the composer (the
    # production gate may decline first, which would test the fallback's call instead).
    which = declining_config(tmp_path) if declines else generative_config(tmp_path)
    ask = ["ask", "Why does Arjuna lay down his bow?", "--answer", "--corpus", tiny_corpus, *which]
    code = main(ask)
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("citegate: error: model error") and "Connection refused" in err
    assert err.count("\n") == 1
    assert "branch: error  (model error (" in out
    assert "corpus insufficient" not in out and "no theses" not in out
    stage = "fallback" if declines else "composer"  # a declining gate: the fallback
    assert f"model error ({stage}:" in out


@pytest.mark.db
def test_a_generative_composer_with_no_bar_is_not_asked_and_ask_says_so(
    tiny_corpus: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    kill_the_model_server(monkeypatch)  # a model call would fail the command
    which = config_file(tmp_path, "unvetted", composer="generative")
    ask = ["ask", "Why does Arjuna lay down his bow?", "--answer", "--corpus", tiny_corpus]
    assert main([*ask, *which]) == 0
    out = capsys.readouterr().out
    assert "composer not run: composer 'generative' has passed no bar (notebook 06" in out
    assert "composer: extractive" in out and "branch: grounded" in out


@pytest.mark.db
def test_the_extractive_composer_answers_with_no_model_and_every_claim_checked(
    tiny_corpus: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    kill_the_model_server(monkeypatch)  # any model call would fail the command
    ask = [
        "ask",
        "Why does Arjuna lay down his bow?",
        "--answer",
        "--json",
        "--corpus",
        tiny_corpus,
    ]
    assert main([*ask, *config_file(tmp_path, "extractive")]) == 0
    turn = json.loads(capsys.readouterr().out)["turn"]
    assert turn["branch"] == "grounded" and turn["composer"] == "extractive"
    assert turn["usage"]["calls"] == 0 and turn["check"]["claims"]
    statuses = {c["status"] for c in turn["check"]["claims"]}
    assert statuses <= {"supported", "unsupported"}  # each cites the note it was taken from
    assert "[1]" not in turn["text"] and turn["text"].startswith("- ")


@pytest.mark.db
def test_ask_answer_json_reports_the_model_error(
    tiny_corpus: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    kill_the_model_server(monkeypatch)
    ask = ["ask", "Who is Krishna?", "--answer", "--json", "--corpus", tiny_corpus]
    assert main([*ask, *declining_config(tmp_path)]) == 2
    turn = json.loads(capsys.readouterr().out)["turn"]
    assert turn["branch"] == "error" and turn["model_error"].startswith("fallback: chat call")
    assert turn["reason"].startswith("model error (fallback:") and turn["text"] == ""


# --------------------------------------------------------------------------- --trace --json


@pytest.mark.db
def test_trace_json_lists_every_candidate(
    tiny_corpus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "Is the self eternal?", "--corpus", tiny_corpus, "--json"]) == 0
    assert "trace" not in json.loads(capsys.readouterr().out)
    assert main(["ask", "Is the self eternal?", "--corpus", tiny_corpus, "--json", "--trace"]) == 0
    data = json.loads(capsys.readouterr().out)
    trace = data["trace"]
    assert trace and {n["fragment_id"] for n in data["notes"]} <= {t["fragment_id"] for t in trace}
    keys = {"fragment_id", "kind", "address", "lanes", "score", "rerank_score", "round", "stage"}
    for row in trace:
        assert set(row) == keys
        assert row["lanes"] and all(isinstance(lane, str) for lane in row["lanes"])
        assert row["round"] >= 1 and isinstance(row["score"], float)
        assert row["stage"].startswith(("kept:", "dropped:", "unused:", "ann_missed"))
    kept = {t["fragment_id"] for t in trace if t["stage"].startswith("kept:")}
    assert kept == {n["fragment_id"] for n in data["notes"]}


# --------------------------------------------------------------------------- which config


class _Stop(Exception):
    """Raised by the fake retrieve once it has seen the config."""


@pytest.mark.parametrize(
    ("flags", "source"),
    [([], "production"), (["--design"], "design"), (["--config", "PATH"], "PATH")],
)
def test_ask_answers_with_the_chosen_config(
    flags: list[str], source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No database: the command's retrieve is replaced by one that records the config it gets."""
    other = tmp_path / "other.yaml"
    save_config(DESIGN.replace(sufficient_score=0.61, bail_out_score=0.3), other)
    flags = [str(other) if f == "PATH" else f for f in flags]
    seen = {}

    def fake_retrieve(conn: object, question: str, cfg: object, *rest: object) -> None:
        seen["cfg"] = cfg
        raise _Stop

    class FakeEmbedder:
        id = DESIGN.embedder

    monkeypatch.setattr(service, "retrieve", fake_retrieve)

    class FakePool:
        def connection(self) -> contextlib.nullcontext[None]:
            return contextlib.nullcontext()

    monkeypatch.setattr(
        service, "connection_pool", lambda url=None, **_: contextlib.nullcontext(FakePool())
    )
    monkeypatch.setattr(service, "default_embedder", FakeEmbedder)
    monkeypatch.setattr(service, "embedder_for", lambda embedder_id: FakeEmbedder())
    with pytest.raises(_Stop):
        main(["--debug", "ask", "What does BG 2.13 say about the soul?", *flags])
    production = read_production()["pipeline"]
    expected = {
        "production": (
            production["sufficient_score"],
            production["bail_out_score"],
            production["gate"],
        ),
        "design": (0.55, 0.40, "coverage"),
        "PATH": (0.61, 0.3, "coverage"),
    }[source]
    assert (seen["cfg"].sufficient_score, seen["cfg"].bail_out_score, seen["cfg"].gate) == expected
    assert production["gate"] != DESIGN.gate  # the two configs really differ


def test_config_and_design_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["ask", "What is dharma?", "--design", "--config", str(PRODUCTION)])
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


@pytest.mark.db
def test_ask_reports_the_config_it_answered_with(
    tiny_corpus: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = read_production()
    question = ["ask", "What does BG 2.13 say about the soul?", "--corpus", tiny_corpus]
    assert main([*question, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"] == {
        "source": "production",
        "version": doc["version"],
        "source_run": doc["provenance"]["source_run"],
        "edited": False,
    }
    assert main(question) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        f"config: production (version {doc['version']}, source run "
        f"{doc['provenance']['source_run']})"
    )
    assert main([*question, "--design", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"] == {
        "source": "design",
        "version": None,
        "source_run": None,
        "edited": False,
    }
    other = tmp_path / "other.yaml"
    save_config(DESIGN, other)
    assert main([*question, "--config", str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["source"] == str(other)


# --------------------------------------------------------------------------- which gate, and why


def named_verse_gate() -> LearnedGate:
    """p = logistic(z(max cosine) − 4 address_absent): naming a verse the index lacks refuses."""
    return LearnedGate(
        features=("max_cosine", "address_absent"),
        language_stats={"*": (0.8, 0.05)},
        mean=(0.8, 0.0),
        scale=(0.05, 1.0),
        coef=(1.0, -4.0),
        intercept=2.0,
        threshold=0.43,
    )


@pytest.mark.db
def test_ask_says_which_gate_decided_and_why(
    tiny_corpus: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = ["ask", "Is the self eternal?", "--corpus", tiny_corpus, "--design"]
    assert main([*question, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    top = data["rounds"][-1]["max_score"]
    assert data["gate"]["kind"] == "coverage" and data["gate"]["signal"] == pytest.approx(top)
    assert data["gate"]["reason"].startswith(f"max cosine {top:.3f} ")
    assert main(question) == 0
    assert capsys.readouterr().out.splitlines()[3] == f"gate: coverage: {data['gate']['reason']}"

    folder = tmp_path / "run"  # a config naming its model file relative to itself (experiment 05)
    folder.mkdir()
    digest = named_verse_gate().save(folder / "gate_model.json")
    learned = DESIGN.replace(gate="learned", gate_model="gate_model.json", gate_model_digest=digest)
    save_config(learned, folder / "recommended_config.yaml")
    named = "What does Chapter 3, Verse 5 say about action?"  # the tiny corpus has no verses
    ask = [
        "ask",
        named,
        "--corpus",
        tiny_corpus,
        "--config",
        str(folder / "recommended_config.yaml"),
    ]
    assert main([*ask, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["decision"] == "insufficient" and data["gate"]["kind"] == "learned"
    assert data["gate"]["reason"].startswith(f"p(answerable)={data['gate']['signal']:.2f} < 0.43")
    assert "named address BG 3.5 is not in the index" in data["gate"]["reason"]
    assert main(ask) == 0
    assert f"gate: learned: {data['gate']['reason']}" in capsys.readouterr().out.splitlines()
    (folder / "gate_model.json").unlink()
    assert main(ask) == 2
    err = capsys.readouterr().err
    assert (
        "gate_model.json: the learned gate's model file is missing" in err and err.count("\n") == 1
    )


# --------------------------------------------------------------------------- where the question goes


@pytest.mark.parametrize(
    ("argv", "question", "corpora"),
    [
        (["--corpus", "tiny", "Is the self eternal?"], "Is the self eternal?", ["tiny"]),
        (["--corpus", "a", "b", "Is the self eternal?"], "Is the self eternal?", ["a", "b"]),
        (["--corpus", "a", "--corpus", "b", "Why act?"], "Why act?", ["a", "b"]),
        (["Is the self eternal?", "--corpus", "a", "b"], "Is the self eternal?", ["a", "b"]),
        (["--corpus", "a", "--json", "Why act?"], "Why act?", ["a"]),
        (["Why act?"], "Why act?", None),
    ],
)
def test_the_question_is_the_question_wherever_corpus_stands(
    argv: list[str], question: str, corpora: list[str] | None
) -> None:
    args = build_parser().parse_args(["ask", *argv])
    assert question_and_corpora(args.question, args.corpus) == (question, corpora)


def test_ask_without_a_question_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--design"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("citegate: error: no question given") and err.count("\n") == 1


@pytest.mark.db
def test_ask_with_corpus_before_the_question_searches_that_corpus(
    tiny_corpus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "--corpus", tiny_corpus, "Is the self eternal?", "--design", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["question"] == "Is the self eternal?"
    assert data["notes"] and all(n["text"].strip() in TEXT for n in data["notes"])


# --------------------------------------------------------------------------- a copy of production


def production_copy(folder: Path, *, models: bool, **changes: object) -> Path:
    """experiments/production.yaml copied into `folder` (with its models/ folder when `models`),
    each of `changes` written over its pipeline value."""
    folder.mkdir(parents=True, exist_ok=True)
    text = PRODUCTION.read_text(encoding="utf-8")
    if changes:
        doc = read_production()
        doc["pipeline"].update(changes)
        text = yaml.safe_dump(doc, sort_keys=False)
    path = folder / "production.yaml"
    path.write_text(text, encoding="utf-8")
    if models:
        shutil.copytree(PRODUCTION.parent / "models", folder / "models")
    return path


def test_a_production_copy_without_its_models_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = production_copy(tmp_path / "elsewhere", models=False)
    assert main(["ask", "What is dharma?", "--config", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    looked = tmp_path / "elsewhere" / "models"
    assert f"it was looked for in {looked};" in err
    assert f"copy {(PRODUCTION.parent / 'models').resolve()} to {looked}" in err
    assert "promote the run" not in err  # the models exist: promoting again is not the fix


@pytest.mark.db
def test_an_edited_production_copy_is_labelled_by_its_path_not_production(
    tiny_corpus: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = read_production()
    edited = production_copy(tmp_path / "edited", models=True, sufficient_score=0.5)
    ask = ["ask", "Is the self eternal?", "--corpus", tiny_corpus, "--config", str(edited)]
    assert main([*ask, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"] == {
        "source": str(edited),
        "version": None,
        "source_run": None,
        "edited": False,
    }
    assert main(ask) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"config: {edited}"
    assert doc["provenance"]["source_run"] not in first
    same = production_copy(tmp_path / "same", models=True)  # production's bytes: its label
    assert (
        main(["ask", "Is the self eternal?", "--corpus", tiny_corpus, "--config", str(same)]) == 0
    )
    assert capsys.readouterr().out.splitlines()[0] == (
        f"config: {same} (version {doc['version']}, source run {doc['provenance']['source_run']})"
    )
