"""Notebook 05's database side: load one study per corpus (cached traces), fetch what the signals
need besides the traces (the index's addresses and document frequencies, the final notes' text),
and log what the run used. Everything after this is pure (`compute`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.corpus.builds import DEMO_FOLDS, fold_build, parse_fold
from citegate.corpus.questions import Question, question_fold, scope_fold
from citegate.pipeline.signals import IndexFacts, index_facts, note_texts
from citegate.research.study import Study, load_study
from citegate.store.db import connect


@dataclass(frozen=True)
class SignalInputs:
    """What one corpus's signals read besides its traces: index facts and note texts by id."""

    facts: IndexFacts
    texts: Mapping[int, str]


def load_studies(
    corpora: Mapping[str, Mapping[str, str]],
    cfg: PipelineConfig,
    *,
    limit: int,
    reranker: str,
) -> dict[str, Study]:
    """One `Study` per corpus build (`corpus -> {question set -> corpus searched}`), every split
    (the study splits tune/test itself), traces from the cache when warm."""
    return {
        corpus: load_study(dict(sets), cfg, limit=limit, split="all", reranker=reranker)
        for corpus, sets in corpora.items()
    }


def signal_inputs(studies: Mapping[str, Study]) -> dict[str, SignalInputs]:
    """Per corpus: `IndexFacts` of the searched builds and the text of every final note of every
    replayed question (slim traces carry no text), fetched once over one connection."""
    out: dict[str, SignalInputs] = {}
    with connect() as conn:
        for corpus, study in studies.items():
            searched = tuple(dict.fromkeys(s.corpus for s in study.sets.values()))
            facts = index_facts(conn, searched, study.embedder_id)
            ids: set[int] = set()
            for s in study.sets.values():
                for res in s.replay_all(study.config).values():
                    ids.update(c.fragment_id for c in res.notes)
            out[corpus] = SignalInputs(facts, note_texts(conn, sorted(ids)))
    return out


def fold_selector(base: str, fold: int) -> Callable[[str, Question], bool]:
    """Which questions fold build `fold` of `base` is asked (see `studies.signals.crossfit`):
    its own held-out questions (out_of_corpus), the answerable questions of the previous fold,
    and the out-of-scope questions whose salted fold is this one. So every question has at most
    one out_of_corpus and one answerable row, both in the fold of its group."""
    k = DEMO_FOLDS[base]
    previous = (fold - 2) % k + 1

    def keep(set_name: str, q: Question) -> bool:
        if q.label == "out_of_scope":
            return scope_fold(q, k) == fold
        return question_fold(q) == (fold if q.label == "out_of_corpus" else previous)

    return keep


def load_fold_studies(
    bases: Sequence[str], cfg: PipelineConfig, *, limit: int, reranker: str
) -> dict[str, Study]:
    """One `Study` per fold build of each base corpus (`gita-fold1` ...), each asked its fold
    set and the out-of-scope set under `fold_selector`, `limit` questions per label and set."""
    out: dict[str, Study] = {}
    for base in bases:
        if base not in DEMO_FOLDS:
            raise ConfigError(
                f"{base!r} has no leave-out folds (corpora with folds: {', '.join(DEMO_FOLDS)})"
            )
        for fold in range(1, DEMO_FOLDS[base] + 1):
            name = fold_build(base, fold)
            sets = {name: name, "out-of-scope": name}
            out[name] = load_study(
                sets,
                cfg,
                limit=limit,
                split="all",
                reranker=reranker,
                select=fold_selector(base, fold),
            )
    return out


def fold_columns(studies: Mapping[str, Study]) -> pd.DataFrame:
    """Per (corpus, set, qid) of the fold studies: `base` (gita), `cv_fold` (the fold of the
    question's group) and `unit` (its certificate unit), to merge onto the signal frame."""
    rows = []
    for corpus, study in studies.items():
        base, fold = parse_fold(corpus) or (corpus, 0)
        k = DEMO_FOLDS[base]
        for name, s in study.sets.items():
            for q in s.questions:
                cv = scope_fold(q, k) if q.label == "out_of_scope" else question_fold(q)
                rows.append(
                    {"corpus": corpus, "set": name, "qid": q.id, "base": base}
                    | {"cv_fold": cv, "unit": question_unit(q)}
                )
    return pd.DataFrame(rows)


def question_unit(q: Question) -> str:
    """The certificate's independent unit: an XQuAD question's paragraph without its language
    (the Russian question is a translation of the English one), else its group (a gita verse,
    an out-of-scope question)."""
    if q.group.startswith("xquad:") and q.gold:
        _, _, rest = q.gold[0].split(":", 2)
        return f"xquad:{rest}"
    return q.group


def fold_frame(studies: Mapping[str, Study], frame: pd.DataFrame) -> pd.DataFrame:
    """The signal frame of the fold studies with `base`, `cv_fold` and `unit` merged on."""
    return frame.merge(fold_columns(studies), on=["corpus", "set", "qid"], how="left")
