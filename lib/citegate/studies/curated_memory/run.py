"""Notebook 07's measurements against the database: the demo notes imported, each question's
pre-check signal, both policies retrieved and timed on the questions the pre-check sends lean
(through `retrieve`, the code `citegate ask` runs), the extractive answer's citations, and the
boost sweep replayed from one wide trace per question.

Timing: every question is retrieved once per policy untimed (caches warm), then `repeats` times
per policy, the order alternating, and each policy's median kept, so the ratio compares warm
with warm on the same machine in the same minute.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import psycopg

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.inputs import clean_question
from citegate.core.progress import bar
from citegate.core.types import KIND_GROUPS, NOTE_KIND, Candidate, Policy, RetrievalResult
from citegate.corpus.memory_questions import (
    MemoryQuestion,
    corpus_negatives,
    load_memory_questions,
    scope_negatives,
)
from citegate.corpus.notes import NOTE_ADDRESS_PREFIX, NoteFile, NoteKind, read_notes
from citegate.models.embed import Embedder
from citegate.models.rerank import Reranker
from citegate.pipeline import memory
from citegate.pipeline.extractive import MAX_NOTES
from citegate.pipeline.fallback import fixed_strings_language
from citegate.pipeline.retrieve import collect, replay, retrieve
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.turn import grounded_answer
from citegate.store.memory import ImportReport, NoteHit, import_notes, note_hits
from citegate.studies.curated_memory.compute import BoostRow, PathRow, PrecheckRow

LANES_PER_TEXT = len(KIND_GROUPS) + 2  # a dense lane per kind group, lexical, address


def load_notes(path: str) -> NoteFile:
    """The curated notes of the file at `path`, relative to the repository (`read_notes`: every
    record checked)."""
    return read_notes(paths.ROOT / path)


def questions_for(
    notes: NoteFile, negatives: Mapping[str, int], out_of_scope: Mapping[str, int]
) -> list[MemoryQuestion]:
    """The written questions, then the gita questions no pinned note of `notes` answers and the
    out-of-scope ones (per language, deterministically sampled)."""
    pinned = {c for n in notes.notes if n.kind == NoteKind.PINNED for c in n.cites}
    return [
        *load_memory_questions(),
        *corpus_negatives(pinned, negatives),
        *scope_negatives(out_of_scope),
    ]


def taken_lean(
    questions: Sequence[MemoryQuestion], rows: Sequence[PrecheckRow], threshold: float
) -> list[MemoryQuestion]:
    """The questions the pre-check sends lean at `threshold`."""
    lean = {r.qid for r in rows if r.best_pinned >= threshold}
    return [q for q in questions if q.id in lean]


def boost_sample(questions: Sequence[MemoryQuestion], others: int) -> list[MemoryQuestion]:
    """The questions on boost notes' topics and the first `others` in-corpus questions with gold
    verses (whose recall a boost must not lower)."""
    on = [q for q in questions if q.note_kind == "boost"]
    rest = [q for q in questions if q.kind == "in_corpus" and q.note_kind != "boost" and q.gold]
    return on + rest[:others]


def import_demo(
    conn: psycopg.Connection, notes: NoteFile, embedder: Embedder, *, replace: bool
) -> ImportReport:
    """The demo notes into the database (unchanged when already there)."""
    return import_notes(conn, notes, embedder, replace=replace)


def _row(q: MemoryQuestion, hit: NoteHit | None, positive: bool, kind: str) -> PrecheckRow:
    return PrecheckRow(
        q.id, q.language, kind, q.echo, q.note, q.note_kind, positive, q.split, q.group,
        hit.similarity if hit else 0.0, hit.note.key if hit else "", hit.via if hit else "",
    )  # fmt: skip


def signal_rows(
    conn: psycopg.Connection,
    questions: Sequence[MemoryQuestion],
    cfg: PipelineConfig,
    embedder: Embedder,
    *,
    progress: bool = False,
) -> tuple[list[PrecheckRow], list[PrecheckRow]]:
    """Each question's best pinned note (the pre-check's signal; positive when memory answers
    it) and its best boost note (positive when it is on that boost note's topic), with their
    similarities and which unit gave them."""
    texts = [clean_question(q.text) for q in questions]
    vecs = embedder.embed_queries(texts)
    pinned, boosts = [], []
    for q, v in bar(list(zip(questions, vecs, strict=True)), desc="curated-note lane", unit="q",
                    disable=not progress):  # fmt: skip
        hits = note_hits(conn, v, embedder.id, cfg.corpora)
        pinned.append(_row(q, memory.best_pinned(hits), q.memory_answers, q.kind))
        on_topic = q.note_kind == "boost" and q.echo != "neither"
        kind = "on_boost_topic" if on_topic else q.kind.replace("answered_by_memory", "in_corpus")
        best = next((h for h in hits if h.note.kind == NoteKind.BOOST), None)
        boosts.append(_row(q, best, on_topic, kind))
    return pinned, boosts


def _searches(res: RetrievalResult) -> int:
    """Lane searches a retrieval ran: every text of each round collected, each lane."""
    rounds = int(res.trace.collection["max_fanout_rounds"])
    texts = len(res.trace.plan.texts()) + (2 if rounds >= 2 else 0)
    return texts * LANES_PER_TEXT + 1  # + the named lane on the question


def _note_key(c: Candidate) -> str:
    return (c.addr_label or "").removeprefix(NOTE_ADDRESS_PREFIX)


def _cited_keys(
    q: MemoryQuestion, res: RetrievalResult, cfg: PipelineConfig, embedder: Embedder
) -> tuple[str, ...]:
    """The curated notes the extractive answer over these notes cites."""
    with RoleClients(cfg.replace(composer="extractive")) as roles:
        g, _ = grounded_answer(
            q.text, fixed_strings_language(q.language), res.notes, cfg.replace(composer="extractive"),
            embedder, roles,
        )  # fmt: skip
    if g.check is None:
        return ()
    shown = res.notes[:MAX_NOTES]
    cited = {int(n) for v in g.check.verdicts for n in v.cited if n.isdigit()}
    return tuple(
        _note_key(shown[n - 1]) for n in sorted(cited)
        if 0 < n <= len(shown) and shown[n - 1].kind == NOTE_KIND
    )  # fmt: skip


def _path_row(
    q: MemoryQuestion, policy: Policy, res: RetrievalResult, seconds: float,
    cfg: PipelineConfig, embedder: Embedder,
) -> PathRow:  # fmt: skip
    by = res.decided_by.kind if res.decided_by is not None else ""
    return PathRow(
        q.id, q.group, q.language, str(policy), seconds,
        tuple(c.addr_label or c.frag_key for c in res.notes), str(res.decision), str(by),
        _searches(res), len(res.trace.candidates),
        sum(c.rerank_score is not None for c in res.trace.candidates),
        tuple(_note_key(c) for c in res.notes if c.kind == NOTE_KIND),
        _cited_keys(q, res, cfg, embedder), q.gold,
    )  # fmt: skip


def path_rows(
    conn: psycopg.Connection,
    questions: Sequence[MemoryQuestion],
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    *,
    repeats: int = 3,
    progress: bool = False,
) -> list[PathRow]:
    """Each question retrieved under both policies (warm, median of `repeats` timed runs,
    order alternating), with the extractive answer's citations."""
    out = []
    policies = (Policy.LEAN, Policy.WIDE)
    for q in bar(questions, desc="lean vs wide", unit="q", disable=not progress):
        last = {p: retrieve(conn, q.text, cfg, embedder, reranker, policy=p) for p in policies}
        times: dict[Policy, list[float]] = {p: [] for p in policies}
        for i in range(repeats):
            for p in policies if i % 2 == 0 else policies[::-1]:
                clock = time.perf_counter()
                last[p] = retrieve(conn, q.text, cfg, embedder, reranker, policy=p)
                times[p].append(time.perf_counter() - clock)
        for p in policies:
            seconds = sorted(times[p])[len(times[p]) // 2]
            out.append(_path_row(q, p, last[p], seconds, cfg, embedder))
    return out


def boost_rows(
    conn: psycopg.Connection,
    questions: Sequence[MemoryQuestion],
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    strengths: Sequence[float],
    *,
    progress: bool = False,
) -> list[BoostRow]:
    """Each question's wide trace collected once and replayed at every boost strength: the
    share of its gold verses among the final notes (the cut alone: the gate does not change
    which notes are kept)."""
    out = []
    for q in bar(questions, desc="boost", unit="q", disable=not progress):
        text = clean_question(q.text)
        trace = collect(conn, text, cfg, embedder, reranker)
        hits = note_hits(conn, embedder.embed_queries([text])[0], embedder.id, cfg.corpora)
        labels = memory.boosted_labels(hits, cfg)
        for s in strengths:
            notes = replay(memory.boost(trace, labels, s), cfg).notes
            have = {c.addr_label for c in notes}
            recall = sum(g in have for g in q.gold) / len(q.gold) if q.gold else 0.0
            out.append(BoostRow(q.id, q.group, float(s), q.note_kind == "boost", recall))
    return out


__all__ = [
    "LANES_PER_TEXT",
    "boost_rows",
    "boost_sample",
    "import_demo",
    "path_rows",
    "signal_rows",
    "questions_for",
    "taken_lean",
]
