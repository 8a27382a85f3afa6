"""The blind pairwise judge: a chat model scores two answers to one question against the numbered
notes they were written from, shown as "Answer A" and "Answer B" without their composers' names.

Which answer is A in the first call follows the question's sha256 (even: the first name), so a
re-run shows the same order and each composer sits in slot A for about half the questions. Every
pair is scored in BOTH orders at temperature 0: a judge that favours a slot flips its preference
when the order flips, and `judge_summary` refuses to average the scores of a judge whose flip
rate exceeds a stated bound. A failed or unparsed call is a model error, never a score.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from citegate.core.types import CallStatus, Status
from citegate.evaluation import metrics as M
from citegate.models.llm import ChatClient, ChatResult, LLMError, first_json_object
from citegate.pipeline.llm_calls import (
    DEFAULT_OPTIONS,
    CallOptions,
    numbered,
    parse_lenient,
    response_format,
)

SCORE_NAMES = ("faithfulness", "completeness", "structure", "balance")
SLOTS = ("A", "B")
JUDGE_TEMPERATURE = 0.0  # the offline judge is deterministic: the same pair gets the same scores
DEFAULT_MAX_POSITION_BIAS = 0.2
NOTE_CHARS, ANSWER_CHARS = 300, 1200  # a pair of answers over 5 notes fits a 2,048-token context

_SCORE = {"type": "integer", "enum": [1, 2, 3, 4, 5]}
_SLOT = {
    "type": "object",
    "properties": dict.fromkeys(SCORE_NAMES, _SCORE),
    "required": [*SCORE_NAMES],
}
JUDGE_SCHEMA = {"type": "object", "properties": dict.fromkeys(SLOTS, _SLOT), "required": [*SLOTS]}

_SYSTEM = (
    "You are a strict judge of two answers to one question. Both were written from the same "
    "numbered notes. Score each answer with integers from 1 (worst) to 5 (best):\n"
    "- faithfulness: every claim is supported by the numbered notes it cites; an invented fact "
    "or number, or a citation to a note that does not say it, lowers this score;\n"
    "- completeness: the answer covers what the notes say about the question;\n"
    "- structure: clear, direct, well-ordered prose;\n"
    "- balance: when notes disagree or several sides exist, the answer says so and cites each.\n"
    "The order of the answers means nothing. Reply with ONLY one JSON object: "
    '{"A": {"faithfulness": n, "completeness": n, "structure": n, "balance": n}, '
    '"B": {"faithfulness": n, "completeness": n, "structure": n, "balance": n}}.'
)


@dataclass(frozen=True)
class Scores:
    """One answer's four judge scores, each an integer from 1 to 5."""

    faithfulness: int
    completeness: int
    structure: int
    balance: int

    @property
    def total(self) -> int:
        """The sum of the four scores (4 to 20): what decides which answer a call prefers."""
        return self.faithfulness + self.completeness + self.structure + self.balance


