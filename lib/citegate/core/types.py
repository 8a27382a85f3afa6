"""The value types every stage passes along, and the enums of each stage's outcome.

Pure dataclasses and enums, no behaviour beyond reading their own fields: the pipeline computes
them, research replays them, studies tabulate them, the CLI prints them. They live at the bottom
so that every layer can name them without importing the stage that makes them.

Outcomes are `StrEnum`s whose values are the strings the project always wrote ("answer",
"kept:top_k", "grounded", ...): members compare, hash, format and serialize (JSON, CSV, Parquet)
exactly as those strings do, so outputs and cached data are unchanged. A call status that carries
a detail ("parse_failure: no JSON object") stays a plain string on the record that holds it (it
is printed, cached and sent back to the model verbatim); `Status.parse` reads its kind and detail.

`RetrievalTrace` objects are pickled in the trace cache (`citegate.research.traces`): their
classes are found by module and name, so renaming a field or a class here needs a new
`TRACE_FORMAT` there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from functools import cached_property
from typing import Any

# The dense lane searches each kind group on its own (its own top k), so a rare kind is never
# crowded out by a common one; each group has its own partial HNSW index (`store.db`).
KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "transcripts": ("track_transcript",),
    "verses": ("verse",),
    "library": ("commentary", "prose_chapter", "letter"),
}
# Lanes whose hits pass the cosine pre-floor whatever their cosine (lane tags start with these).
FORCING_LANES = ("lexical", "address")
# A verse the question names spelled out ("Chapter 2, Verse 13", "Глава 2, стих 13", "अध्याय २,
# श्लोक १३"): collected always, seen by a replay only when `PipelineConfig.pin_named_verses` is on.
NAMED_LANE = "address:named"
# Lanes whose hits the user asked for by address: they also pass the cap and rank first.
PINNING_LANES = ("address:exact", NAMED_LANE)


# --------------------------------------------------------------------------- query plan


@dataclass(frozen=True)
class SubQuestion:
    """One typed sub-question; `kind` says what it asks for (main, definition, example, ...)."""

    kind: str
    text: str
    paraphrases: tuple[str, ...] = ()

    def texts(self) -> tuple[str, ...]:
        """The sub-question and its paraphrases, each searched by every lane."""
        return (self.text, *self.paraphrases[:2])


@dataclass(frozen=True)
class QueryPlan:
    """What the retrieval searches for, and which planner produced it."""

    question: str
    subquestions: tuple[SubQuestion, ...]
    planner: str
    notes: dict[str, str] = field(default_factory=dict)

    def texts(self) -> list[str]:
        """Every text searched in round one, without repeats, in plan order."""
        return list(dict.fromkeys(t for s in self.subquestions for t in s.texts()))


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class Candidate:
    """A fragment found by at least one lane. `score` is always its true cosine to the question."""

    fragment_id: int
    frag_key: str
    corpus: str
    kind: str
    source_id: str
    track_id: str | None
    start_ms: int | None
    end_ms: int | None
    addr_label: str | None
    text: str
    lang: str
    score: float
    lanes: tuple[str, ...]
    round: int
    rerank_score: float | None = None
    ann_missed: bool = False  # found only by exact search: the HNSW index lost it
    text_sig: str = ""  # digest of the normalized text: dedup works on slim traces too
    text_len: int = 0  # characters of text (slim traces keep it for per-source context caps)
    lex_rank: int | None = None  # best round-1 rank in the lexical lane (for the RRF arm)

    @cached_property
    def forced(self) -> bool:
        """Lexical and address hits pass the cosine pre-floor regardless of their cosine."""
        return any(lane.startswith(FORCING_LANES) for lane in self.lanes)

    @cached_property
    def pinned(self) -> bool:
        """Named by an address in the question ("BG 2.13", or spelled out when the replay keeps
        the named lane): the user asked for this source, so it also passes the cap and ranks
        first."""
        return any(lane.startswith(PINNING_LANES) for lane in self.lanes)

    def rank_key(self) -> tuple[bool, float, float, int]:
        """Pinned first, then rerank score, then cosine, then id (deterministic ties)."""
        rr = self.score if self.rerank_score is None else self.rerank_score
        return (not self.pinned, -rr, -self.score, self.fragment_id)

    def without_text(self) -> Candidate:
        """This candidate with `text` emptied: `replace(self, text="")`, built from the fields
        directly because a slim trace copies every candidate of every question (replace's
        `__init__` call was a fifth of a trace pass's main-thread time)."""
        new = object.__new__(Candidate)
        values = {name: self.__dict__[name] for name in _CANDIDATE_FIELDS}
        values["text"] = ""
        new.__dict__.update(values)
        return new


_CANDIDATE_FIELDS = tuple(f.name for f in fields(Candidate))


class Step(StrEnum):
    """The step of the cut at which a candidate's fate was settled."""

    ANN_MISSED = "ann_missed"
    PRE_FLOOR = "pre_floor"
    CAP = "cap"
    TOP_K = "top_k"
    RESERVE = "reserve"
    DEDUP = "dedup"
    LATER_ROUND = "later_round"
    NOT_FUSED = "not_fused"
    CONTEXT_CAP = "context_cap"
    GROUPED = "grouped"


class Stage(StrEnum):
    """A candidate's fate in one round: kept or dropped, and by which `Step` (the value is the
    label traces and tables always showed, "<fate>:<step>")."""

    ANN_MISSED = "ann_missed"
    DROPPED_PRE_FLOOR = "dropped:pre_floor"
    DROPPED_CAP = "dropped:cap"
    DROPPED_TOP_K = "dropped:top_k"
    KEPT_TOP_K = "kept:top_k"
    KEPT_RESERVE = "kept:reserve"
    DROPPED_DEDUP = "dropped:dedup"
    UNUSED_LATER_ROUND = "unused:later_round"
    DROPPED_NOT_FUSED = "dropped:not_fused"
    DROPPED_CONTEXT_CAP = "dropped:context_cap"
    # Another passage of a verse whose note is kept (`PipelineConfig.verse_notes`): the note shows
    # the verse's best-ranked passage and cites this one through it.
    KEPT_GROUPED = "kept:grouped"

    @property
    def step(self) -> Step:
        """The step that settled this fate."""
        return _STAGE_STEP[self]

    @property
    def kept(self) -> bool:
        """Whether the candidate is among the final notes: as a note, or (kept:grouped) cited
        through the note of its verse."""
        return self in (Stage.KEPT_TOP_K, Stage.KEPT_RESERVE, Stage.KEPT_GROUPED)


_STAGE_STEP = {
    Stage.ANN_MISSED: Step.ANN_MISSED,
    Stage.DROPPED_PRE_FLOOR: Step.PRE_FLOOR,
    Stage.DROPPED_CAP: Step.CAP,
    Stage.DROPPED_TOP_K: Step.TOP_K,
    Stage.KEPT_TOP_K: Step.TOP_K,
    Stage.KEPT_RESERVE: Step.RESERVE,
    Stage.DROPPED_DEDUP: Step.DEDUP,
    Stage.UNUSED_LATER_ROUND: Step.LATER_ROUND,
    Stage.DROPPED_NOT_FUSED: Step.NOT_FUSED,
    Stage.DROPPED_CONTEXT_CAP: Step.CONTEXT_CAP,
    Stage.KEPT_GROUPED: Step.GROUPED,
}


# --------------------------------------------------------------------------- gate and decision


class GateDecision(StrEnum):
    """The coverage gate's reading of one round."""

    GOOD_ENOUGH = "good_enough"  # answer
    BAIL_OUT = "bail_out"  # the corpus does not cover the question
    BETWEEN = "between"  # fan out again (or, after the last round, a weak answer)


class Decision(StrEnum):
    """What a retrieval decides after its last round."""

    ANSWER = "answer"
    INSUFFICIENT = "insufficient"
    WEAK = "weak"


@dataclass(frozen=True)
class GateVerdict:
    """The gate's reading of one round."""

    max_score: float
    lectures: int
    sufficient: bool
    good_enough: bool
    bail_out: bool

    @property
    def decision(self) -> GateDecision:
        """good_enough (answer), bail_out (corpus insufficient) or between (fan out again)."""
        if self.good_enough:
            return GateDecision.GOOD_ENOUGH
        return GateDecision.BAIL_OUT if self.bail_out else GateDecision.BETWEEN

    @property
    def retrieval_decision(self) -> Decision:
        """What retrieval reports for this verdict when it is the last round's: answer
        (good_enough), insufficient (bail_out) or weak (between). The one gate→decision map."""
        return _RETRIEVAL_DECISIONS[self.decision]


_RETRIEVAL_DECISIONS = {
    GateDecision.GOOD_ENOUGH: Decision.ANSWER,
    GateDecision.BAIL_OUT: Decision.INSUFFICIENT,
    GateDecision.BETWEEN: Decision.WEAK,
}


class GateKind(StrEnum):
    """Which gate made a retrieval's final decision (the config's `gate`)."""

    COVERAGE = "coverage"  # max cosine against the (per-language) coverage thresholds
    TWO_SCALE = "two_scale"  # the rrf_hybrid arm's reranker / fusion score
    LEARNED = "learned"  # a learned model over several signals (`models.gate_model`)
    MEMORY = "memory"  # a pinned note of curated memory answers the question (`pipeline.memory`)


@dataclass(frozen=True)
class GateReason:
    """Which gate decided and why, in words a person reads ("max cosine 0.842 ≥ sufficient
    0.8852 (ru thresholds)"; "p(answerable)=0.12 < 0.43: named address BG 3.5 is not in the
    index"). `signal` is the value the gate compared with `threshold` (max cosine, the two-scale
    score or p(answerable)); `language` the question's language the thresholds were chosen by."""

    kind: GateKind
    reason: str
    signal: float
    threshold: float
    language: str = ""


# --------------------------------------------------------------------------- curated memory

# The kind of the note a pinned note of curated memory becomes among the final notes: citable,
# addressed "note:<key>", never a fragment of the corpus (its fragment id is negative).
NOTE_KIND = "curated_note"


class Policy(StrEnum):
    """The retrieval effort the memory pre-check chose."""

    LEAN = "lean"  # a pinned note answers: one round, a small slate
    WIDE = "wide"  # the config's own rounds and slate


class NoteRole(StrEnum):
    """How a note of curated memory took part in a retrieval."""

    CITED = "cited"  # a pinned note that answers: among the final notes, citable
    BOOST = "boost"  # a boost note: the rerank scores of what it cites were raised
    FRAMING = "framing"  # a memory note: background for the composer, never a note
    BELOW = "below"  # under the threshold: it took no part


@dataclass(frozen=True)
class NoteUse:
    """One note's part in a retrieval: its key and kind, its similarity to the question (best
    cosine over its triggers and body chunks), which unit gave it ("trigger" | "body"), and its
    role."""

    key: str
    kind: str
    similarity: float
    via: str
    role: NoteRole


@dataclass(frozen=True)
class MemoryOutcome:
    """What curated memory did for one retrieval: the policy the pre-check chose and why (the
    best pinned note's similarity against `threshold`), every note at or above the threshold
    with its role (best first), and the bodies of the memory notes handed to the composer as
    framing."""

    policy: Policy
    reason: str
    threshold: float
    best_pinned: float
    uses: tuple[NoteUse, ...] = ()
    framing: tuple[str, ...] = ()
    seconds: float = 0.0

    def keys(self, role: NoteRole) -> tuple[str, ...]:
        """The keys of the notes that took part in `role`."""
        return tuple(u.key for u in self.uses if u.role == role)


# --------------------------------------------------------------------------- retrieval


@dataclass(frozen=True)
class RoundResult:
    """The cut and gate of one fanout round."""

    round: int
    notes: tuple[Candidate, ...]
    stage: dict[int, Stage]
    gate: GateVerdict


@dataclass
class RetrievalTrace:
    """Everything a retrieval saw, enough to replay its cut under another config."""

    question: str
    plan: QueryPlan
    collection: dict[str, Any]
    embedder_id: str
    reranker_id: str
    candidates: list[Candidate]
    timings: dict[str, float] = field(default_factory=dict)

    def slim(self) -> RetrievalTrace:
        """A copy without candidate texts (replay needs only `text_sig`): what the cache stores."""
        cands = [c.without_text() for c in self.candidates]
        return RetrievalTrace(
            self.question,
            self.plan,
            self.collection,
            self.embedder_id,
            self.reranker_id,
            cands,
            dict(self.timings),
        )

    def to_frame(self, stage: Mapping[int, str] | None = None) -> Any:
        """One row per candidate: lanes, cosine, rerank, and its fate in `stage` (a result's
        `stage`, e.g. `replay(trace, cfg).stage`; empty when none is given)."""
        import pandas as pd

        rows = []
        for c in self.candidates:
            row = {k: v for k, v in asdict(c).items() if k != "text"}
            row["lanes"] = ",".join(c.lanes)
            row["forced"] = c.forced
            row["stage"] = stage.get(c.fragment_id, "") if stage else ""
            rows.append(row)
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class RetrievalResult:
    """What the pipeline returns: the final notes, the gate decision, and the trace.
    `decided_by`: which gate made the decision and why (`retrieve` fills it; a bare `replay`
    leaves it None); `memory`: what curated memory did (`retrieve` with `memory` on)."""

    notes: tuple[Candidate, ...]
    decision: Decision
    rounds: tuple[RoundResult, ...]
    trace: RetrievalTrace
    decided_by: GateReason | None = None
    memory: MemoryOutcome | None = None  # what curated memory did (None: memory off)

    @property
    def stage(self) -> dict[int, Stage]:
        """Fate of every candidate in the last round run."""
        return self.rounds[-1].stage

    @property
    def max_score(self) -> float:
        """Max cosine of the final ranked set (the gate's signal)."""
        return self.rounds[-1].gate.max_score


# --------------------------------------------------------------------------- turns and calls


class Branch(StrEnum):
    """Which way a turn went: an answer from the corpus, the general-knowledge fallback, a
    decline (out of scope, or fallback disabled), or a failed model call."""

    GROUNDED = "grounded"
    FALLBACK = "fallback"
    DECLINE = "decline"
    ERROR = "error"


class CallStatus(StrEnum):
    """The kind of a model call's recorded status (the part before ':' in its text)."""

    OK = "ok"
    REPAIRED = "repaired"  # parsed after one repair round-trip
    PARSE_FAILURE = "parse_failure"  # bad output, even after repair
    LLM_ERROR = "llm_error"  # the call failed for good (server down, HTTP error)
    NO_NOTES = "no notes"  # planner: nothing to plan over, no call made
    NO_SOURCES = "no sources"  # writer: nothing to cite, no call made
    SKIPPED = "skipped"  # no call made (e.g. the gate bailed out)
    GATE = "gate"  # a study's record of a call the gate made unnecessary ("gate: bail out")


@dataclass(frozen=True)
class Status:
    """A call status as kind and detail: `str()` writes the recorded form, "kind" or
    "kind: detail"; `parse` reads it back."""

    kind: CallStatus
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else str(self.kind)

    @classmethod
    def parse(cls, text: str) -> Status:
        """The kind (before the first ':') and the detail (after it, stripped) of a recorded
        status; `ValueError` for a kind that is not a `CallStatus`."""
        kind, detail = split_outcome(text)
        return cls(CallStatus(kind), detail)


class RewriteRule(StrEnum):
    """Why a follow-up's rewrite was used, rejected or not asked for: the validator's rule, or
    why no rewrite was tried (the part before ':' of `RewriteResult.reason`)."""

    OK = "ok"
    FIRST_TURN = "first turn"
    NO_HISTORY = "no history"
    NO_BAR = "no bar"  # the rewrite role's model has passed no bar (notebook 01): not asked
    RESOLVED = "resolved"  # a verse the follow-up points at, resolved by rule (no model)
    LLM_ERROR = "llm_error"
    EMPTY = "empty"
    TOO_LONG = "too_long"
    GROWN = "grown"
    MULTI_PARAGRAPH = "multi_paragraph"
    REFUSAL = "refusal"
    PREAMBLE = "preamble"
    PROMPT_ECHO = "prompt_echo"
    UNUSABLE = "unusable"  # retrieval could not take it (`model_output.check_query`)
    LOST_IDENTIFIER = "lost_identifier"


class ClaimStatus(StrEnum):
    """A checked claim's verdict (`pipeline.claimcheck.ClaimVerdict.status`, and notebook 04's
    citation check, `CitationRow.status`)."""

    UNCITED = "uncited"  # cites nothing
    SUPPORTED = "supported"  # a note it cites reaches the support threshold
    UNSUPPORTED = "unsupported"  # cites offered sources, none close enough
    FABRICATED = "fabricated"  # cites only sources that were never offered


def split_outcome(text: str) -> tuple[str, str]:
    """("kind", "detail") of a recorded "kind: detail" string ("kind", "" without a ':')."""
    kind, _, detail = text.partition(":")
    return kind, detail.strip()


__all__ = [
    "FORCING_LANES",
    "NOTE_KIND",
    "Branch",
    "CallStatus",
    "Candidate",
    "ClaimStatus",
    "Decision",
    "GateDecision",
    "GateKind",
    "GateReason",
    "GateVerdict",
    "MemoryOutcome",
    "NoteRole",
    "NoteUse",
    "Policy",
    "QueryPlan",
    "RetrievalResult",
    "RetrievalTrace",
    "RewriteRule",
    "RoundResult",
    "Stage",
    "Status",
    "Step",
    "SubQuestion",
    "split_outcome",
]
