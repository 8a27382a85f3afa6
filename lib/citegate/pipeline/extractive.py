"""The extractive composer: an answer made of the notes' own sentences, faithful by construction.

The sentences of the first `max_notes` notes are scored by the embedder against the question
(the question as a query, each sentence as a passage: one batched call). Which sentences are kept
is the policy's (`EXTRACT_POLICIES`, `PipelineConfig.extract_policy`):

- `named` (production): a named address is what the user asked about, so when the question names
  sources (pinned notes: "BG 13.20", "Chapter 13, Verse 20") the answer is drawn from those
  notes alone; so is it from the curated note that curated memory found to answer the question
  (an editor's citable answer, `NOTE_KIND`); otherwise the sentences nearest the question from
  any shown note.
- `lead`: the named sources alone likewise; otherwise the top-ranked note (the reranker's choice)
  leads with its sentences nearest the question (up to `per_note`), and another note's sentence
  joins only when it is at least as near the question as the lead's nearest.
- `nearest`: the `sentences` nearest the question from any shown note, named or not.

Notebook 08 measures them on the same grounded turns, by the share of answered gita test
questions whose answer cites only other verses than the one asked about (full profile, run
58179111): naming a verse, `named` 2 of 284 (0.7%) against `nearest` 163 of 284 (57%); naming
none, `named` (= `nearest` there) 7 of 43 against `lead` 13 of 43: the reranker's first note is
less often the verse asked about than the note holding the nearest sentence.
`citegate run --profile full experiments/08_end_to_end.yaml`

At most `per_note` sentences come from one note; they are written back in the notes' order, each
followed by its note's marker `[n]`. Nothing is generated, so no claim can say what its note does
not; the claim check still runs on it, as on every answer. A sentence needs `MIN_WORDS` words: a
verse number or a heading is no claim; nor is a verse's Sanskrit in transliteration (a sentence
whose words carry IAST diacritics in `TRANSLITERATED` share or more: e5 scores it as near the
question as the translation beside it, and a reader cannot check it); a paragraph break ends a
sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from citegate.core.types import NOTE_KIND, CallStatus, Candidate
from citegate.corpus.chunking import split_sentences
from citegate.models.embed import Embedder
from citegate.pipeline.compose import Composed

MIN_WORDS = 4
EXTRACT_POLICIES = ("named", "lead", "nearest")
MAX_NOTES = 5  # the notes shown to every composer (the outline planner's too)
# A blank line ends a sentence: a verse's translation and its IAST text are two paragraphs.
_PARAGRAPH = re.compile(r"\n\s*\n")
TRANSLITERATED = 0.3  # share of words with an IAST diacritic from which a sentence is Sanskrit
_IAST = re.compile("[āīūṛṝḷḹṁṃḥñṅṇṭḍśṣĀĪŪṚṜḶṀṂḤÑṄṆṬḌŚṢ]")


@dataclass(frozen=True)
class Sentence:
    """One candidate sentence: its note's number (1-based), its place in the note, its text."""

    note: int
    position: int
    text: str


def note_sentences(notes: Sequence[Candidate], max_notes: int = MAX_NOTES) -> list[Sentence]:
    """Every sentence of the first `max_notes` notes with at least `MIN_WORDS` words."""
    out = []
    for n, note in enumerate(notes[:max_notes], 1):
        paragraphs = (" ".join(p.split()) for p in _PARAGRAPH.split(note.text))
        found = [s for p in paragraphs for s in split_sentences(p)]
        out += [Sentence(n, i, t) for i, t in enumerate(found) if _claim(t)]
    return out


def _named(c: Candidate) -> bool:
    """A source the answer is drawn from alone: named by the question, or the curated note
    memory chose as the answer."""
    return c.pinned or c.kind == NOTE_KIND


def _claim(text: str) -> bool:
    """Whether a sentence can be a claim: `MIN_WORDS` words, not a transliterated verse."""
    words = text.split()
    if len(words) < MIN_WORDS:
        return False
    return sum(bool(_IAST.search(w)) for w in words) / len(words) < TRANSLITERATED