@dataclass(frozen=True)
class OrderJudgement:
    """One call of a pair: which name was shown as A and which as B, the call's status and, when
    it parsed, the scores of each slot. A failed or unparsed call carries no scores."""

    a_name: str
    b_name: str
    status: str
    a: Scores | None = None
    b: Scores | None = None
    calls: tuple[ChatResult, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether this call produced scores (first try or after repair)."""
        return self.a is not None and self.b is not None

    def scores_of(self, name: str) -> Scores | None:
        """The scores the answer called `name` got in this call, whichever slot it sat in."""
        if name == self.a_name:
            return self.a
        if name == self.b_name:
            return self.b
        raise KeyError(f"{name!r} is not judged in this call ({self.a_name!r}, {self.b_name!r})")

    def preferred(self) -> str | None:
        """The name with the higher total in this call; None for a tie or an unscored call."""
        if self.a is None or self.b is None or self.a.total == self.b.total:
            return None
        return self.a_name if self.a.total > self.b.total else self.b_name

    def a_advantage(self) -> int | None:
        """Total of slot A minus total of slot B; None for an unscored call."""
        return None if self.a is None or self.b is None else self.a.total - self.b.total


@dataclass(frozen=True)
class PairJudgement:
    """Both orders of one pair: `orders[0]` shows the hash-chosen name as A, `orders[1]` swaps."""

    question: str
    names: tuple[str, str]
    orders: tuple[OrderJudgement, OrderJudgement]

    @property
    def complete(self) -> bool:
        """Whether both orders were scored (only such pairs enter means, wins and flips)."""
        return all(o.ok for o in self.orders)

    @property
    def errors(self) -> tuple[str, ...]:
        """The statuses of the calls that produced no scores."""
        return tuple(o.status for o in self.orders if not o.ok)

    @property
    def tied(self) -> bool:
        """Whether either order of a complete pair is a tie (set apart from the flip rate)."""
        return self.complete and any(o.preferred() is None for o in self.orders)

    @property
    def flipped(self) -> bool | None:
        """Whether the preferred answer changes with the order; None for an incomplete or tied
        pair."""
        if not self.complete or self.tied:
            return None
        return self.orders[0].preferred() != self.orders[1].preferred()

    def mean_scores(self, name: str) -> dict[str, float]:
        """`name`'s scores averaged over both orders (slot effects cancel); {} if incomplete."""
        if not self.complete:
            return {}
        both = [o.scores_of(name) for o in self.orders]
        return {s: sum(getattr(x, s) for x in both if x) / 2 for s in SCORE_NAMES}

    def a_advantage(self) -> float | None:
        """Mean of (total A - total B) over both orders: with the answers swapped, the quality
        difference cancels and what remains is the slot effect; None if incomplete."""
        adv = [o.a_advantage() for o in self.orders]
        return None if None in adv else sum(a for a in adv if a is not None) / 2


def first_is_x(question: str) -> bool:
    """Whether the first name is shown as A in the first call: the sha256 of the question's
    UTF-8 text is even. Deterministic across runs and machines, balanced over questions."""
    return hashlib.sha256(question.encode("utf-8")).digest()[-1] % 2 == 0


def side_order(question: str, names: tuple[str, str]) -> tuple[str, str]:
    """(name shown as A, name shown as B) in the first call of `question`'s pair."""
    x, y = names
    return (x, y) if first_is_x(question) else (y, x)


def judge_messages(
    question: str, notes: Sequence[str], answer_a: str, answer_b: str
) -> list[dict[str, str]]:
    """The judge prompt: the criteria, then the numbered notes (cut at `NOTE_CHARS`), the
    question and both answers (cut at `ANSWER_CHARS`)."""
    user = (
        f"Notes:\n{numbered(notes, NOTE_CHARS)}\n\nQuestion: {question}\n\n"
        f"Answer A:\n{answer_a.strip()[:ANSWER_CHARS]}\n\n"
        f"Answer B:\n{answer_b.strip()[:ANSWER_CHARS]}"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def _score(value: Any) -> int | None:
    """An integer 1-5 (an integral float such as 4.0 counts); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 1 <= value <= 5 else None


def _slot_scores(obj: Any, slot: str) -> tuple[Scores | None, str]:
    """The four scores of one slot's object, or None and what is wrong with it."""
    if not isinstance(obj, dict):
        return None, f"'{slot}' must be an object"
    values = {name: _score(obj.get(name)) for name in SCORE_NAMES}
    bad = [name for name, v in values.items() if v is None]
    if bad:
        return None, f"'{slot}.{bad[0]}' must be an integer from 1 to 5"
    return Scores(**values), ""  # type: ignore[arg-type]  # all ints after the check


def parse_judgement(text: str) -> tuple[tuple[Scores, Scores] | None, str]:
    """((scores of A, scores of B), "ok") or (None, "parse_failure: <reason>"); never raises."""
    obj, why = parse_lenient(first_json_object, text or "")
    if obj is None:
        return None, f"{CallStatus.PARSE_FAILURE}: {why}"
    a, why_a = _slot_scores(obj.get("A"), "A")
    b, why_b = _slot_scores(obj.get("B"), "B")
    if a is None or b is None:
        return None, f"{CallStatus.PARSE_FAILURE}: {why_a or why_b}"
    return (a, b), CallStatus.OK.value


def judge_order(
    client: ChatClient,
    question: str,
    notes: Sequence[str],
    shown: tuple[tuple[str, str], tuple[str, str]],
    options: CallOptions = DEFAULT_OPTIONS,
) -> OrderJudgement:
    """One judge call over `shown` = ((name A, answer A), (name B, answer B)) at temperature 0;
    a failed call or a reply that does not parse (after one repair) comes back unscored."""
    (a_name, a_text), (b_name, b_text) = shown
    fmt = response_format(client, JUDGE_SCHEMA, options.json_mode)
    try:
        res = client.structured(
            judge_messages(question, notes, a_text, b_text),
            parse_judgement,
            max_tokens=options.max_tokens,
            response_format=fmt,
            temperature=JUDGE_TEMPERATURE,
        )
    except LLMError as exc:
        return OrderJudgement(a_name, b_name, f"{CallStatus.LLM_ERROR}: {exc}")
    if res.value is None:
        return OrderJudgement(a_name, b_name, res.status, calls=res.calls)
    a, b = res.value
    return OrderJudgement(a_name, b_name, res.status, a, b, res.calls)


def judge_pair(
    client: ChatClient,
    question: str,
    notes: Sequence[str],
    answer_x: str,
    answer_y: str,
    *,
    names: tuple[str, str] = ("x", "y"),
    options: CallOptions = DEFAULT_OPTIONS,
) -> PairJudgement:
    """Score `answer_x` (called `names[0]`) and `answer_y` (`names[1]`) blind, in both orders:
    first with the sides `side_order` picks from the question's hash, then swapped."""
    if names[0] == names[1]:
        raise ValueError(f"the two answers need distinct names, got {names!r}")
    text = dict(zip(names, (answer_x, answer_y), strict=True))
    first_a, first_b = side_order(question, names)
    orders = tuple(
        judge_order(client, question, notes, ((a, text[a]), (b, text[b])), options)
        for a, b in ((first_a, first_b), (first_b, first_a))
    )
    return PairJudgement(question, names, (orders[0], orders[1]))


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class NameSummary:
    """One answer name over the complete pairs it was judged in: mean of each score (both
    orders averaged per pair first) and its wins, ties and losses by mean total."""

    name: str
    n_pairs: int
    means: dict[str, float]
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True)
class JudgeSummary:
    """What a set of judged pairs says, and whether the judge may be trusted to say it.

    `flip_rate` (with its Wilson interval) is the share of decided pairs (a strict preference in
    both orders) whose preferred answer changes when the order does; `a_advantage` is the mean
    total of slot A minus slot B over complete pairs. When the flip rate exceeds
    `max_position_bias`, or nothing could measure it, `usable` is False and `per_name` is empty:
    such a judge's scores must not be averaged or compared."""

    n_pairs: int
    n_complete: int
    n_decided: int
    n_tied: int
    flips: int
    flip_rate: float
    flip_ci: tuple[float, float]
    a_advantage: float
    max_position_bias: float
    usable: bool
    verdict: str
    per_name: dict[str, NameSummary] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)  # failed calls by status kind


