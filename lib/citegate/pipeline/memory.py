"""Curated memory in retrieval: the curated-note lane, the pre-check, boost and the pinned note.

Editors keep notes apart from the corpus (`citegate memory import`, `store.memory`): **pinned**
(a citable answer to a specific question), **boost** (a topic that raises the rerank scores of
the fragments it cites) and **memory** (background that shapes framing, never quoted). A note's
trigger phrases and body chunks are embedded together, so a question that echoes the note's
substance finds it as well as one that echoes a trigger; its similarity to a question is its
best cosine over those units (`store.memory.note_hits`, one exact scan of a small table).

The pre-check (`precheck`) is a plain comparison, no LLM: the best pinned note's similarity
against `PipelineConfig.memory_threshold`. At or above it, memory already answers, and the
retrieval takes the lean policy (`lean_config`: one round, `lean_lane_k` deep, `lean_top_k`
notes); below it, the config's own wide policy. It is the one place that decides whether memory
answers: its `Precheck` carries the policy, the reason and the answering note, and the note's
roles (`outcome`), the notes it leads (`retrieve.with_memory`) and the decision record
(`answered_by`) read that result. Every function here is pure (the hits are searched, and the
cited fragments fetched, by `store.memory`), so a study replays the decision for any threshold
from the hits alone.

A pinned note answers only a question that asks what its trigger asks. A question that negates
the trigger it echoes ("can the soul not be killed" against "can the soul be killed") asks the
opposite, yet sits at cosine 0.93-0.99 with it (bundled e5, the demo notes' triggers), above
any threshold that keeps the echoes it should answer: the embedder does not see the negation.
So when the best unit is a trigger (`NoteHit.unit`) and exactly one of it and the question
carries a negating word (`NEGATIONS`) beside a word of the other, the negation inserted into the
shared phrase, memory does not answer (`negates`): the pre-check goes wide and the config's own
gate decides over the retrieved notes, as for a question no note answers. A negation elsewhere
in the question ("advising not to be the cause of action's fruits") asks no opposite, and a
body chunk is a statement whose negations a question about it need not repeat ("weapons do not
cut it" / "can weapons cut it?"), so neither counts. Measured: it stops all of the 24 negated
echoes written for the demo's pinned triggers (English, Russian; tests/integration/
test_memory_negation.py), and changes no decision on notebook 07's 260 questions nor on the
3,553 distinct questions of the shipped gita and out-of-scope sets (12 of which memory answers).
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from citegate.core.config import PipelineConfig
from citegate.core.types import (
    NOTE_KIND,
    Candidate,
    GateKind,
    GateReason,
    MemoryOutcome,
    NoteRole,
    NoteUse,
    Policy,
    RetrievalTrace,
)
from citegate.corpus.notes import NoteKind
from citegate.store.memory import NoteHit

NOTE_LANE = "memory:pinned"  # the lane tag of a pinned note and of the verses it cites
MAX_FRAMING = 3  # memory notes handed to the composer as framing, best first

_ROLE = {NoteKind.PINNED: NoteRole.CITED, NoteKind.BOOST: NoteRole.BOOST}

# Words that negate a clause, casefolded, in the languages the notes are written in (English,
# Russian, Hindi); an English word ending in n't (don't, isn't) negates too.
_NEGATING = """not no never nor neither none nothing nobody nowhere cannot
не ни нет никогда нельзя ничто ничего никто нигде
नहीं न मत ना"""
NEGATIONS = frozenset(_NEGATING.split())
_CONTRACTED = ("n't", "n\u2019t")


def best_pinned(hits: Sequence[NoteHit]) -> NoteHit | None:
    """The pinned note most similar to the question (hits come best first), or None."""
    return next((h for h in hits if h.note.kind == NoteKind.PINNED), None)


def _bare(word: str) -> str:
    """`word` without the punctuation and symbols at its ends (a Devanagari vowel sign is a
    mark, so it stays; an inner apostrophe stays too)."""
    edge = [unicodedata.category(c)[0] in "PS" for c in word]
    start = next((i for i, e in enumerate(edge) if not e), len(word))
    end = len(word) - next((i for i, e in enumerate(reversed(edge)) if not e), len(word))
    return word[start:end]


def _words(text: str) -> list[str]:
    """The casefolded words of `text`, bare (`_bare`), in order."""
    return [b for b in (_bare(w) for w in text.casefold().split()) if b]


def _negating(word: str) -> bool:
    """Whether one bare word negates (`NEGATIONS`, or an English n't)."""
    return word in NEGATIONS or word.endswith(_CONTRACTED)


def negated(text: str) -> bool:
    """Whether `text` carries a negating word (`_negating`)."""
    return any(_negating(w) for w in _words(text))


def _stem_match(a: str, b: str) -> bool:
    """The same word, or two forms of one (a shared start of at least 4 letters, all but the
    last 2 of the shorter: "happen"/"happens", "бывает"/"бывают")."""
    if a == b:
        return True
    shared = len(os.path.commonprefix([a, b]))
    return min(len(a), len(b)) >= 4 and shared >= max(4, min(len(a), len(b)) - 2)


def _inserted(negated_words: list[str], other: list[str]) -> bool:
    """Whether a negating word of `negated_words` stands beside a word of `other` (or a form
    of one): the negation sits inside the phrase the two texts share."""
    for i, w in enumerate(negated_words):
        beside = negated_words[max(i - 1, 0) : i] + negated_words[i + 1 : i + 2]
        if _negating(w) and any(_stem_match(a, b) for a in beside for b in other):
            return True
    return False


def negates(question: str, hit: NoteHit) -> bool:
    """Whether `question` negates the trigger it echoes: the hit's best unit is a trigger,
    exactly one of the two carries a negating word, and that word stands beside a word of the
    other ("can the soul NOT be killed" / "can the soul be killed"). A negation elsewhere
    asks no opposite ("Krishna advising not to be the cause of action's fruits" / "what does
    Krishna say about the fruits of action"). False for an empty question (a replay from the
    hits alone) and for a body chunk (see the module's notes)."""
    if not question or hit.via != "trigger":
        return False
    q, t = _words(question), _words(hit.unit)
    if negated(question) == negated(hit.unit):
        return False
    return _inserted(q, t) if negated(question) else _inserted(t, q)


@dataclass(frozen=True)
class Precheck:
    """The memory decision for one question, made once (`precheck`): the policy and why, the
    threshold it was made at, the best pinned note (None when there is none) and the pinned note
    that answers (None when none does: below the threshold, or its trigger negated)."""

    policy: Policy
    reason: str
    threshold: float
    best: NoteHit | None
    answer: NoteHit | None


def precheck(hits: Sequence[NoteHit], threshold: float, question: str = "") -> Precheck:
    """Whether memory answers `question`: the best pinned note does when its similarity reaches
    `threshold` and `question` does not negate its trigger (`negates`); the policy is then lean,
    else wide. The one comparison of a note against the memory threshold for that decision."""
    best = best_pinned(hits)
    if best is None:
        return Precheck(
            Policy.WIDE, "no pinned note in the searched corpora", threshold, None, None
        )
    reaches = best.similarity >= threshold
    why = (
        f"pinned note {best.note.key}: similarity {best.similarity:.4f} "
        f"{'≥' if reaches else '<'} {threshold:.4g}"
    )
    if not reaches:
        return Precheck(Policy.WIDE, why, threshold, best, None)
    if negates(question, best):
        why += f", but the question negates its trigger {best.unit!r}"
        return Precheck(Policy.WIDE, why, threshold, best, None)
    return Precheck(Policy.LEAN, why, threshold, best, best)


def threshold_for(kind: NoteKind, cfg: PipelineConfig) -> float:
    """The similarity from which a note of `kind` takes part: `boost_threshold` for a boost
    note (a topic, not an answer: its own threshold, measured on its own questions),
    `memory_threshold` for pinned and memory notes."""
    return cfg.boost_threshold if kind == NoteKind.BOOST else cfg.memory_threshold


def outcome(
    hits: Sequence[NoteHit], cfg: PipelineConfig, check: Precheck, seconds: float = 0.0
) -> MemoryOutcome:
    """What memory does under `cfg`, given its decision `check` (`precheck` over the same hits):
    the policy, and each note at or above its threshold (`threshold_for`) in its role (only the
    pinned note that answers, `check.answer`, is cited: a best pinned note whose trigger the
    question negates takes no part; memory notes frame, at most `MAX_FRAMING` of them)."""
    uses, framing = [], []
    for h in hits:
        if h.similarity < threshold_for(h.note.kind, cfg):
            continue
        if h.note.kind == NoteKind.MEMORY:
            if len(framing) >= MAX_FRAMING:
                continue
            framing.append(h.note.body)
            role = NoteRole.FRAMING
        elif h.note.kind == NoteKind.PINNED and h is not check.answer:
            role = NoteRole.BELOW  # another pinned note, or one whose trigger is negated
        else:
            role = _ROLE[h.note.kind]
        uses.append(NoteUse(h.note.key, str(h.note.kind), h.similarity, h.via, role))
    top = check.best.similarity if check.best is not None else 0.0
    return MemoryOutcome(
        check.policy, check.reason, check.threshold, top, tuple(uses), tuple(framing), seconds
    )


def lean_config(cfg: PipelineConfig) -> PipelineConfig:
    """The lean policy of `cfg`: one round, lanes `lean_lane_k` deep, `lean_top_k` notes."""
    return cfg.replace(
        max_fanout_rounds=1,
        lane_k=cfg.lean_lane_k,
        rerank_top_k=min(cfg.rerank_top_k, cfg.lean_top_k),
    )


def policy_config(cfg: PipelineConfig, policy: Policy) -> PipelineConfig:
    """The config retrieval collects with under `policy`."""
    return lean_config(cfg) if policy == Policy.LEAN else cfg


def boosted_labels(hits: Sequence[NoteHit], cfg: PipelineConfig) -> set[str]:
    """The addresses cited by the boost notes at or above `boost_threshold`."""
    return {
        label
        for h in hits
        if h.note.kind == NoteKind.BOOST and h.similarity >= cfg.boost_threshold
        for label in h.note.cites
    }


def boost(trace: RetrievalTrace, labels: set[str], amount: float) -> RetrievalTrace:
    """The trace with `amount` added to the rerank score of every candidate at a boosted address
    (the cosine, the gate's signal, is never touched). Unchanged when nothing is boosted."""
    if not labels or amount <= 0:
        return trace
    cands = [
        replace(c, rerank_score=(c.score if c.rerank_score is None else c.rerank_score) + amount)
        if c.addr_label in labels
        else c
        for c in trace.candidates
    ]
    return replace(trace, candidates=cands)


def note_id(key: str, corpus: str) -> int:
    """A pinned note's id among the notes: negative, so it never collides with a fragment id."""
    digest = hashlib.sha256(f"{corpus}\0{key}".encode()).hexdigest()
    return -int(digest[:12], 16) - 1


def note_candidate(hit: NoteHit) -> Candidate:
    """A pinned note as a final note: citable, addressed `note:<key>`, its body as text, its
    similarity (a cosine to the question) as score."""
    n = hit.note
    return Candidate(
        fragment_id=note_id(n.key, n.corpus),
        frag_key=n.address,
        corpus=n.corpus,
        kind=NOTE_KIND,
        source_id=n.source,
        track_id=None,
        start_ms=None,
        end_ms=None,
        addr_label=n.address,
        text=n.body,
        lang=n.lang,
        score=hit.similarity,
        lanes=(f"{NOTE_LANE}@r1",),
        round=1,
        text_len=len(n.body),
    )


def answered_by(check: Precheck) -> GateReason:
    """The decision record when a pinned note answers (`check.answer`): the memory gate, its
    similarity and the threshold; ValueError when none does."""
    if check.answer is None:
        raise ValueError(f"no pinned note answers: {check.reason}")
    return GateReason(
        GateKind.MEMORY,
        f"{check.reason}: memory answers",
        check.answer.similarity,
        check.threshold,
    )


__all__ = [
    "MAX_FRAMING",
    "NEGATIONS",
    "NOTE_LANE",
    "Precheck",
    "answered_by",
    "best_pinned",
    "boost",
    "boosted_labels",
    "lean_config",
    "negated",
    "negates",
    "note_candidate",
    "note_id",
    "outcome",
    "policy_config",
    "precheck",
    "threshold_for",
]
