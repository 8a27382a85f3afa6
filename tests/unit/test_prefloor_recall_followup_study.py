"""Follow-up rewriting study (notebook 01): the conversation builder, the recall and rejection
tables on hand-made frames, the conclusion text, and one rewrite through the real `ChatClient`
against the scripted stub server."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from llm_stub import Stub, completion, error, stub_server

from citegate.core.config import PipelineConfig
from citegate.core.errors import ModelFailure
from citegate.corpus.questions import Question, QuestionSet, mentions_address
from citegate.models.llm import ChatClient
from citegate.pipeline.rewrite import echoes_prompt, rewrite_query
from citegate.studies.prefloor_recall import followup as fu


def q(qid: str, text: str, group: str, language: str = "en", label: str = "answerable") -> Question:
    """A labeled question whose gold is its group, flagged like the real data."""
    return Question(
        id=qid,
        text=text,
        language=language,
        label=label,
        gold=(group,),
        origin="test",
        split="test",
        corpus="gita",
        group=group,
        mentions_address=mentions_address(text),
    )


QUESTIONS = [
    q("a1", "In Chapter 2, Verse 13, what passes from boyhood to old age?", "BG 2.13"),
    q("a2", "How does the verse describe the change of bodies?", "BG 2.13"),
    q("a3", "What is the soul compared to?", "BG 2.13"),  # not elliptical
    q("a4", "Why is the wise one not bewildered, as mentioned in Verse 13?", "BG 2.13"),  # partial
    q("a5", "In Chapter 2, Verse 13, who is not deluded?", "BG 2.13"),
    q("a6", "Why does this verse mention youth?", "BG 2.13"),
    q("b1", "What does the verse say about heat and cold?", "BG 2.14"),  # no turn 1 in group
    q("c1", "БГ 2.20: рождается ли душа?", "BG 2.20", "ru"),
    q("c2", "Что в этом стихе сказано о смерти тела?", "BG 2.20", "ru"),
    q("d1", "In Chapter 3, Verse 5, can one stay without action?", "BG 3.5"),
    q("d2", "Что в этом стихе сказано о гунах?", "BG 3.5", "ru"),  # other language
    q("e1", "अध्याय १, श्लोक ३ में 'आचार्य' किसके लिए है?", "BG 1.3", "hi"),
    q("e2", "इस श्लोक का मुख्य संदेश क्या है?", "BG 1.3", "hi"),
    q("f1", "In Chapter 4, Verse 7, when does Krishna appear?", "BG 4.7", label="out_of_corpus"),
    q("f2", "What does the verse promise?", "BG 4.7", label="out_of_corpus"),
]


# --------------------------------------------------------------------------- conversations


def test_named_verses_reads_english_russian_and_hindi_addresses() -> None:
    assert fu.named_verses("In Chapter 2, Verse 66, what brings peace?") == [(2, 66)]
    assert fu.named_verses("Глава 6, стих 5: почему?") == [(6, 5)]
    assert fu.named_verses("अध्याय १, श्लोक २७ में अर्जुन") == [(1, 27)]
    assert fu.named_verses("What does BG 2.13 say?") == [(2, 13)]
    assert fu.named_verses("How does the verse describe it?") == []


def test_turn_rules() -> None:
    by_id = {x.id: x for x in QUESTIONS}
    assert fu.is_first_turn(by_id["a1"]) and fu.is_first_turn(by_id["c1"])
    assert fu.is_first_turn(by_id["e1"])
    assert not fu.is_first_turn(by_id["a2"])
    wrong_verse = q("x", "In Chapter 2, Verse 14, what is it?", "BG 2.13")
    assert not fu.is_first_turn(wrong_verse)
    assert fu.is_followup(by_id["a2"]) and fu.is_followup(by_id["a6"])
    assert fu.is_followup(by_id["c2"]) and fu.is_followup(by_id["e2"])
    assert not fu.is_followup(by_id["a3"]), "no back-reference"
    assert not fu.is_followup(by_id["a4"]), "names a verse number"
    assert not fu.is_followup(by_id["a1"])
    assert by_id["a2"].mentions_address, "the data flag counts the bare word 'verse'"


def test_conversations_pair_one_per_verse_in_one_language() -> None:
    convs = fu.candidate_conversations(QUESTIONS)
    assert {(c.followup.group, c.language) for c in convs} == {
        ("BG 2.13", "en"),
        ("BG 2.20", "ru"),
        ("BG 1.3", "hi"),
    }
    for c in convs:
        assert c.first.group == c.followup.group
        assert c.first.language == c.followup.language
        assert fu.is_first_turn(c.first) and fu.is_followup(c.followup)
        assert c.first.label == c.followup.label == "answerable"
    en = next(c for c in convs if c.language == "en")
    assert en.first.id in {"a1", "a5"} and en.followup.id in {"a2", "a6"}
    assert en.history == [{"role": "user", "content": en.first.text}]
    assert en.concat() == f"{en.first.text} {en.followup.text}"


def test_conversations_are_deterministic_and_order_free() -> None:
    shuffled = list(QUESTIONS)
    random.Random(7).shuffle(shuffled)
    ids = [c.id for c in fu.candidate_conversations(QUESTIONS, seed=3)]
    assert ids == [c.id for c in fu.candidate_conversations(shuffled, seed=3)]
    seeds = {
        next(c.id for c in fu.candidate_conversations(QUESTIONS, seed=s) if c.language == "en")
        for s in range(20)
    }
    assert len(seeds) > 1, "the seed picks among the eligible turns"


def test_sample_limits_per_language_and_yield_table() -> None:
    extra = [
        q(f"g{i}{t}", text, f"BG 5.{i}")
        for i in range(1, 6)
        for t, text in (("a", f"In Chapter 5, Verse {i}, what?"), ("b", "Why this verse?"))
    ]
    pool = QUESTIONS + extra
    convs = fu.candidate_conversations(pool)
    sampled = fu.sample_conversations(convs, ["en", "ru", "de"], limit=2, seed=0)
    assert [c.language for c in sampled] == ["en", "en", "ru"]
    assert sampled == fu.sample_conversations(convs, ["en", "ru", "de"], limit=2, seed=0)
    assert len(fu.sample_conversations(convs, ["en"], limit=0)) == 6
    table = fu.yield_table(pool, convs, sampled, ["en", "ru", "de"]).set_index("language")
    assert table.loc["en", "conversations available"] == 6
    assert table.loc["en", "conversations sampled"] == 2
    assert table.loc["ru", "turn-1 candidates"] == 1
    assert table.loc["ru", "follow-up candidates"] == 2
    assert table.loc["de", "answerable questions"] == 0


# --------------------------------------------------------------------------- tables


def test_identifiers_kept() -> None:
    original = "What is meant by 'unsolicited opportunity' in the verse?"
    assert fu.identifiers(original) == ["unsolicited opportunity"]
    assert fu.identifiers_kept(original, "BG 2.32 'unsolicited opportunity' meaning") is True
    assert fu.identifiers_kept(original, "BG 2.32 meaning") is False
    assert fu.identifiers_kept(original, None) is None
    assert fu.identifiers_kept("Why this verse?", "anything") is None


def _rewrites() -> pd.DataFrame:
    rows = [
        ("m", "c1", "en", True, "ok", True),
        ("m", "c2", "en", False, "grown: 200 chars", None),
        ("m", "c3", "en", True, "ok", False),
        ("m", "c4", "ru", False, "lost_identifier: quoted string 'x' missing", False),
    ]
    return pd.DataFrame(
        [
            {
                "model": m,
                "conversation": c,
                "language": lang,
                "group": "BG 2.13",
                "first_turn": "In Chapter 2, Verse 13, what?",
                "followup": "and the verse?",
                "rewritten": "BG 2.13 soul" if ok else "long text",
                "accepted": ok,
                "reason": reason,
                "rule": reason.split(":")[0],
                "query_used": "BG 2.13 soul" if ok else "and the verse?",
                "identifiers_kept": kept,
                "echoes_prompt": c == "c3",
            }
            for m, c, lang, ok, reason, kept in rows
        ],
        columns=list(fu.REWRITE_COLUMNS),
    )


def _results() -> pd.DataFrame:
    queries = fu.arm_queries([], _rewrites())
    convs = ["c1", "c2", "c3", "c4"]
    langs = ["en", "en", "en", "ru"]
    base = pd.DataFrame(
        [
            {"conversation": c, "language": lang, "group": "BG 2.13", "arm": a, "model": ""}
            | {"query": "and the verse?" if a == "raw" else "In Chapter 2, Verse 13, what?"}
            for c, lang in zip(convs, langs, strict=True)
            for a in ("raw", "concat")
        ]
    )
    queries = pd.concat([base, queries], ignore_index=True)
    notes = {"and the verse?": [9], "In Chapter 2, Verse 13, what?": [1, 2], "BG 2.13 soul": [2]}
    gold = dict.fromkeys(convs, [2])
    return fu.score_hits(queries, notes, gold)


def test_score_hits_and_names_verse() -> None:
    res = _results().set_index(["conversation", "arm", "model"])
    assert not res.loc[("c1", "raw", ""), "hit"]
    assert res.loc[("c1", "concat", ""), "hit"] and res.loc[("c1", "concat", ""), "names_verse"]
    assert res.loc[("c1", "rewrite", "m"), "hit"] and res.loc[("c1", "rewrite", "m"), "names_verse"]
    assert not res.loc[("c2", "rewrite", "m"), "hit"], "rejected: the raw query is searched"
    assert not res.loc[("c2", "raw", ""), "names_verse"]


def test_recall_table_rates_and_intervals() -> None:
    table = fu.recall_table(_results(), _rewrites(), n_boot=200)
    assert list(table["arm"]) == ["raw", "raw", "concat", "concat", "rewrite", "rewrite"]
    t = table.set_index(["arm", "language"])
    assert t.loc[("raw", "en"), "recall"] == 0.0
    assert t.loc[("concat", "en"), "recall"] == 1.0
    assert t.loc[("concat", "en"), "conversations"] == 3
    rw = t.loc[("rewrite", "en")]
    assert rw["recall"] == pytest.approx(2 / 3)
    assert rw["recall lo"] <= rw["recall"] <= rw["recall hi"]
    assert rw["accepted"] == pytest.approx(2 / 3)
    assert rw["identifiers kept"] == 0.5 and rw["with identifiers"] == 2
    assert rw["query names the verse"] == pytest.approx(2 / 3)
    assert pd.isna(t.loc[("raw", "en"), "accepted"])
    assert t.loc[("rewrite", "ru"), "accepted"] == 0.0


def test_rejection_table_and_headline() -> None:
    rej = fu.rejection_table(_rewrites())
    assert set(rej["rule"]) == {"grown", "lost_identifier"}
    assert rej["rejections"].sum() == 2 and rej["share of rewrites"].sum() == 0.5
    assert fu.rejection_table(_rewrites().assign(accepted=True)).empty
    m = fu.headline(_results(), _rewrites())
    assert m["followup_recall_raw"] == 0.0
    assert m["followup_recall_concat"] == 1.0
    assert m["followup_recall_rewrite.m"] == 0.5
    assert m["followup_recall_rewrite.m.en"] == pytest.approx(2 / 3)
    assert m["rewrite_accept_rate.m"] == 0.5
    assert m["followup_conversations"] == 4


def test_paired_gains_and_losses_against_raw() -> None:
    res = _results()
    flipped = res.assign(hit=res["hit"] | ((res["arm"] == "raw") & (res["conversation"] == "c2")))
    p = fu.paired_vs_raw(flipped).set_index(["arm", "model", "language"])
    assert p.loc[("concat", "", "en"), "gains"] == 2 and p.loc[("concat", "", "en"), "losses"] == 0
    assert p.loc[("rewrite", "m", "en"), "gains"] == 2
    assert p.loc[("rewrite", "m", "en"), "losses"] == 1, "c2: raw found it, the rewrite did not"
    assert ("raw", "", "en") not in p.index


def test_echoes_prompt() -> None:
    assert echoes_prompt('{"role": "user", "content": "and the verse?"}')
    assert echoes_prompt("x\n</conversation_history>")
    assert echoes_prompt("<response_data>\nsoul")
    assert not echoes_prompt("BG 2.13 role of the soul")
    assert not echoes_prompt(None)


def test_examples_show_accepted_and_rejected() -> None:
    ex = fu.examples(_rewrites(), _results(), per_model=3)
    assert len(ex) == 3 and set(ex["accepted"]) == {True, False}
    assert list(ex.columns[:4]) == ["model", "language", "follow-up", "rewrite"]


def test_conclusion_numbers_come_from_the_tables() -> None:
    table = fu.recall_table(_results(), _rewrites(), n_boot=200)
    yields = pd.DataFrame(
        [
            {
                "language": "en",
                "answerable questions": 10,
                "turn-1 candidates": 4,
                "follow-up candidates": 3,
                "conversations available": 3,
                "conversations sampled": 3,
            },
            {
                "language": "de",
                "answerable questions": 5,
                "turn-1 candidates": 2,
                "follow-up candidates": 0,
                "conversations available": 0,
                "conversations sampled": 0,
            },
        ]
    )
    models = pd.DataFrame(
        [{"model": "m", "used": True, "why": "stub"}, {"model": "q", "used": False, "why": "gone"}]
    )
    rej = fu.rejection_table(_rewrites())
    text = fu.conclusion(table, rej, yields, models, _results(), _rewrites())
    assert "en 3, de 0" in text
    assert "No conversation in de" in text and "0 follow-up candidates" in text
    assert "**en** (n=3): raw 0%" in text and "concat 100%" in text
    assert "m / en: 67% of rewrites accepted; recall +67 points against the raw" in text
    assert "q skipped: gone" in text
    assert "most rejections by `grown`" in text or "most rejections by `lost_identifier`" in text
    assert "concat / en against raw on the same conversations: 3 found that raw misses, 0 " in text
    assert "m: 1 of its 2 accepted rewrites echo the prompt's data block" in text
    empty = fu.conclusion(pd.DataFrame(), rej, yields, models, pd.DataFrame(), _rewrites())
    assert "Nothing was searched" in empty


# --------------------------------------------------------------------------- the LLM path


def test_rewrite_through_the_stub_sees_only_the_first_turn(tmp_path: Path) -> None:
    conv = next(c for c in fu.candidate_conversations(QUESTIONS) if c.language == "en")
    replies = [(200, completion("BG 2.13 change of bodies from boyhood to old age"))]
    with stub_server(replies) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        res = rewrite_query(client, conv.history, conv.followup.text, turn_index=1)
    row = fu.rewrite_row(conv, "stub", res)
    assert row["accepted"] and row["query_used"].startswith("BG 2.13")
    assert row["rule"] == "ok" and row["identifiers_kept"] is None
    assert fu.names_group(row["query_used"], conv.followup.group)
    user = stub.requests[0]["body"]["messages"][1]["content"]
    assert conv.first.text in user and user.count('"role": "user"') == 2  # history + question
    assert "assistant" not in user


# --------------------------------------------------------------------------- model errors

FAILED = "llm_error: chat call to 'm' (local) failed after 4 attempt(s): Connection refused"


def _with_failures(n: int) -> pd.DataFrame:
    """`_rewrites()` plus `n` English rewrites whose model call failed."""
    rows = [
        {
            "model": "m",
            "conversation": f"x{i}",
            "language": "en",
            "group": "BG 2.13",
            "first_turn": "In Chapter 2, Verse 13, what?",
            "followup": "and the verse?",
            "rewritten": None,
            "accepted": False,
            "reason": FAILED,
            "rule": "llm_error",
            "query_used": "and the verse?",
            "identifiers_kept": None,
            "echoes_prompt": False,
        }
        for i in range(n)
    ]
    return pd.concat([_rewrites(), pd.DataFrame(rows)], ignore_index=True)


def test_failed_rewrites_are_no_rewrites() -> None:
    rewrites = _with_failures(1)
    with pytest.raises(ModelFailure, match=r"^m: 1 of 5 rewrite calls failed \(llm_error: chat"):
        fu.check_model_errors(rewrites, 0.05)
    assert fu.check_model_errors(rewrites, 0.2) == {"m": 1}
    queries = fu.arm_queries([], rewrites)
    assert "x0" not in set(queries["conversation"])  # no rewrite arm row for a failed call
    table = fu.recall_table(_results(), rewrites).set_index(["arm", "language"])
    assert table.loc[("rewrite", "en"), "accepted"] == pytest.approx(2 / 3)  # not 2 of 4
    assert table.loc[("rewrite", "en"), "model errors"] == 1
    rej = fu.rejection_table(rewrites)
    assert "llm_error" not in set(rej["rule"]) and rej["share of rewrites"].sum() == 0.5
    m = fu.headline(_results(), rewrites)
    assert m["rewrite_accept_rate.m"] == 0.5 and m["rewrite_model_error_share.m"] == 0.2
    shown = fu.examples(rewrites, _results(), per_model=9)
    assert len(shown) == 4 and not shown["reason"].str.startswith("llm_error").any()


@pytest.fixture()
def remote_stub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Stub]:
    """The `remote:` route on a stub that rewrites once, then fails every call with HTTP 500."""
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-stub-0000")
    down = (500, error("server down"), {"x-should-retry": "false"})
    with stub_server([(200, completion("BG 2.13 change of bodies")), down]) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.base_url)
        yield stub


def test_a_dead_rewriter_fails_the_study_before_any_search(remote_stub: Stub) -> None:
    qset = QuestionSet("hand", "gita", tuple(QUESTIONS))
    with pytest.raises(ModelFailure, match=r"remote:stub-model: 2 of 3 rewrite calls failed"):
        fu.run_study(
            qset,
            "gita",
            PipelineConfig(),
            languages=["en", "ru", "hi"],
            limit=0,
            models=["remote:stub-model"],
            progress=False,
        )  # no DATABASE_URL needed: it stops before searching
    assert len(remote_stub.requests) == 3


def _paired_text(results: pd.DataFrame) -> str:
    table = fu.recall_table(results, _rewrites())
    yields = pd.DataFrame(
        [
            {
                "language": "en",
                "answerable questions": 40,
                "turn-1 candidates": 20,
                "follow-up candidates": 20,
                "conversations available": 20,
                "conversations sampled": 20,
            }
        ]
    )
    models = pd.DataFrame([{"model": "m", "used": True, "why": "stub"}])
    return fu.conclusion(
        table, fu.rejection_table(_rewrites()), yields, models, results, _rewrites()
    )


def _paired_results(gains: int, losses: int, ties: int) -> pd.DataFrame:
    """Raw and concat hits on gains + losses + ties English conversations."""
    rows = []
    pairs = [(False, True)] * gains + [(True, False)] * losses + [(True, True)] * ties
    for i, (raw, concat) in enumerate(pairs):
        base = {"conversation": f"c{i}", "language": "en", "group": "BG 2.13", "model": ""}
        rows.append({**base, "arm": "raw", "query": "q", "hit": raw, "names_verse": False})
        rows.append({**base, "arm": "concat", "query": "q", "hit": concat, "names_verse": True})
    return pd.DataFrame(rows)


def test_conclusion_tells_arms_apart_only_when_the_paired_test_does() -> None:
    apart = _paired_text(_paired_results(gains=12, losses=0, ties=4))
    assert "12 found that raw misses, 0 missed that raw finds; better than raw" in apart
    same = _paired_text(_paired_results(gains=2, losses=2, ties=8))
    assert "not told apart from raw" in same and "better than raw" not in same
    worse = _paired_text(_paired_results(gains=0, losses=12, ties=2))
    assert "worse than raw at the 5% level" in worse
    assert "Where intervals overlap" not in apart  # no fixed sentence either way


def test_the_rule_arm_searches_the_follow_up_with_the_verse_its_first_turn_names() -> None:
    convs = fu.candidate_conversations(QUESTIONS)
    empty = pd.DataFrame(columns=list(fu.REWRITE_COLUMNS))
    rule = fu.arm_queries(convs, empty).query("arm == 'rule'")
    assert len(rule) == len(convs) and set(rule["model"]) == {""}
    for conv, query in zip(convs, rule["query"], strict=True):
        named = fu.names_group(query, conv.followup.group)
        assert named == bool(fu.named_verses(conv.first.text)), (conv.id, query)
    assert {"Why does BG 2.13 mention youth?", "Что в BG 2.20 сказано о смерти тела?"} <= set(
        rule["query"]
    )
