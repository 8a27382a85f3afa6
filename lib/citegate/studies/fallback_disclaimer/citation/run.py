"""Running the citation study: grounded questions retrieved through the cached production pass
(notes hydrated with their texts), outline and composed answers from every available model, and
the fallback answers of notebook 04's table with their admitted hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.errors import MODEL_ERROR
from citegate.core.progress import bar
from citegate.models.embed import default_embedder
from citegate.pipeline.fallback import NO_ANSWER
from citegate.pipeline.llm_calls import CallOptions
from citegate.pipeline.outline import outline_call
from citegate.pipeline.retrieve import replay
from citegate.research.models import model_client, resolve_models
from citegate.research.traces import traces_for
from citegate.store.db import connect
from citegate.store.production import load_reranker
from citegate.store.tables import fragment_texts
from citegate.studies.fallback_disclaimer.citation.compute import (
    FORMATS,
    MAX_SOURCES,
    Answer,
    GroundedItem,
    outline_answer,
)
from citegate.studies.fallback_disclaimer.citation.tagged import compose


def hydrate(conn: Any, notes: Sequence[Any]) -> tuple[Any, ...]:
    """Notes with their texts from the database (cached traces keep no text)."""
    texts = fragment_texts(conn, [c.fragment_id for c in notes if not c.text])
    return tuple(c if c.text else replace(c, text=texts.get(c.fragment_id, "")) for c in notes)


def grounded_items(fq: Any, cfg: PipelineConfig, reranker: str = "none") -> list[GroundedItem]:
    """Every sampled answerable question through the cached production retrieval (one trace per
    question, replayed under `cfg` on its corpus build), notes hydrated with their texts."""
    emb = default_embedder()
    cfg = cfg.replace(embedder=emb.id, reranker=reranker)
    rr = load_reranker(cfg)
    out: list[GroundedItem] = []
    with connect() as conn:
        for corpus in sorted(set(fq.corpora.values())):
            set_cfg = cfg.replace(corpora=[corpus])
            items = [it for it in fq.items if it.corpus == corpus]
            traces = traces_for(conn, [it.question for it in items], set_cfg, emb, rr)
            for it in items:
                res = replay(traces[it.question.id], set_cfg)
                notes = hydrate(conn, res.notes)
                out.append(GroundedItem(it.set, it.question, res.decision, notes))
    return out


def answer_item(client: Any, model: str, item: GroundedItem, options: CallOptions) -> list[Answer]:
    """The outline and the composed answer for one question (none when the gate bailed out)."""
    q = item.question
    base = {"model": model, "set": item.set, "qid": q.id, "language": q.language, "group": q.group}
    if item.decision == "insufficient":
        return [
            Answer(format=f, text="", offered={}, status="gate: bail out", **base)
            for f in FORMATS[:2]
        ]
    shown = item.notes[:MAX_SOURCES]
    offered = {str(i): c.text for i, c in enumerate(shown, 1)}
    plan = outline_call(client, q.text, shown, options)
    written = compose(client, q.text, [c.text for c in shown], options)
    return [
        Answer(
            format="outline",
            text=outline_answer(plan),
            offered=offered,
            status=plan.status,
            dropped=plan.dropped,
            **base,
        ),
        Answer(
            format="composed",
            text=written.text,
            offered=written.offered,
            status=written.status,
            **base,
        ),
    ]


def run_grounded(
    items: Sequence[GroundedItem],
    models: Sequence[str],
    *,
    max_tokens: int = 160,
    json_mode: str = "schema",
    progress: bool = False,
) -> list[Answer]:
    """Outline and composed answers of every available model (missing models are skipped; the
    fallback study's models table says why). Every call is cached."""
    usable, _ = resolve_models(models)
    options = CallOptions(max_tokens=max_tokens, json_mode=json_mode)
    answers: list[Answer] = []
    for name, path in usable.items():
        with model_client(name, path) as client:
            for item in bar(items, desc=f"{name} grounded", unit="q", disable=not progress):
                answers += answer_item(client, name, item, options)
    return answers


def fallback_answers(frame: pd.DataFrame) -> list[Answer]:
    """The fallback branch's answers of notebook 04's `answers` table, with their admitted hits
    (fragment ids) to be attached as optional citations. Nothing was offered to the model. The
    server's fixed "no usable answer" text (an unparsed reply) is no claim of the model's, and a
    failed call (branch `error`, status `llm_error`) is no answer at all."""
    keep = (frame["branch"] == "fallback") & (frame["status"] != MODEL_ERROR)
    rows = frame[keep].to_dict("records")
    ids = {int(i) for r in rows for i in str(r["admitted_ids"]).split()}
    with connect() as conn:
        texts = fragment_texts(conn, ids)
    return [
        Answer(
            model=r["model"],
            format="fallback",
            set=r["set"],
            qid=r["qid"],
            language=r["language"],
            text="" if r["answer"] in NO_ANSWER.values() else r["answer"],
            offered={},
            status=r["status"],
            attached={
                f"A{n}": texts[int(i)] for n, i in enumerate(str(r["admitted_ids"]).split(), 1)
            },
        )
        for r in rows
    ]
