"""Running the follow-up study: every follow-up through `rewrite_query` for each model, every
arm's query searched through the cached retrieval pass and scored against the gold verse.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.errors import MAX_MODEL_ERROR_SHARE
from citegate.core.progress import bar
from citegate.corpus.questions import QuestionSet, resolve_gold
from citegate.models.embed import default_embedder
from citegate.pipeline.rewrite import (
    rewrite_query,
)
from citegate.research.models import model_client, resolve_models
from citegate.research.probe import probe_search
from citegate.store.db import connect
from citegate.store.production import load_reranker
from citegate.studies.prefloor_recall.followup.compute import (
    REWRITE_COLUMNS,
    Conversation,
    FollowupStudy,
    arm_queries,
    candidate_conversations,
    check_model_errors,
    rewrite_row,
    sample_conversations,
    score_hits,
    yield_table,
)


def run_rewrites(
    conversations: Sequence[Conversation],
    models: Sequence[str],
    *,
    max_tokens: int = 64,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every follow-up through `rewrite_query` (history = the first user turn) for every model
    that is installed. Returns the rewrites (one row each) and the models table (used or skipped,
    with why, wall seconds and call counts)."""
    usable, skipped = resolve_models(models)
    rows: list[dict[str, Any]] = []
    info: list[dict[str, Any]] = [{"model": m, "used": False, "why": w} for m, w in skipped.items()]
    for name, path in usable.items():
        clock = time.perf_counter()
        with model_client(name, path) as client:
            for conv in bar(
                conversations, desc=f"rewrite {name}", unit="conv", disable=not progress
            ):
                res = rewrite_query(
                    client, conv.history, conv.followup.text, turn_index=1, max_tokens=max_tokens
                )
                rows.append(rewrite_row(conv, name, res))
            usage = {k: v for k, v in client.usage.as_dict().items() if k != "attempts"}
            info.append(
                {
                    "model": name,
                    "used": True,
                    "why": f"{client.model} ({client.kind})",
                    "wall_s": time.perf_counter() - clock,
                    **usage,
                }
            )
    return pd.DataFrame(rows, columns=list(REWRITE_COLUMNS)), pd.DataFrame(info)


def search_arms(
    conversations: Sequence[Conversation],
    rewrites: pd.DataFrame,
    qset: QuestionSet,
    corpus: str,
    cfg: PipelineConfig,
    *,
    progress: bool = False,
) -> pd.DataFrame:
    """Search every arm's query on `corpus` through the cached retrieval pass (`probe_search`,
    the production retrieve + replay under `cfg`) and score it against the follow-up's gold
    fragments (`resolve_gold`). One row per (conversation, arm, model)."""
    queries = arm_queries(conversations, rewrites)
    emb = default_embedder()
    cfg = cfg.replace(embedder=emb.id)
    rr = load_reranker(cfg)
    followups = QuestionSet(qset.name, qset.corpus, tuple(c.followup for c in conversations))
    with connect() as conn:
        by_qid = resolve_gold(conn, followups, emb.id)
        search = probe_search(conn, corpus, cfg, emb, rr)
        texts = list(dict.fromkeys(queries["query"]))
        notes = {
            t: [n.fragment_id for n in search(t)]
            for t in bar(texts, desc="search arms", unit="q", disable=not progress)
        }
    gold = {c.id: by_qid[c.followup.id] for c in conversations}
    return score_hits(queries, notes, gold)


def run_study(
    qset: QuestionSet,
    corpus: str,
    cfg: PipelineConfig,
    *,
    languages: Sequence[str],
    limit: int,
    models: Sequence[str],
    split: str | None = None,
    max_tokens: int = 64,
    seed: int = 0,
    progress: bool = True,
    max_error_share: float = MAX_MODEL_ERROR_SHARE,
) -> FollowupStudy:
    """Build and sample the conversations of `qset` (within `split`; "all"/None = every split),
    rewrite every follow-up with each model, search the three arms and score them. Raises
    `ModelFailure` before any search when a model's failed rewrite calls exceed
    `max_error_share`."""
    qs = [q for q in qset.questions if split in (None, "all", q.split)]
    available = candidate_conversations(qs, seed)
    convs = sample_conversations(available, languages, limit, seed)
    yields = yield_table(qs, available, convs, languages)
    rewrites, model_info = run_rewrites(convs, models, max_tokens=max_tokens, progress=progress)
    check_model_errors(rewrites, max_error_share)
    results = search_arms(convs, rewrites, qset, corpus, cfg, progress=progress)
    return FollowupStudy(yields, convs, rewrites, model_info, results)