def pick(scores: np.ndarray, sentences: Sequence[Sentence], k: int, per_note: int) -> list[int]:
    """Indices of the `k` best-scoring sentences (ties by note order), at most `per_note` from
    one note, returned in the notes' order (the `nearest` policy)."""
    return _in_note_order(_greedy(scores, sentences, range(len(sentences)), k, per_note), sentences)


def pick_lead(
    scores: np.ndarray,
    sentences: Sequence[Sentence],
    k: int,
    per_note: int,
    named: Sequence[int] = (),
) -> list[int]:
    """The `lead` policy's sentences (see the module docstring): from the `named` notes alone
    when the question names any that have sentences; else the lead note's (the lowest-numbered
    note with a sentence) nearest `per_note` sentences, then the other notes' sentences scoring
    at least as high as the lead's nearest, best first; `k` in all, at most `per_note` a note,
    in the notes' order."""
    allowed = [i for i, s in enumerate(sentences) if s.note in set(named)]
    if allowed:
        return _in_note_order(_greedy(scores, sentences, allowed, k, max(per_note, k)), sentences)
    if not sentences:
        return []
    lead = min(s.note for s in sentences)
    own = _greedy(
        scores, sentences, [i for i, s in enumerate(sentences) if s.note == lead], k, per_note
    )
    bar = float(scores[own[0]])
    rest = [i for i, s in enumerate(sentences) if s.note != lead and float(scores[i]) >= bar]
    taken = [*own, *_greedy(scores, sentences, rest, k - len(own), per_note)]
    return _in_note_order(taken, sentences)


def _greedy(
    scores: np.ndarray,
    sentences: Sequence[Sentence],
    allowed: Iterable[int],
    k: int,
    per_note: int,
    used: dict[int, int] | None = None,
) -> list[int]:
    """Up to `k` of the `allowed` indices, best score first (ties by index), at most `per_note`
    from one note counting the `used` ones."""
    taken: list[int] = []
    per = dict(used or {})
    for i in sorted(allowed, key=lambda j: (-float(scores[j]), j)):
        if len(taken) >= k:
            break
        note = sentences[i].note
        if per.get(note, 0) < per_note:
            taken.append(i)
            per[note] = per.get(note, 0) + 1
    return taken


def _in_note_order(indices: Iterable[int], sentences: Sequence[Sentence]) -> list[int]:
    return sorted(indices, key=lambda j: (sentences[j].note, sentences[j].position))


def extract(
    embedder: Embedder,
    question: str,
    notes: Sequence[Candidate],
    *,
    sentences: int = 3,
    max_notes: int = MAX_NOTES,
    per_note: int = 2,
    policy: str = "named",
) -> Composed:
    """The extractive answer: one line per chosen sentence, `<sentence> [n]`, chosen by `policy`
    (`EXTRACT_POLICIES`; the module docstring says how). `offered` maps every shown note's
    number to its full text. No notes, or none with a sentence, is an empty answer with status
    `no sources` (the turn then has nothing to say from the corpus)."""
    if policy not in EXTRACT_POLICIES:
        raise ValueError(f"unknown extract policy {policy!r}; known: {EXTRACT_POLICIES}")
    shown = list(notes[:max_notes])
    offered = {str(n): c.text for n, c in enumerate(shown, 1)}
    found = note_sentences(shown, max_notes)
    if not found:
        return Composed("", offered, CallStatus.NO_SOURCES.value)
    query = embedder.embed_queries([question])[0]
    scores = embedder.embed_passages([s.text for s in found]) @ query
    named = [n for n, c in enumerate(shown, 1) if _named(c)] if policy != "nearest" else []
    named_found = [i for i, s in enumerate(found) if s.note in set(named)]
    if policy == "lead" or named_found:
        chosen = pick_lead(np.asarray(scores), found, sentences, per_note, named)
    else:
        chosen = pick(np.asarray(scores), found, sentences, per_note)
    text = "\n".join(f"{found[i].text} [{found[i].note}]" for i in chosen)
    return Composed(text, offered, CallStatus.OK.value)


__all__ = [
    "EXTRACT_POLICIES",
    "MAX_NOTES",
    "MIN_WORDS",
    "Sentence",
    "extract",
    "note_sentences",
    "pick",
    "pick_lead",
]
