"""The corpus fallback: painting, disclaimer matching, the branches of a turn (against a scripted
stdlib HTTP stub speaking /v1/chat/completions through the real openai SDK), admission at the
threshold, the real local model through llama.cpp, `citegate ask --answer` and notebook 04."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import make_candidate
from llm_stub import Stub, completion, error, stub_server

from citegate.core import paths
from citegate.core.config import PipelineConfig, save_config
from citegate.core.errors import CitegateError, ConfigError, ModelFailure, check_model_errors
from citegate.core.types import Candidate, RetrievalResult
from citegate.corpus.questions import Question, QuestionSet
from citegate.models.llm import LOCAL_MODEL_ID, ChatClient, LocalLlamaServer
from citegate.pipeline import fallback as F
from citegate.studies import fallback as fs

EN, RU = F.DISCLAIMERS["en"], F.DISCLAIMERS["ru"]
GOOD = {
    "in_scope": True,
    "disclaimer": EN,
    "answer": "Arjuna doubts.",
    "search_queries": ["Arjuna doubt", "knowledge versus action", "karma yoga"],
}


def cand(i: int, score: float, kind: str = "verse") -> Candidate:
    """A hand-built retrieval candidate with a given cosine (a Gita verse, BG 2.<i>)."""
    return make_candidate(
        i,
        corpus="gita",
        kind=kind,
        source_id="bg",
        addr_label=f"BG 2.{i}",
        text=f"note {i} text",
        score=score,
        lanes=("dense:verse@r1",),
    )


# --------------------------------------------------------------------------- pure functions


@pytest.mark.parametrize("lang", ["en", "ru", "hi", "xx"])
@pytest.mark.parametrize(
    "answer", ["Krishna answers.", "", "  ", EN + " Krishna.", RU + " Кришна."]
)
def test_paint_always_carries_the_exact_disclaimer(lang: str, answer: str) -> None:
    text = F.paint(answer, lang)
    want = F.disclaimer_for(lang)
    assert text.startswith(want) and text.count(want) == 1
    assert F.disclaimer_present(text, lang) == (True, True)
    assert F.paint(answer, lang) == text  # deterministic


def test_disclaimers_per_language_fall_back_to_english() -> None:
    assert F.disclaimer_for("ru") == RU != EN
    assert F.disclaimer_for("hi") == EN == F.disclaimer_for("")


@pytest.mark.parametrize(
    ("text", "lang", "want"),
    [
        (f"Sure. {EN} Arjuna doubts.", "en", (True, True)),
        (EN.upper().replace(":", " -"), "en", (False, True)),  # case and punctuation
        (
            "  this answer is NOT from the trusted   sources it comes from general knowledge",
            "en",
            (False, True),
        ),
        ("From general knowledge, not the trusted sources.", "en", (False, True)),  # key words
        ("This answer comes from general knowledge.", "en", (False, False)),  # 'trusted' missing
        ("Arjuna doubts.", "en", (False, False)),
        (RU, "ru", (True, True)),
        (RU.replace("неточным", "неточно"), "ru", (False, True)),  # seen from SmolLM2
        ("Ответ не из проверенного источника, из общего знания.", "ru", (False, True)),
        (EN, "ru", (False, False)),  # the English sentence is not the Russian disclaimer
        ("", "en", (False, False)),
    ],
)
def test_disclaimer_present_exact_vs_normalized(
    text: str, lang: str, want: tuple[bool, bool]
) -> None:
    assert F.disclaimer_present(text, lang) == want


def test_detect_language() -> None:
    assert F.detect_language("Почему Арджуна не хочет сражаться?") == "ru"
    assert F.detect_language("Что значит dharma?") == "ru"
    assert F.detect_language("What does 'дхарма' mean?") == "en"
    assert F.detect_language("कर्म क्या है?") == "en"  # no Hindi disclaimer: English
    assert F.detect_language("") == "en"


def test_admission_at_exactly_the_threshold() -> None:
    hits = [cand(1, 0.5), cand(2, 0.4999), cand(3, 0.73), cand(1, 0.5)]
    admitted = F.admit(hits, 0.5)
    assert [c.fragment_id for c in admitted] == [3, 1]  # 0.5 in, 0.4999 out, one per fragment
    assert F.admit(hits, 0.4999)[-1].fragment_id == 2
    assert F.admit([], 0.5) == []


def test_prompt_variants_and_schema() -> None:
    asked = F.fallback_messages("q", "ru", "asked")[0]["content"]
    painted = F.fallback_messages("q", "ru", "asked_painted")[0]["content"]
    not_asked = F.fallback_messages("q", "ru", "not_asked")[0]["content"]
    assert RU in asked and RU in painted and RU not in not_asked and "Russian" in asked
    assert "already shows" in painted and "already shows" not in asked
    assert "disclaimer" not in F.memory_schema("not_asked")["properties"]
    assert list(F.memory_schema("asked")["properties"])[:2] == ["in_scope", "disclaimer"]
    with pytest.raises(ValueError, match="unknown prompt variant"):
        F.fallback_messages("q", "en", "shout")


def test_parse_reply_tolerates_raw_newlines_in_strings() -> None:
    value, status = F.parse_reply('{"in_scope": true, "answer": "line one\nline two"}')
    assert status == "ok" and value is not None and value.answer == "line one line two"


def test_check_painted_is_a_check() -> None:
    ok = pd.DataFrame(
        {"painted_exact": [True, True], "model": "m", "variant": "v", "qid": ["a", "b"]}
    )
    assert fs.check_painted(ok) == 1.0
    with pytest.raises(CitegateError, match="without the disclaimer"):
        fs.check_painted(ok.assign(painted_exact=[True, False]))


def test_models_not_available_are_skipped_with_a_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path))
    monkeypatch.setattr(fs.run, "QWEN_PACKAGES", ("citegate_no_such_part1",))
    ok, skipped = fs.resolve_models(["smollm2-135m", "qwen2.5-0.5b", "remote:x", "gpt-9"])
    assert list(ok) == ["smollm2-135m"] and ok["smollm2-135m"].is_file()
    assert "not installed" in skipped["qwen2.5-0.5b"] and "no OPENROUTER" in skipped["remote:x"]
    assert "unknown model" in skipped["gpt-9"]


# --------------------------------------------------------------------------- scripted stub server


def client_for(stub: Stub, tmp_path: Path) -> ChatClient:
    return ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")


def reply(obj: dict[str, Any] | str) -> tuple[int, dict[str, Any]]:
    return 200, completion(obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False))


class FakeRetrieval:
    """Stands in for `retrieve`: the question gets `decision` and `notes`; a probe gets `hits`.
    Counts every call, so a test can see whether anything was searched again."""

    def __init__(
        self, decision: str, notes: Sequence[Candidate] = (), hits: Sequence[Candidate] = ()
    ) -> None:
        self.decision, self.notes, self.hits = decision, tuple(notes), tuple(hits)
        self.calls: list[str] = []

    def __call__(self, conn: Any, text: str, cfg: Any, emb: Any, rr: Any) -> RetrievalResult:
        first = not self.calls
        self.calls.append(text)
        notes = self.notes if first else self.hits
        return RetrievalResult(notes, self.decision if first else "answer", (), None)  # type: ignore[arg-type]


def turn(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    replies: list[tuple[int, dict[str, Any]]],
    fake: FakeRetrieval,
    question: str = "Who doubts Krishna?",
    cfg: PipelineConfig | None = None,
    **kw: Any,
) -> tuple[F.Turn, list[dict[str, Any]], ChatClient]:
    monkeypatch.setattr(F, "retrieve", fake)
    with stub_server(replies) as stub:
        client = client_for(stub, tmp_path)
        t = F.answer_turn(None, question, cfg or PipelineConfig(), None, None, client, **kw)  # type: ignore[arg-type]
    return t, [r["body"] for r in stub.requests], client


def test_malformed_json_still_completes_with_painted_disclaimer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("insufficient")
    t, requests, client = turn(
        monkeypatch, tmp_path, [reply('{"in_scope": true, "answer": "Arjuna, }')], fake
    )
    assert t.branch == "fallback" and t.corpus_insufficient and t.reason == "gate: bail out"
    assert t.fallback is not None and t.fallback.status.startswith("parse_failure")
    assert len(requests) == 2  # the reply and one repair; the gate's bail-out skipped the outline
    assert client.usage.parse_failures == 1 and t.usage["calls"] == 2
    assert t.text.startswith(EN) and t.disclaimer == EN and F.disclaimer_present(t.text, "en")[0]
    assert fake.calls == ["Who doubts Krishna?"]  # no probes parsed: nothing searched again


def test_dropped_disclaimer_is_painted_anyway(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("insufficient", hits=[cand(7, 0.5), cand(8, 0.4999)])
    dropped = {**GOOD, "disclaimer": ""}
    t, requests, _ = turn(monkeypatch, tmp_path, [reply(dropped)], fake)
    assert t.fallback is not None and t.fallback.status == "ok"
    assert F.disclaimer_present(t.fallback.model_text, "en") == (False, False)
    assert t.branch == "fallback" and t.text == f"{EN}\n\nArjuna doubts."
    assert fake.calls[1:] == GOOD["search_queries"]  # every probe searched once
    assert [c.fragment_id for c in t.admitted] == [7]  # cosine 0.5 admitted, 0.4999 not
    body = requests[0]
    assert body["response_format"]["type"] == "json_object" and "schema" in body["response_format"]
    assert body["max_tokens"] == 160


def test_out_of_scope_declines_without_searching_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("insufficient", hits=[cand(1, 0.9)])
    t, _, _ = turn(
        monkeypatch, tmp_path, [reply({**GOOD, "in_scope": False})], fake, "Как испечь хлеб?"
    )
    assert t.branch == "decline" and t.lang == "ru" and t.text == F.decline_text("ru")
    assert t.disclaimer == "" and t.probes == () and t.admitted == ()
    assert len(fake.calls) == 1  # only the question itself was retrieved


def test_empty_outline_sets_corpus_insufficient(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("answer", notes=[cand(1, 0.8)], hits=[cand(2, 0.6)])
    t, requests, _ = turn(monkeypatch, tmp_path, [reply({"theses": []}), reply(GOOD)], fake)
    assert t.corpus_insufficient and t.reason == "outline: no theses" and t.branch == "fallback"
    assert t.outline_status == "ok" and len(requests) == 2
    assert "Notes:\n[1] note 1 text" in requests[0]["messages"][1]["content"]


def test_outline_with_theses_is_grounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = FakeRetrieval("weak", notes=[cand(1, 0.8), cand(2, 0.7)])
    plan = {
        "theses": [
            {"text": "The self is eternal.", "notes": [2, 9]},
            {"text": "Uncited.", "notes": []},
        ]
    }
    t, requests, _ = turn(monkeypatch, tmp_path, [reply(plan)], fake)
    assert t.branch == "grounded" and not t.corpus_insufficient and t.fallback is None
    assert t.theses == ("The self is eternal.",) and t.text == "- The self is eternal. [BG 2.2]"
    assert len(requests) == 1 and t.disclaimer == ""


def test_fallback_switch_per_call_overrides_the_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    off = PipelineConfig(enable_corpus_fallback=False)
    t, requests, _ = turn(
        monkeypatch, tmp_path, [reply(GOOD)], FakeRetrieval("insufficient"), cfg=off
    )
    assert t.branch == "decline" and t.text == F.NOT_FOUND["en"] and requests == []
    t, requests, _ = turn(
        monkeypatch,
        tmp_path,
        [reply(GOOD)],
        FakeRetrieval("insufficient"),
        cfg=off,
        enable_fallback=True,
    )
    assert t.branch == "fallback" and len(requests) == 1
    t, requests, _ = turn(
        monkeypatch, tmp_path, [reply(GOOD)], FakeRetrieval("insufficient"), enable_fallback=False
    )
    assert t.branch == "decline" and requests == []


DOWN = (500, error("server down"), {"x-should-retry": "false"})  # fails at once, no retries


def test_a_failing_planner_is_a_model_error_not_an_insufficient_corpus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("answer", notes=[cand(1, 0.8)])
    t, requests, _ = turn(monkeypatch, tmp_path, [DOWN], fake, "Почему Арджуна не хочет сражаться?")
    assert t.outline_status.startswith("llm_error") and t.branch == "error"
    assert not t.corpus_insufficient and "no theses" not in t.reason
    assert t.model_error.startswith("outline planner: chat call") and "HTTP 500" in t.model_error
    assert t.reason == f"model error ({t.model_error})"
    assert t.fallback is None and len(requests) == 1  # the fallback is not asked
    assert t.text == "" and t.disclaimer == ""


def test_a_failing_fallback_call_is_a_model_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRetrieval("insufficient", hits=[cand(1, 0.9)])
    t, requests, _ = turn(monkeypatch, tmp_path, [DOWN], fake)
    assert t.branch == "error" and t.model_error.startswith("fallback: chat call")
    assert t.fallback is not None and t.fallback.status.startswith("llm_error")
    assert t.text == "" and t.probes == () and fake.calls == ["Who doubts Krishna?"]
    assert len(requests) == 1


def test_a_server_that_dies_mid_turn_is_a_model_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(F, "retrieve", FakeRetrieval("answer", notes=[cand(1, 0.8)]))
    with stub_server([reply({"theses": []})], die_after=1) as stub:
        client = ChatClient(
            "stub-model", stub.base_url, cache_path=tmp_path / "c.sqlite", max_retries=0
        )
        t = F.answer_turn(None, "Who doubts?", PipelineConfig(), None, None, client)  # type: ignore[arg-type]
    assert t.outline_status == "ok" and t.theses == ()  # the planner answered: nothing supports it
    assert t.branch == "error" and "Connection" in t.model_error  # then the fallback's server died
    assert t.model_error.startswith("fallback:")


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
    replies = [reply({**GOOD, "in_scope": False})] * 3 + [DOWN]
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


def test_check_model_errors_counts_per_model() -> None:
    ok, bad = "ok", "llm_error: chat call failed: Connection refused"
    statuses = {"a": [ok] * 19 + [bad], "b": [ok] * 10}
    assert check_model_errors(statuses, 0.05, "calls") == {"a": 1, "b": 0}  # 1 of 20 is 5%
    with pytest.raises(ModelFailure, match=r"^a: 2 of 20 calls failed \(llm_error: chat call"):
        check_model_errors({"a": [ok] * 18 + [bad] * 2}, 0.05, "calls")
    with pytest.raises(ModelFailure, match=r"a: 1 of 1 .*; b: 1 of 2 .*allowed share 0%"):
        check_model_errors({"a": [bad], "b": [ok, bad]}, 0.0, "calls")
    assert check_model_errors({"a": ["parse_failure: no JSON"]}, 0.0, "calls") == {"a": 0}
    with pytest.raises(ConfigError, match="MAX_MODEL_ERROR_SHARE"):
        check_model_errors(statuses, 1.5, "calls")


# --------------------------------------------------------------------------- the study's conclusion


def adherence(exact: float, lo: float, hi: float, n: int = 10) -> pd.DataFrame:
    """A one-cell adherence table."""
    return pd.DataFrame(
        [
            {
                "model": "m",
                "variant": "asked",
                "language": "en",
                "n": n,
                "model exact": exact,
                "model exact lo": lo,
                "model exact hi": hi,
                "model normalized": exact,
                "painted": 1.0,
            }
        ]
    )


SCOPE = pd.DataFrame(
    [{"model": "m", "n": 10, "parsed": 1.0, "in-scope accuracy": 0.7, "language match": 0.9}]
)
PROBES = pd.DataFrame(
    [
        {
            "model": "m",
            "variant": "asked",
            "declined": 2,
            "fallback answers": 8,
            "probes per answer": 3.0,
            "admitted at 0.5": 0.25,
        }
    ]
)
COST = pd.DataFrame(
    [
        {
            "model": "m",
            "prompt tokens/call": 200.0,
            "completion tokens/call": 60.0,
            "latency s/call": 1.5,
        }
    ]
)


def test_conclusion_says_painting_makes_the_guarantee_only_when_models_dropped_it() -> None:
    dropped = fs.conclusion(adherence(0.6, 0.31, 0.83), SCOPE, PROBES, COST, 1.0)
    assert "lacked the verbatim disclaimer in 4 of 10 answers" in dropped
    assert "painting it on the server is what makes the guarantee" in dropped
    assert "present in **100%** of the 10 answers" in dropped
    kept = fs.conclusion(adherence(1.0, 0.72, 1.0), SCOPE, PROBES, COST, 1.0)
    assert "what makes the guarantee" not in kept and "cannot tell" in kept
    assert "A rate of 100% is not a certainty" in kept and "runs 72%–100%" in kept
    broken = fs.conclusion(adherence(0.6, 0.31, 0.83), SCOPE, PROBES, COST, 0.9)
    assert "only **90%**" in broken and "did not hold" in broken and "**100%**" not in broken
    assert "what makes the guarantee" not in broken


def test_conclusion_reports_failed_calls() -> None:
    errors = pd.DataFrame(
        [
            {
                "model": "m",
                "calls": 12,
                "failed": 1,
                "failed share": 1 / 12,
                "first error": "llm_error: x",
            }
        ]
    )
    text = fs.conclusion(adherence(0.6, 0.3, 0.8), SCOPE, PROBES, COST, 1.0, errors)
    assert (
        "m: 1 of 12 fallback calls failed (llm_error: x); they are left out of every rate" in text
    )
    none = fs.conclusion(
        adherence(0.6, 0.3, 0.8), SCOPE, PROBES, COST, 1.0, errors.assign(failed=0)
    )
    assert "No fallback call failed (12 calls)." in none


# --------------------------------------------------------------------------- the real local model


@pytest.mark.slow
def test_real_local_model_through_llama_cpp(tmp_path: Path) -> None:
    searched: list[str] = []

    def search(probe: str) -> list[Candidate]:
        searched.append(probe)
        return [cand(1, 0.62), cand(2, 0.41)]

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
        theses = F.outline(client, "Why does Arjuna refuse to fight?", [cand(1, 0.8)])
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
    # turn takes the fallback path whichever config `ask` defaults to.
    config = tmp_path / "bail_out.yaml"
    save_config(
        PipelineConfig(sufficient_score=0.95, good_enough_score=0.97, bail_out_score=0.9), config
    )
    ask = ["ask", "How do I bake bread?", "--corpus", "gita", "--config", str(config)]
    assert main([*ask, "--answer", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    turn = out["turn"]
    assert out["decision"] == "insufficient" and len(out["notes"]) == 18
    assert turn["branch"] == "fallback" and turn["corpus_insufficient"] is True
    assert turn["reason"] == "gate: bail out" and turn["theses"] == []
    assert turn["fallback"]["status"] == "ok" and turn["fallback"]["in_scope"] is True
    assert turn["disclaimer"] == EN and turn["text"].startswith(EN + "\n\n")
    assert main([*ask, "--no-fallback"]) == 0
    text = capsys.readouterr().out
    assert "branch: decline  (corpus insufficient: gate: bail out)" in text
    assert text.rstrip().endswith(F.NOT_FOUND["en"]) and "painted disclaimer" not in text


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
