"""Notebook 05's database side: fetch what the signals need besides the traces (the index's
addresses and document frequencies, the final notes' text) of the studies
`research.study.load_studies` loads, and the fold columns of the fold studies. Everything after
this is pure (`compute`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from citegate.corpus.builds import fold_count, parse_fold
from citegate.corpus.questions import question_fold, scope_fold
from citegate.pipeline.signals import IndexFacts, index_facts
from citegate.research.folds import question_unit
from citegate.research.study import Study
from citegate.store.db import connect
from citegate.store.tables import fragment_texts


@dataclass(frozen=True)
class SignalInputs:
    """What one corpus's signals read besides its traces: index facts and note texts by id."""

    facts: IndexFacts
    texts: Mapping[int, str]


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
            out[corpus] = SignalInputs(facts, fragment_texts(conn, sorted(ids)))
    return out


def fold_columns(studies: Mapping[str, Study]) -> pd.DataFrame:
    """Per (corpus, set, qid) of the fold studies: `base` (gita), `cv_fold` (the fold of the
    question's group) and `unit` (its certificate unit), to merge onto the signal frame."""
    rows = []
    for corpus, study in studies.items():
        base, fold = parse_fold(corpus) or (corpus, 0)
        k = fold_count(base)
        for name, s in study.sets.items():
            for q in s.questions:
                cv = scope_fold(q, k) if q.label == "out_of_scope" else question_fold(q)
                rows.append(
                    {"corpus": corpus, "set": name, "qid": q.id, "base": base}
                    | {"cv_fold": cv, "unit": question_unit(q)}
                )
    return pd.DataFrame(rows)


def fold_frame(studies: Mapping[str, Study], frame: pd.DataFrame) -> pd.DataFrame:
    """The signal frame of the fold studies with `base`, `cv_fold` and `unit` merged on."""
    return frame.merge(fold_columns(studies), on=["corpus", "set", "qid"], how="left")
