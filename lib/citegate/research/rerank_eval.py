"""Compare rerankers on the same candidate pools: nDCG@10 and MRR of the pool's order, and each
reranker's throughput measured in the same run.

`citegate rerank-eval [--sets gita xquad] [--splits test tune] [--limit 300]
[--rerankers none ltr/default]` prints a Markdown table.

For each question (answerable, of the given split, at most `limit` per set and split, picked by id
hash as in training) the cosine trace is collected (or read from the trace cache), its rerank pool
(every candidate the ANN lanes found) gets its texts from the database, each reranker scores the
whole pool, and the pool is ranked by that score (ties: cosine, then fragment id). Gold = the
question's gold fragments (`resolve_gold`); a question whose gold is not in the pool scores 0.
The LTR is trained on the tune split, so `test` is its honest number and `tune` shows overfitting.

Throughput (pairs/s) times the inner reranker's `score()` over all pools, no rerank cache, feature
caches cleared first, so it is what a cold serving call costs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from citegate.evaluation.metrics import mrr, ndcg_at_k
from citegate.models.embed import default_embedder
from citegate.models.ltr.features import clear_caches
from citegate.models.ltr.model import DEFAULT_NAME, load_ltr
from citegate.models.rerank import CachedReranker, CosineReranker, Reranker, make_reranker
from citegate.research.ltr_training import DEFAULT_SETS, set_pools
from citegate.store.db import connect

K = 10
SPLITS = ("test", "tune")
DEFAULT_LIMIT = 300
DEFAULT_RERANKERS = ("none", f"ltr/{DEFAULT_NAME}")
METRICS_MODULE = "citegate.evaluation.metrics"  # named in the report's last line


def inner_reranker(spec: str | Reranker) -> Reranker:
    """The uncached reranker a name or object stands for (`none`, `ltr/<name>`, ...)."""
    if not isinstance(spec, str):
        return spec.inner if isinstance(spec, CachedReranker) else spec
    if spec == "none":
        return CosineReranker()
    if spec.startswith("ltr/"):
        return load_ltr(spec)
    r = make_reranker(spec)
    return r.inner if isinstance(r, CachedReranker) else r


def rank_ids(pool: Sequence[Any], scores: Sequence[float]) -> list[int]:
    """Fragment ids by score, then cosine, then id (the pipeline's `rank_key` without pinning)."""
    order = sorted(
        range(len(pool)), key=lambda i: (-scores[i], -pool[i].score, pool[i].fragment_id)
    )
    return [pool[i].fragment_id for i in order]


def compare_rerankers(
    conn: Any,
    set_name: str,
    rerankers: Sequence[str | Reranker] = DEFAULT_RERANKERS,
    split: str | Sequence[str] = "test",
    limit: int | None = DEFAULT_LIMIT,
    embedder: Any = None,
    *,
    store: Any = None,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per (split, reranker): questions, pairs, gold-in-pool share, the oracle nDCG@10 of
    the pool, nDCG@10, MRR, pairs/s and the seconds spent scoring."""
    emb = embedder or default_embedder()
    scorers = [inner_reranker(r) for r in rerankers]
    splits = (split,) if isinstance(split, str) else tuple(split)
    rows = []
    for sp in splits:
        _, questions, gold, pools = set_pools(
            conn, set_name, sp, limit, emb, store=store, progress=progress
        )
        golds = [set(gold[q.id]) for q in questions]
        pool_cols = _pool_columns(questions, golds, pools)
        for scorer in scorers:
            ranked, spent = _score_pools(scorer, questions, pools, f"{set_name}/{sp}", progress)
            rows.append(
                {
                    "set": set_name,
                    "split": sp,
                    "reranker": scorer.id,
                    **pool_cols,
                    **_ranking_columns(golds, ranked, pool_cols["pairs"], spent),
                }
            )
    return pd.DataFrame(rows)


def _pool_columns(
    questions: Sequence[Any], golds: Sequence[set[int]], pools: dict[str, list[Any]]
) -> dict[str, Any]:
    """Columns that depend on the pools only: questions, pairs, gold-in-pool share, and the
    oracle order (every gold id of the pool first) used for the oracle nDCG@10."""
    in_pool = [
        bool({c.fragment_id for c in pools[q.id]} & g)
        for q, g in zip(questions, golds, strict=True)
    ]
    oracle = [
        sorted((c.fragment_id for c in pools[q.id]), key=lambda f, g=g: f not in g)
        for q, g in zip(questions, golds, strict=True)
    ]
    return {
        "questions": len(questions),
        "pairs": sum(len(pools[q.id]) for q in questions),
        "gold_in_pool": sum(in_pool) / len(questions) if questions else math.nan,
        "ndcg@10_oracle": ndcg_at_k(oracle, golds, K) if questions else math.nan,
    }


def _score_pools(
    scorer: Reranker,
    questions: Sequence[Any],
    pools: dict[str, list[Any]],
    label: str,
    progress: bool,
) -> tuple[list[list[int]], float]:
    """Each question's pool ranked by `scorer` (feature caches cleared first, so the time is a
    cold serving call's) and the seconds spent inside `score()`."""
    clear_caches()
    spent = 0.0
    ranked = []
    for q in tqdm(questions, desc=f"{label} {scorer.id}", unit="q", disable=not progress):
        pool = pools[q.id]
        clock = time.perf_counter()
        scores = scorer.score(q.text, pool) if pool else []
        spent += time.perf_counter() - clock
        ranked.append(rank_ids(pool, scores))
    return ranked, spent


def _ranking_columns(
    golds: Sequence[set[int]], ranked: list[list[int]], pairs: int, spent: float
) -> dict[str, float]:
    """One reranker's nDCG@10, MRR and throughput over the ranked pools."""
    return {
        "ndcg@10": ndcg_at_k(ranked, golds, K) if golds else math.nan,
        "mrr": mrr(ranked, golds) if golds else math.nan,
        "pairs_per_s": pairs / spent if spent > 0 else math.inf,
        "score_s": spent,
    }


def to_markdown(df: pd.DataFrame) -> str:
    """A Markdown table (no `tabulate` needed)."""
    fmt = {
        "gold_in_pool": "{:.3f}",
        "ndcg@10_oracle": "{:.4f}",
        "ndcg@10": "{:.4f}",
        "mrr": "{:.4f}",
        "pairs_per_s": "{:,.0f}",
        "score_s": "{:.2f}",
    }
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in df.iterrows():
        cells = [fmt.get(c, "{}").format(row[c]) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(
    sets: Sequence[str] = DEFAULT_SETS,
    splits: Sequence[str] = SPLITS,
    limit: int | None = DEFAULT_LIMIT,
    rerankers: Sequence[str] = DEFAULT_RERANKERS,
) -> str:
    """The comparison on the project database as the text `citegate rerank-eval` prints: a
    Markdown table, a blank line, and a line naming the metrics module, the embedder and the
    seconds taken.
    Raises CitegateError (no database, untrained model, ...)."""
    emb = default_embedder()
    frames = []
    clock = time.perf_counter()
    with connect() as conn:
        for name in sets:
            frames.append(compare_rerankers(conn, name, rerankers, splits, limit, emb))
    df = pd.concat(frames, ignore_index=True)
    return (
        f"{to_markdown(df)}\n"
        f"\n{METRICS_MODULE} metrics; embedder {emb.id}; "
        f"{time.perf_counter() - clock:.1f} s in all"
    )
