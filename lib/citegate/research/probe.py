"""Probe search for the studies that search queries of their own (notebook 04's fallback probes,
notebook 01's follow-up arms): one query searched on a corpus build through the shared, cached
retrieval pass (`traces.traces_for` + `replay`, the same code as `retrieve`), giving its notes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from citegate.core.config import PipelineConfig
from citegate.corpus.questions import Question
from citegate.pipeline.fallback import Search, detect_language
from citegate.pipeline.retrieve import replay
from citegate.research.traces import traces_for


def probe_search(
    conn: Any, corpus: str, cfg: PipelineConfig, embedder: Any, reranker: Any
) -> Search:
    """Search one probe on a corpus build through the cached retrieval pass (final notes)."""
    set_cfg = cfg.replace(corpora=[corpus])

    def search(probe: str) -> Sequence[Any]:
        q = Question(
            id=f"probe:{hashlib.sha256(probe.encode()).hexdigest()[:16]}",
            text=probe,
            language=detect_language(probe),
            label="probe",
            gold=(),
            origin="fallback-probe",
            split="",
            corpus=corpus,
            group="",
        )
        trace = traces_for(conn, [q], set_cfg, embedder, reranker, progress=False)[q.id]
        return replay(trace, set_cfg).notes

    return search
