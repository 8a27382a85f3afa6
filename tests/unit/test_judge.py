"""The blind pairwise judge: hash-chosen sides, scores mapped back from slots to names in both
orders, the flip rate and the usable bound, model errors kept out of the scores, the agreement
with the claim validator; and whole pairs judged through the stub HTTP server (an even-handed
judge, one that always prefers slot A, a failing call, an unparseable reply)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import pytest
from llm_stub import DOWN, Reply, reply, stub_server

from citegate.models.llm import ChatClient
from citegate.studies.answer_faithfulness import judge as J
from citegate.studies.answer_faithfulness.judge import OrderJudgement, PairJudgement, Scores

NOTES = ["The soul casts off worn-out bodies.", "Weapons do not cut the soul."]


def s(total: int) -> Scores:
    """Scores whose faithfulness carries the difference (the rest 3), summing to `total`."""
    return Scores(total - 9, 3, 3, 3)


def pair(first: tuple[int, int], second: tuple[int, int], q: str = "q") -> PairJudgement:
    """A complete x/y pair: order 1 shows x as A with totals `first` (A, B), order 2 shows y as
    A with totals `second` (A, B)."""
    o1 = OrderJudgement("x", "y", "ok", s(first[0]), s(first[1]))
    o2 = OrderJudgement("y", "x", "ok", s(second[0]), s(second[1]))
    return PairJudgement(q, ("x", "y"), (o1, o2))


def failed(status: str = "llm_error: down") -> PairJudgement:
    """A pair whose second call produced no scores."""
    o1 = OrderJudgement("x", "y", "ok", s(14), s(10))
    return PairJudgement("q", ("x", "y"), (o1, OrderJudgement("y", "x", status)))


# --------------------------------------------------------------------------- sides


def test_sides_follow_the_parity_of_the_questions_sha256() -> None:
    for q in ("What is the soul?", "¿Qué es el alma?", "", "BG 2.13"):
        even = hashlib.sha256(q.encode("utf-8")).digest()[-1] % 2 == 0
        assert J.first_is_x(q) is even
        assert J.side_order(q, ("ext", "gen")) == (("ext", "gen") if even else ("gen", "ext"))
        assert J.side_order(q, ("ext", "gen")) == J.side_order(q, ("ext", "gen"))


def test_sides_are_balanced_over_many_questions() -> None:
    share = sum(J.first_is_x(f"question {i}") for i in range(2000)) / 2000
    assert 0.45 < share < 0.55


# --------------------------------------------------------------------------- mapping


def test_slot_scores_map_back_to_names_in_both_orders() -> None:
    p = pair((15, 9), (11, 13))  # x: 15 then 13; y: 9 then 11
    assert p.orders[0].scores_of("x").total == 15
    assert p.orders[1].scores_of("x").total == 13
    assert p.orders[1].scores_of("y").total == 11
    assert p.mean_scores("x")["faithfulness"] == ((15 - 9) + (13 - 9)) / 2
    assert p.mean_scores("y")["completeness"] == 3.0
    assert p.orders[0].preferred() == "x" and p.orders[1].preferred() == "x"
    assert p.flipped is False
    assert p.a_advantage() == ((15 - 9) + (11 - 13)) / 2
    with pytest.raises(KeyError):
        p.orders[0].scores_of("z")


def test_flip_tie_and_incomplete_pairs() -> None:
    assert pair((14, 10), (14, 10)).flipped is True  # slot A wins in both orders
    tie = pair((12, 12), (14, 10))
    assert tie.tied and tie.flipped is None
    bad = failed()
    assert not bad.complete and bad.flipped is None and bad.errors == ("llm_error: down",)
    assert bad.mean_scores("x") == {} and bad.a_advantage() is None


# --------------------------------------------------------------------------- parsing


def test_parse_judgement_reads_both_slots() -> None:
    text = '{"A": {"faithfulness": 5, "completeness": 4, "structure": 3.0, "balance": 2}, '
    text += '"B": {"faithfulness": 1, "completeness": 1, "structure": 1, "balance": 1}}'
    value, status = J.parse_judgement("Sure:\n" + text)
    assert status == "ok" and value == (Scores(5, 4, 3, 2), Scores(1, 1, 1, 1))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no json here", "no JSON object"),
        ('{"A": {"faithfulness": 5, "completeness": 4, "structure": 3, "balance": 2}}', "'B'"),
        ('{"A": 3, "B": 3}', "'A' must be an object"),
        ('{"A": {"faithfulness": 6, "completeness": 4, "structure": 3, "balance": 2}, '
         '"B": {"faithfulness": 1, "completeness": 1, "structure": 1, "balance": 1}}',
         "'A.faithfulness'"),
        ('{"A": {"faithfulness": 5, "completeness": 4, "structure": 3, "balance": 2}, '
         '"B": {"faithfulness": true, "completeness": "4", "structure": 1, "balance": 1}}',
         "'B.faithfulness'"),
        ('{"A": {"faithfulness": 5, "completeness": 4, "structure": 3}, '
         '"B": {"faithfulness": 1, "completeness": 1, "structure": 1, "balance": 1}}',
         "'A.balance'"),
    ],
)  # fmt: skip
def test_parse_judgement_refuses_what_is_not_four_scores_each(text: str, reason: str) -> None:
    value, status = J.parse_judgement(text)
    assert value is None and status.startswith("parse_failure:") and reason in status


# --------------------------------------------------------------------------- summary


def test_summary_of_a_consistent_judge_averages_over_both_orders() -> None:
    pairs = [pair((15, 9), (11, 13)), pair((10, 14), (14, 10)), pair((12, 12), (12, 12))]
    out = J.judge_summary(pairs)
    assert out.usable and out.verdict == "usable: position bias 0.00 <= 0.2"
    assert (out.n_decided, out.n_tied, out.flips, out.flip_rate) == (2, 1, 0, 0.0)
    assert 0 < out.flip_ci[1] < 1 and out.flip_ci[0] == 0.0
    x, y = out.per_name["x"], out.per_name["y"]
    assert (x.wins, x.ties, x.losses) == (1, 1, 1) and (y.wins, y.ties, y.losses) == (1, 1, 1)
    assert x.means["faithfulness"] == pytest.approx(((6 + 4) / 2 + (1 + 1) / 2 + 3) / 3)
    assert out.errors == {}


def test_a_judge_whose_preference_follows_the_slot_is_unusable() -> None:
    pairs = [pair((15, 9), (15, 9), q=str(i)) for i in range(8)]
    out = J.judge_summary(pairs, max_position_bias=0.2)
    assert not out.usable
    assert out.verdict == "unusable: position bias 1.00 > 0.2"
    assert out.per_name == {}  # nothing to average
    assert out.flip_rate == 1.0 and out.a_advantage == 6.0


def test_flip_rate_at_the_bound_is_usable_and_above_it_is_not() -> None:
    honest = [pair((15, 9), (9, 15), q=str(i)) for i in range(4)]
    assert J.judge_summary([*honest, pair((15, 9), (15, 9))], 0.2).usable  # 1 of 5 = 0.2
    assert not J.judge_summary([*honest[:3], pair((15, 9), (15, 9))], 0.2).usable  # 0.25


def test_no_decided_pair_leaves_the_judge_unmeasured() -> None:
    out = J.judge_summary([pair((12, 12), (12, 12)), failed()])
    assert not out.usable and "not measured" in out.verdict and math.isnan(out.flip_rate)


def test_model_errors_are_counted_never_scored() -> None:
    good = pair((15, 9), (9, 15))
    out = J.judge_summary([good, failed(), failed("parse_failure: invalid JSON")])
    assert (out.n_pairs, out.n_complete) == (3, 1)
    assert out.errors == {"llm_error": 1, "parse_failure": 1}
    assert out.per_name["x"].n_pairs == 1  # the failed pairs' one scored order is left out
    assert out.per_name["x"].means == good.mean_scores("x")


# --------------------------------------------------------------------------- agreement


def test_validator_agreement_is_spearman_over_defined_points() -> None:
    assert J.validator_agreement([1, 2, 3, 5], [0.1, 0.2, 0.3, 0.35]) == pytest.approx(1.0)
    assert J.validator_agreement([1, 2, 3], [0.9, 0.5, 0.1]) == pytest.approx(-1.0)
    assert J.validator_agreement([1, 2, 3, 4], [0.1, math.nan, 0.3, 0.4]) == pytest.approx(1.0)
    assert math.isnan(J.validator_agreement([1, 2], [0.1, 0.2]))
    assert math.isnan(J.validator_agreement([1, 2, math.nan], [0.1, 0.2, 0.3]))
    assert math.isnan(J.validator_agreement([3, 3, 3, 3], [0.1, 0.2, 0.3, 0.4]))
    with pytest.raises(ValueError, match="3 values"):
        J.validator_agreement([1, 2, 3], [0.1, 0.2])


# --------------------------------------------------------------------------- through the stub


def scores_reply(a: int, b: int) -> Reply:
    """A judge reply giving slot A all `a` and slot B all `b`."""
    return reply({slot: dict.fromkeys(J.SCORE_NAMES, v) for slot, v in (("A", a), ("B", b))})


def client(stub: Any, tmp_path: Path, cache: str = "c.sqlite") -> ChatClient:
    """A chat client on the stub with its own throwaway cache."""
    return ChatClient("stub-model", base_url=stub.base_url, cache_path=tmp_path / cache)


QUESTIONS = [f"What happens to the soul, case {i}?" for i in range(6)]


def test_an_even_handed_judge_through_the_stub(tmp_path: Path) -> None:
    # x is better in both orders: the reply favours whichever slot x sits in
    replies = []
    for q in QUESTIONS:
        first = scores_reply(5, 2) if J.first_is_x(q) else scores_reply(2, 5)
        second = scores_reply(2, 5) if J.first_is_x(q) else scores_reply(5, 2)
        replies += [first, second]
    with stub_server(replies) as stub:
        c = client(stub, tmp_path)
        pairs = [
            J.judge_pair(c, q, NOTES, "X TEXT", "Y TEXT", names=("ext", "gen")) for q in QUESTIONS
        ]
    out = J.judge_summary(pairs)
    assert out.usable and out.flip_rate == 0.0 and out.a_advantage == 0.0
    assert out.per_name["ext"].wins == 6 and out.per_name["ext"].means["balance"] == 5.0
    assert out.per_name["gen"].means["faithfulness"] == 2.0
    first_x = sum(J.first_is_x(q) for q in QUESTIONS)
    assert 0 < first_x < len(QUESTIONS)  # both side assignments are exercised
    for q, (r1, r2) in zip(
        QUESTIONS, zip(stub.requests[::2], stub.requests[1::2], strict=True), strict=True
    ):
        a_first = "X TEXT" if J.first_is_x(q) else "Y TEXT"
        b_first = "Y TEXT" if a_first == "X TEXT" else "X TEXT"
        assert f"Answer A:\n{a_first}" in r1["body"]["messages"][1]["content"]
        assert f"Answer A:\n{b_first}" in r2["body"]["messages"][1]["content"]
        for r in (r1, r2):
            body = r["body"]
            assert body["temperature"] == 0.0
            assert body["response_format"] == {"type": "json_object", "schema": J.JUDGE_SCHEMA}
            assert "ext" not in body["messages"][1]["content"]  # blind: no composer names
            assert "[1] The soul casts off" in body["messages"][1]["content"]


def test_a_judge_that_always_prefers_a_is_reported_unusable(tmp_path: Path) -> None:
    with stub_server([scores_reply(5, 1)]) as stub:
        c = client(stub, tmp_path)
        pairs = [J.judge_pair(c, q, NOTES, "x says", "y says") for q in QUESTIONS]
    out = J.judge_summary(pairs)
    assert len(stub.requests) == 2 * len(QUESTIONS)
    assert not out.usable and out.verdict == "unusable: position bias 1.00 > 0.2"
    assert out.per_name == {} and out.a_advantage == 16.0


def test_failed_and_unparsed_calls_are_model_errors(tmp_path: Path) -> None:
    with stub_server([scores_reply(4, 3), DOWN]) as stub:
        down = J.judge_pair(client(stub, tmp_path), QUESTIONS[0], NOTES, "a", "b")
    assert down.orders[0].ok and down.orders[1].status.startswith("llm_error: ")
    with stub_server([reply("I like both."), reply("still no JSON")]) as stub:
        junk = J.judge_pair(client(stub, tmp_path, "c2.sqlite"), QUESTIONS[1], NOTES, "a", "b")
    assert len(stub.requests) == 4  # each call sent one repair request
    assert all(o.status.startswith("parse_failure") and o.a is None for o in junk.orders)
    out = J.judge_summary([down, junk])
    assert out.errors == {"llm_error": 1, "parse_failure": 2}
    assert out.n_complete == 0 and out.per_name == {} and not out.usable
