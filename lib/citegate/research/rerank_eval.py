"""Compare rerankers on the same candidate pools: nDCG@10 and MRR of the pool's order, and each
reranker's throughput measured in the same run.

`python -m citegate.research.rerank_eval [--sets gita xquad] [--splits test tune] [--limit 300]
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

import argparse
import math
import sys
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from citegate.models import ltr
from citegate.models.rerank import CachedReranker, CosineReranker, Reranker, make_reranker

K = 10


def _ndcg_one(ranked: Sequence[int], gold: Collection[int], k: int = K) -> float:
    """Binary-relevance nDCG@k of one list with a log2 discount; the ideal puts every gold first."""
    gold = set(gold)
    head = list(dict.fromkeys(ranked[:k]))
    dcg = sum(1.0 / math.log2(i + 2) for i, f in enumerate(head) if f in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal


def _ndcg_at_k(
    ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]], k: int = K
) -> float:
    """Mean nDCG@k over the questions with gold (NaN when none)."""
    vals = [_ndcg_one(r, g, k) for r, g in zip(ranked_ids, gold, strict=True) if len(g)]
    return sum(vals) / len(vals) if vals else math.nan


def _mrr(ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]]) -> float:
    """Mean reciprocal rank of the first gold id (0 when absent) over the questions with gold."""
    vals = []
    for ranked, g in zip(ranked_ids, gold, strict=True):
        if len(g):
            g = set(g)
            vals.append(next((1.0 / i for i, f in enumerate(ranked, 1) if f in g), 0.0))
    return sum(vals) / len(vals) if vals else math.nan


def metric_functions() -> tuple[Callable[..., float], Callable[..., float], str]:
    """(ndcg_at_k, mrr, source), both over lists of questions (`ranked_ids`: one ranked id list
    per question, `gold`: one id collection per question): `citegate.evaluation.metrics` when it exists,
    else the private helpers (same definitions)."""
    try:
        from citegate.evaluation.metrics import mrr, ndcg_at_k
    except ImportError:
        return _ndcg_at_k, _mrr, "citegate.research.rerank_eval"
    return ndcg_at_k, mrr, "citegate.evaluation.metrics"


def inner_reranker(spec: str | Reranker) -> Reranker:
    """The uncached reranker a name or object stands for (`none`, `ltr/<name>`, ...)."""
    if not isinstance(spec, str):
        return spec.inner if isinstance(spec, CachedReranker) else spec
    if spec == "none":
        return CosineReranker()
    if spec.startswith("ltr/"):
        return ltr.load_ltr(spec)
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
    rerankers: Sequence[str | Reranker] = ("none", f"ltr/{ltr.DEFAULT_NAME}"),
    split: str | Sequence[str] = "test",
    limit: int | None = 300,
    embedder: Any = None,
    *,
    store: Any = None,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per (split, reranker): questions, pairs, gold-in-pool share, the oracle nDCG@10 of
    the pool, nDCG@10, MRR, pairs/s and the seconds spent scoring."""
    from citegate.models.embed import default_embedder

    emb = embedder or default_embedder()
    ndcg_at_k, mrr, _ = metric_functions()
    scorers = [inner_reranker(r) for r in rerankers]
    splits = (split,) if isinstance(split, str) else tuple(split)
    rows = []
    for sp in splits:
        _, questions, gold, pools = ltr.set_pools(
            conn, set_name, sp, limit, emb, store=store, progress=progress
        )
        n_pairs = sum(len(pools[q.id]) for q in questions)
        golds = [set(gold[q.id]) for q in questions]
        in_pool = [
            bool({c.fragment_id for c in pools[q.id]} & g)
            for q, g in zip(questions, golds, strict=True)
        ]
        oracle = [
            sorted((c.fragment_id for c in pools[q.id]), key=lambda f, g=g: f not in g)
            for q, g in zip(questions, golds, strict=True)
        ]
        for scorer in scorers:
            ltr.clear_caches()
            spent = 0.0
            ranked = []
            for q in tqdm(
                questions, desc=f"{set_name}/{sp} {scorer.id}", unit="q", disable=not progress
            ):
                pool = pools[q.id]
                clock = time.perf_counter()
                scores = scorer.score(q.text, pool) if pool else []
                spent += time.perf_counter() - clock
                ranked.append(rank_ids(pool, scores))
            rows.append(
                {
                    "set": set_name,
                    "split": sp,
                    "reranker": scorer.id,
                    "questions": len(questions),
                    "pairs": n_pairs,
                    "gold_in_pool": sum(in_pool) / len(questions) if questions else math.nan,
                    "ndcg@10_oracle": ndcg_at_k(oracle, golds, K) if questions else math.nan,
                    "ndcg@10": ndcg_at_k(ranked, golds, K) if questions else math.nan,
                    "mrr": mrr(ranked, golds) if questions else math.nan,
                    "pairs_per_s": n_pairs / spent if spent > 0 else math.inf,
                    "score_s": spent,
                }
            )
    return pd.DataFrame(rows)


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison on the project database and print it as a Markdown table."""
    p = argparse.ArgumentParser(prog="python -m citegate.research.rerank_eval", description=__doc__)
    p.add_argument("--sets", nargs="+", default=list(ltr.DEFAULT_SETS))
    p.add_argument("--splits", nargs="+", default=["test", "tune"], choices=["test", "tune"])
    p.add_argument("--limit", type=int, default=300, help="questions per set and split")
    p.add_argument(
        "--rerankers", nargs="+", default=["none", f"ltr/{ltr.DEFAULT_NAME}"], help="names"
    )
    args = p.parse_args(argv)

    from citegate.core.errors import CitegateError
    from citegate.models.embed import default_embedder
    from citegate.store.db import connect

    emb = default_embedder()
    frames = []
    clock = time.perf_counter()
    try:
        with connect() as conn:
            for name in args.sets:
                frames.append(
                    compare_rerankers(conn, name, args.rerankers, args.splits, args.limit, emb)
                )
    except CitegateError as exc:
        print(f"rerank_eval: error: {exc}", file=sys.stderr)
        return 2
    df = pd.concat(frames, ignore_index=True)
    print(to_markdown(df))
    print(
        f"\n{metric_functions()[2]} metrics; embedder {emb.id}; "
        f"{time.perf_counter() - clock:.1f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
