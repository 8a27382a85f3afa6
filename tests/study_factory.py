"""A tiny hand-built `Study` for the studies' compute tests: questions with known candidates and
gold, replayed in memory like a real run (no database, no model)."""

from __future__ import annotations

from collections.abc import Sequence

from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.types import Candidate, QueryPlan, RetrievalTrace, SubQuestion
from citegate.corpus.questions import Question, QuestionSet
from citegate.research.study import Study, StudySet

CFG = PipelineConfig(sufficient_lectures=0)


def question(qid: str, label: str = "answerable", language: str = "en") -> Question:
    """A labeled question of set `s` (text = id)."""
    return Question(qid, qid, language, label, (), "hand", "tune", "c", qid)


def trace(text: str, cands: Sequence[Candidate], cfg: PipelineConfig = CFG) -> RetrievalTrace:
    """A trace holding exactly these candidates."""
    plan = QueryPlan(text, (SubQuestion("main", text),), "offline")
    return RetrievalTrace(text, plan, cfg.collection_key(), cfg.embedder, cfg.reranker, list(cands))


def study_set(
    rows: Sequence[tuple[Question, Sequence[Candidate], Sequence[int]]], name: str = "s"
) -> StudySet:
    """One set: (question, its candidates, its gold fragment ids) per row."""
    qs = [q for q, _, _ in rows]
    return StudySet(
        QuestionSet(name, "c", tuple(qs)),
        "c",
        qs,
        {q.id: trace(q.text, cands, CFG.replace(corpora=["c"])) for q, cands, _ in rows},
        {q.id: list(gold) for q, _, gold in rows if gold},
    )


def make_study(*sets: StudySet, cfg: PipelineConfig = CFG) -> Study:
    """A Study of the given sets (keyed by their question set names)."""
    return Study({s.qset.name: s for s in sets}, cfg, cfg.reranker, cfg.embedder)


def cand(fid: int, score: float, kind: str = "verse", **fields: object) -> Candidate:
    """A candidate with an explicit id, cosine and kind."""
    return make_candidate(fid, score=score, kind=kind, **fields)