def _per_name(complete: Sequence[PairJudgement]) -> dict[str, NameSummary]:
    """Each name's mean scores and wins/ties/losses over the complete pairs it appears in."""
    rows: dict[str, list[tuple[dict[str, float], int]]] = {}
    for pair in complete:
        means = {name: pair.mean_scores(name) for name in pair.names}
        for name, other in (pair.names, pair.names[::-1]):
            diff = sum(means[name].values()) - sum(means[other].values())
            rows.setdefault(name, []).append((means[name], (diff > 0) - (diff < 0)))
    return {
        name: NameSummary(
            name,
            len(r),
            {s: sum(m[s] for m, _ in r) / len(r) for s in SCORE_NAMES},
            *(sum(o == k for _, o in r) for k in (1, 0, -1)),  # wins, ties, losses
        )
        for name, r in rows.items()
    }


def judge_summary(
    judgements: Sequence[PairJudgement], max_position_bias: float = DEFAULT_MAX_POSITION_BIAS
) -> JudgeSummary:
    """Summarise judged pairs: position bias first, then, only for a usable judge, each name's
    mean scores and wins/ties/losses. Incomplete pairs (a call failed or did not parse) count
    only as model errors: a one-sided score would carry the slot effect the two orders cancel."""
    complete = [p for p in judgements if p.complete]
    flips = [p.flipped for p in complete if p.flipped is not None]
    decided, (rate, low, high) = len(flips), M.rate_ci_or_nan(flips)  # Wilson 95%
    advantages = [a for p in complete if (a := p.a_advantage()) is not None]
    adv = sum(advantages) / len(advantages) if advantages else math.nan
    errors = Counter(Status.parse(s).kind.value for p in judgements for s in p.errors)
    if decided == 0:
        usable, verdict = False, "unusable: position bias not measured (no decided pair)"
    elif rate > max_position_bias:
        usable, verdict = False, f"unusable: position bias {rate:.2f} > {max_position_bias:g}"
    else:
        usable, verdict = True, f"usable: position bias {rate:.2f} <= {max_position_bias:g}"
    return JudgeSummary(
        n_pairs=len(judgements),
        n_complete=len(complete),
        n_decided=decided,
        n_tied=sum(p.tied for p in complete),
        flips=sum(flips),
        flip_rate=rate,
        flip_ci=(low, high),
        a_advantage=adv,
        max_position_bias=max_position_bias,
        usable=usable,
        verdict=verdict,
        per_name=_per_name(complete) if usable else {},
        errors=dict(errors),
    )


def validator_agreement(
    judge_faithfulness: Sequence[float], supported_share: Sequence[float]
) -> float:
    """Spearman rank correlation between the judge's faithfulness score of each answer and the
    share of its claims the claim validator supports. Points where either value is NaN (e.g. an
    answer with no claims) are dropped; NaN with fewer than 3 points left or a constant side."""
    if len(judge_faithfulness) != len(supported_share):
        n_j, n_s = len(judge_faithfulness), len(supported_share)
        raise ValueError(f"judge_faithfulness has {n_j} values, supported_share {n_s}")
    pts = [
        (float(j), float(s))
        for j, s in zip(judge_faithfulness, supported_share, strict=True)
        if not (math.isnan(float(j)) or math.isnan(float(s)))
    ]
    if len(pts) < 3 or len({j for j, _ in pts}) < 2 or len({s for _, s in pts}) < 2:
        return math.nan
    from scipy.stats import spearmanr  # heavy: imported when used, not by every command

    return float(spearmanr([j for j, _ in pts], [s for _, s in pts]).statistic)


__all__ = [
    "DEFAULT_MAX_POSITION_BIAS",
    "JUDGE_SCHEMA",
    "JUDGE_TEMPERATURE",
    "SCORE_NAMES",
    "JudgeSummary",
    "NameSummary",
    "OrderJudgement",
    "PairJudgement",
    "Scores",
    "first_is_x",
    "judge_messages",
    "judge_order",
    "judge_pair",
    "judge_summary",
    "parse_judgement",
    "side_order",
    "validator_agreement",
]
