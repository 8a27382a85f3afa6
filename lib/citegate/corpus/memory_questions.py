"""The labeled questions of the curated-memory demo (`data/memory/`), and the negatives drawn
from the shipped question sets.

A written question echoes a note's trigger, echoes only its body, or neither; `memory_answers`
is true exactly when a pinned note answers it. The negatives a pre-check must refuse come in two
kinds: `in_corpus` (written near misses, questions on boost and memory notes, and questions of
the gita set whose verse no pinned note cites: the corpus answers them, memory does not) and
`out_of_scope` (the out-of-scope set). There is no `out_of_corpus` kind here: the notes cite the
full gita build, which holds every verse. Splits are fixed by the group (`questions.split_of`),
so a note's questions never sit on both sides.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus.questions import Question, load_set, records, split_of
from citegate.evaluation.sampling import salted_sample

MEMORY_DIR = paths.DATA / "memory"
DEMO_NOTES = MEMORY_DIR / "gita-notes.yaml"
DEMO_QUESTIONS = MEMORY_DIR / "gita-memory-questions.jsonl"
ECHOES = ("trigger", "body", "neither")
NEGATIVE_KINDS = ("in_corpus", "out_of_scope")
SAMPLE_SALT = "citegate-memory-negatives-v1"
_FIELDS = {
    "id": str,
    "text": str,
    "language": str,
    "echo": str,
    "note": str,
    "note_kind": str,
    "gold": list,
    "memory_answers": bool,
    "group": str,
}


@dataclass(frozen=True)
class MemoryQuestion:
    """A question the pre-check decides on: its text and language, what it echoes (`echo`) of
    which note (`note`, `note_kind`), its gold verses, whether memory answers it, its group and
    split, and `kind`: answered_by_memory | in_corpus | out_of_scope."""

    id: str
    text: str
    language: str
    echo: str
    note: str
    note_kind: str
    gold: tuple[str, ...]
    memory_answers: bool
    group: str
    split: str
    kind: str


def load_memory_questions(path: Path = DEMO_QUESTIONS) -> list[MemoryQuestion]:
    """The written questions, each checked; a bad record is an `InputError` naming file and
    line."""
    out = []
    for n, rec in enumerate(records(path, _FIELDS), 1):
        if rec["echo"] not in ECHOES:
            raise InputError(path, n, f"echo must be one of {', '.join(ECHOES)}")
        if not all(isinstance(g, str) for g in rec["gold"]):
            raise InputError(path, n, "gold must be a list of addresses")
        if rec["memory_answers"] and (rec["note_kind"] != "pinned" or rec["echo"] == "neither"):
            raise InputError(path, n, "only a question echoing a pinned note is answered by memory")
        kind = "answered_by_memory" if rec["memory_answers"] else "in_corpus"
        out.append(
            MemoryQuestion(
                rec["id"],
                rec["text"],
                rec["language"],
                rec["echo"],
                rec["note"],
                rec["note_kind"],
                tuple(rec["gold"]),
                rec["memory_answers"],
                rec["group"],
                split_of(rec["group"]),
                kind,
            )  # fmt: skip
        )
    return out


def corpus_negatives(
    pinned_cites: Collection[str], per_language: Mapping[str, int]
) -> list[MemoryQuestion]:
    """Up to `per_language[lang]` answerable questions of the gita set whose gold verses no
    pinned note cites (memory does not answer them), deterministically sampled."""
    cited = set(pinned_cites)
    pool = [
        q for q in load_set("gita").questions if q.label == "answerable" and not set(q.gold) & cited
    ]
    return _negatives(pool, per_language, "in_corpus")


def scope_negatives(per_language: Mapping[str, int]) -> list[MemoryQuestion]:
    """Up to `per_language[lang]` questions of the out-of-scope set, deterministically sampled."""
    return _negatives(list(load_set("out-of-scope").questions), per_language, "out_of_scope")


def _negatives(
    pool: list[Question], per_language: Mapping[str, int], kind: str
) -> list[MemoryQuestion]:
    """Up to `per_language[lang]` of `pool`'s questions in each language, sampled by salted
    hash, as negatives of `kind` (an out-of-scope question keeps no gold)."""
    out = []
    for lang, limit in per_language.items():
        mine = [q for q in pool if q.language == lang]
        for q in salted_sample(mine, lambda q: q.id, limit, SAMPLE_SALT):
            gold = q.gold if kind == "in_corpus" else ()
            out.append(
                MemoryQuestion(
                    q.id, q.text, lang, "neither", "", "", gold, False, q.group, q.split, kind
                )  # fmt: skip
            )
    return out


__all__ = [
    "DEMO_NOTES",
    "DEMO_QUESTIONS",
    "ECHOES",
    "MEMORY_DIR",
    "NEGATIVE_KINDS",
    "MemoryQuestion",
    "corpus_negatives",
    "load_memory_questions",
    "scope_negatives",
]
