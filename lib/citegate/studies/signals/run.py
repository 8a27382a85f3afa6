"""Notebook 05's database side: load one study per corpus (cached traces), fetch what the signals
need besides the traces (the index's addresses and document frequencies, the final notes' text),
and log what the run used. Everything after this is pure (`compute`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from citegate.core.config import PipelineConfig
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
