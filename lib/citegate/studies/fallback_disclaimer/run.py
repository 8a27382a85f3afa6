"""Running notebook 04: the sampled questions and `run_calls`, which sends every (question,
variant) through `fallback_turn` for every model (`research.models`), its probes searched through
the cached retrieval pass (`research.probe`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.errors import CitegateError
from citegate.core.progress import bar
from citegate.corpus.builds import build_id
from citegate.corpus.questions import load_set
from citegate.models.embed import default_embedder
from citegate.pipeline.fallback import PROMPT_VARIANTS, fallback_turn
from citegate.pipeline.llm_calls import CallOptions
from citegate.research.models import model_client, resolve_models
from citegate.research.probe import probe_search
from citegate.research.study import sample
from citegate.store.db import connect
from citegate.store.production import load_reranker
from citegate.studies.fallback_disclaimer.compute import (
    FallbackQuestions,
    Item,
    answer_row,
    question_records,
)


def load_questions(
    set_corpora: dict[str, str], labels: Sequence[str], languages: Sequence[str], limit: int
) -> FallbackQuestions:
    """Up to `limit` questions per (label, language) of each set (`set -> corpus build`),
    deterministically sampled."""
    sets, items = {}, []
    for name, corpus in set_corpora.items():
        qset = load_set(name)
        sets[name] = qset
        for lang in languages:
            pool = [q for q in qset.questions if q.language == lang and q.label in labels]
            items += [Item(name, corpus, q) for q in sample(pool, limit)]
    return FallbackQuestions(sets, dict(set_corpora), items)


def record_questions(rec: Any, fq: FallbackQuestions) -> None:
    """Log each set (digest, the questions used, corpus build) on a Recorder."""
    for name, qset in fq.sets.items():
        used = question_records(fq, name)
        rec.dataset(
            name,
            qset.digest,
            len(used),
            f"data/questions/{name}.jsonl",
            build_id(fq.corpora[name]),
            records=used,
        )
    rec.note(
        corpus_builds=",".join(sorted({build_id(c) for c in fq.corpora.values()})),
        sample_sizes=",".join(f"{n}:{sum(1 for it in fq.items if it.set == n)}" for n in fq.sets),
    )


def run_calls(
    fq: FallbackQuestions,
    models: Sequence[str],
    variants: Sequence[str],
    cfg: PipelineConfig,
    *,
    max_tokens: int = 160,
    json_mode: str = "schema",
    reranker: str = "none",
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (question, variant) through `fallback_turn` for every available model. Returns the
    answers (one row each) and the models table (used or skipped, with why, wall seconds)."""
    bad = [v for v in variants if v not in PROMPT_VARIANTS]
    if bad:
        raise CitegateError(f"unknown prompt variant(s) {bad}; known: {PROMPT_VARIANTS}")
    emb = default_embedder()
    cfg = cfg.replace(embedder=emb.id, reranker=reranker)
    rr = load_reranker(cfg)
    usable, skipped = resolve_models(models)
    rows, info = [], [{"model": m, "used": False, "why": why} for m, why in skipped.items()]
    with connect() as conn:
        searches = {c: probe_search(conn, c, cfg, emb, rr) for c in set(fq.corpora.values())}
        for name, path in usable.items():
            clock = time.perf_counter()
            with model_client(name, path) as client:
                todo = [(it, v) for it in fq.items for v in variants]
                for it, v in bar(todo, desc=f"fallback {name}", unit="call", disable=not progress):
                    fb = fallback_turn(
                        client,
                        it.question.text,
                        searches[it.corpus],
                        admission=cfg.fallback_admission,
                        options=CallOptions(v, max_tokens, json_mode),
                    )
                    rows.append(answer_row(it, name, fb))
                info.append(
                    {
                        "model": name,
                        "used": True,
                        "why": f"{client.model} ({client.kind})",
                        "wall_s": time.perf_counter() - clock,
                        **{k: v for k, v in client.usage.as_dict().items() if k != "attempts"},
                    }
                )
    return pd.DataFrame(rows), pd.DataFrame(info)
