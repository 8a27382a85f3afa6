"""The corpus fallback end to end: the study against a stub that dies (on a real database), the
real local model through llama.cpp, `citegate ask --answer` and notebook 04. The pure parts and
the branches of a turn against a stub are unit tests (`tests/unit/test_fallback.py`,
`test_turn.py`, `test_fallback_disclaimer_study.py`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import FALLBACK_REPLY, make_verdict, verse
from llm_stub import DOWN, Stub, reply, stub_server

from citegate.core import paths
from citegate.core.config import PipelineConfig, save_config
from citegate.core.errors import ModelFailure
from citegate.core.types import Candidate
from citegate.core.verdicts import write_verdict
from citegate.corpus.questions import Question, QuestionSet
from citegate.models.llm import ChatClient
from citegate.models.llm_server import LOCAL_MODEL_ID, LocalLlamaServer
from citegate.pipeline import fallback as F
from citegate.pipeline.outline import outline_call
from citegate.studies import fallback_disclaimer as fs

EN = F.DISCLAIMERS["en"]


# --------------------------------------------------------------------------- model errors in the study


def question(i: int, lang: str = "en") -> Question:
    """An out-of-scope question of a hand-made set."""
    text = f"How do I bake bread number {i}?" if lang == "en" else f"Как испечь хлеб {i}?"
    return Question(f"q{i}", text, lang, "out_of_scope", (), "test", "test", "gita", "")


def hand_set(n: int) -> fs.FallbackQuestions:
    """`n` questions (alternating en/ru) of one set whose probes would search corpus gita."""
    qs = tuple(question(i, "en" if i % 2 else "ru") for i in range(n))
    qset = QuestionSet("hand", "gita", qs)
    return fs.FallbackQuestions(
        {"hand": qset}, {"hand": "gita"}, [fs.Item("hand", "gita", q) for q in qs]
    )


@pytest.fixture()
def remote_stub_env(
    fresh_db: str, conn: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Any]:
    """A fresh database, an empty LLM cache, and the `remote:` route pointed at a stub server
    that answers 3 calls (out of scope) and then fails every call with HTTP 500 (no retry)."""
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-stub-0000")
    replies = [reply({**FALLBACK_REPLY, "in_scope": False})] * 3 + [DOWN]
    with stub_server(replies) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.base_url)
        yield stub


@pytest.mark.db
def test_a_dead_model_fails_the_fallback_study(remote_stub_env: Stub) -> None:
    fq = hand_set(6)
    frame, models = fs.run_calls(
        fq, ["remote:stub-model"], ["asked", "not_asked"], PipelineConfig()
    )
    assert len(frame) == 12 and len(remote_stub_env.requests) == 12
    assert (frame["status"] == "llm_error").sum() == 9 and bool(models["used"].all())
    with pytest.raises(
        ModelFailure,
        match=r"^remote:stub-model: 9 of 12 fallback calls failed \(llm_error: chat call .*"
        r"HTTP 500.*\); allowed share 5%$",
    ):
        fs.check_model_errors(frame, 0.05)
    # below an allowed share the run goes on, and no rate counts a failed call
    assert fs.check_model_errors(frame, 0.8) == {"remote:stub-model": 9}
    errors = fs.error_table(frame)
    assert errors[["calls", "failed"]].to_numpy().tolist() == [[12, 9]]
    assert "HTTP 500" in errors["first error"].iloc[0]
    assert len(fs.scored(frame)) == 3 and set(fs.scored(frame)["branch"]) == {"decline"}
    head = fs.headline(frame)
    assert head["model_error_share.remote:stub-model"] == 0.75
    assert head["in_scope_accuracy.remote:stub-model"] == 1.0  # 3 of 3 scored, not 3 of 12
    assert head["parse_rate.remote:stub-model"] == 1.0
    assert fs.cost_table(frame)["answers"].tolist() == [3]
    assert fs.check_painted(frame) == 1.0


# --------------------------------------------------------------------------- the real local model


@pytest.mark.slow
def test_real_local_model_through_llama_cpp(tmp_path: Path) -> None:
    searched: list[str] = []

    def search(probe: str) -> list[Candidate]:
        searched.append(probe)
        return [verse(1, 0.62), verse(2, 0.41)]

    # SmolLM2-135M, greedy (temperature 0, seed 0), the default 160 tokens: at 96 its JSON was cut
    # off (parse_failure, no probes), so the search and admission below never ran.
    with LocalLlamaServer(n_threads=1) as url:
        client = ChatClient(LOCAL_MODEL_ID, url, cache_path=tmp_path / "llm.sqlite")
        for question, lang in (
            ("Why does Arjuna refuse to fight?", "en"),
            ("Кто такой Кришна?", "ru"),
        ):
            searched.clear()
            fb = F.fallback_turn(client, question, search, admission=0.5)
            fa = fb.answer
            assert fa.lang == lang and fa.calls and fa.calls[0].completion_tokens > 0
            assert fa.status == "ok" and fa.in_scope is True  # the schema grammar parses first try
            assert fb.branch == "fallback" and fb.text == F.paint(fa.answer, lang)
            assert fb.disclaimer == F.disclaimer_for(lang) and fb.text.startswith(fb.disclaimer)
            assert fa.probes and searched == list(fa.probes)  # every probe searched once, in order
            assert [c.fragment_id for c in fb.admitted] == [1]  # cosine 0.62 admitted, 0.41 not
        theses = list(
            outline_call(client, "Why does Arjuna refuse to fight?", [verse(1, 0.8)]).theses
        )
        assert theses == ["Arjuna refuses to fight"]
    assert client.usage.calls == 3  # one per question and one outline: nothing repaired


@pytest.mark.db
@pytest.mark.slow
def test_ask_answer_shows_the_branch(
    demo_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from citegate.cli import main

    for name in ("OPENROUTER_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", demo_db)
    # A gate that bails out below cosine 0.9 (the bread question's best note has 0.837), so the
    # turn takes the fallback path whichever config `ask` defaults to; the config names a
    # verdict, written by the test, as if the bundled model had passed notebook 04's bar (else
    # the turn says "I don't know" with pointers).
    config = tmp_path / "bail_out.yaml"
    bail = PipelineConfig(sufficient_score=0.95, good_enough_score=0.97, bail_out_score=0.9)
    bar = write_verdict(tmp_path, make_verdict("fallback", LOCAL_MODEL_ID)).name
    save_config(bail.replace(fallback_bar=bar), config)
    ask = ["ask", "How do I bake bread?", "--corpus", "gita", "--config", str(config)]
    assert main([*ask, "--answer", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    turn = out["turn"]
    assert out["decision"] == "insufficient" and len(out["notes"]) == 18
    assert turn["branch"] == "fallback" and turn["corpus_insufficient"] is True
    assert turn["reason"].startswith("gate (coverage): max cosine") and turn["theses"] == []
    assert turn["fallback"]["status"] == "ok" and turn["fallback"]["in_scope"] is True
    assert turn["disclaimer"] == EN and turn["text"].startswith(EN + "\n\n")
    assert main([*ask, "--no-fallback"]) == 0
    text = capsys.readouterr().out
    assert "branch: decline  (corpus insufficient: gate (coverage): max cosine" in text
    assert "fallback not run: fallback off for this call" in text
    assert F.NOT_FOUND["en"] in text and "painted disclaimer" not in text


# --------------------------------------------------------------------------- notebook 04


@pytest.mark.db
@pytest.mark.slow
def test_notebook_04_runs_with_tiny_parameters(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citegate.tracking.runner import run_experiment
    from citegate.tracking.spec import load_spec

    monkeypatch.setenv("DATABASE_URL", demo_db)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    out = run_experiment(
        load_spec(paths.EXPERIMENTS / "04_fallback_disclaimer.yaml"), profile="tiny"
    )
    assert out.status == "FINISHED", out.error
    assert out.metrics and all(math.isfinite(v) for v in out.metrics.values())
    assert out.metrics["painted_disclaimer_rate"] == 1.0
    assert "model_exact_rate.smollm2-135m.asked_painted" in out.metrics
    assert len(list((out.run_dir / "figures").glob("*.png"))) == 3
    answers = pd.read_parquet(out.run_dir / "tables" / "answers.parquet")
    assert len(answers) == 4 * 3 and set(answers["variant"]) == set(F.PROMPT_VARIANTS)
    checked = pd.read_parquet(out.run_dir / "tables" / "citation_answers.parquet")
    assert {"outline", "composed"} <= set(checked["format"])  # one answerable question per language
    assert (checked["format"] == "fallback").sum() == (answers["branch"] == "fallback").sum()
    report = (out.run_dir / "report.html").read_text(encoding="utf-8")
    assert "Conclusion" in report and "import " not in report
