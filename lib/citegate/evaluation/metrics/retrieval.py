"""Retrieval metrics over ranked fragment ids against gold ids: hit rate, gold-address recall,
MRR and nDCG. Questions with empty gold (unanswerable) are skipped; NaN when none remain.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from citegate.evaluation.metrics.validation import _check_k, _check_paired, _mean_or_nan


def _head(ranked: Sequence[int], k: int | None) -> list[int]:
    """The first k ids (all of them when k is None), duplicates dropped keeping the first."""
    head = list(ranked) if k is None else list(ranked)[:k]
    return list(dict.fromkeys(head))


def _first_hit(ranked: Sequence[int], gold: Collection[int], k: int | None) -> int | None:
    """0-based rank of the first gold id among the first k, or None."""
    gold_set = set(gold)
    for i, fid in enumerate(list(ranked) if k is None else list(ranked)[:k]):
        if fid in gold_set:
            return i
    return None


def _per_answerable(
    ranked_ids: Sequence[Sequence[int]],
    gold: Sequence[Any],
    k: int | None,
    one: Callable[[Sequence[int], Any, Any], float],
) -> float:
    """Mean of `one(ranked, gold, k)` over the questions whose gold is not empty (NaN when none
    is), after checking that the lists pair up and that k is valid: the frame of every metric
    here."""
    _check_paired(ranked_ids, gold)
    _check_k(k)
    return _mean_or_nan([one(r, g, k) for r, g in zip(ranked_ids, gold, strict=True) if len(g)])


def _hit(ranked: Sequence[int], gold: Collection[int], k: int | None) -> float:
    """1.0 when a gold id is among the first k, else 0.0."""
    return float(_first_hit(ranked, gold, k) is not None)


def _address_share(
    ranked: Sequence[int], addresses: Sequence[Collection[int]], k: int | None
) -> float:
    """Share of the gold addresses with any of their fragment ids among the first k."""
    head = set(_head(ranked, k))
    return float(np.mean([bool(head & set(a)) for a in addresses]))


def _reciprocal_rank(ranked: Sequence[int], gold: Collection[int], k: int | None) -> float:
    """1 / (1 + rank of the first gold id among the first k), 0.0 when there is none."""
    rank = _first_hit(ranked, gold, k)
    return 0.0 if rank is None else 1.0 / (rank + 1)


def _ndcg_one(ranked: Sequence[int], gold: Collection[int], k: int) -> float:
    """nDCG@k of one ranked list with binary relevance."""
    gold_set = set(gold)
    head = _head(ranked, k)
    dcg = sum(1.0 / np.log2(i + 2) for i, fid in enumerate(head) if fid in gold_set)
    idcg = sum(1.0 / np.log2(i + 2) for i in range(min(len(gold_set), k)))
    return float(dcg / idcg)


def recall_at_k(
    ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]], k: int | None = None
) -> float:
    """Hit rate: share of questions with at least one gold id among the first k ranked ids.

    Why: the answer can cite a trusted source as soon as one gold fragment is retrieved.
    Questions with empty gold (unanswerable) are skipped; NaN when none remain.
    ``k=None`` looks at the whole ranked list.
    """
    return _per_answerable(ranked_ids, gold, k, _hit)


def gold_recall(
    ranked_ids: Sequence[Sequence[int]],
    gold_groups: Sequence[Sequence[Collection[int]]],
    k: int | None = None,
) -> float:
    """Share of gold addresses reached in the first k, averaged over questions.

    Why: a question may need several sources; each gold *address* is a set of fragment ids
    (several fragments carry one address) and counts as found when any of them is retrieved.
    Questions without addresses are skipped (NaN when none remain); an address with no fragment
    ids can never be found and counts as missed.
    """
    return _per_answerable(ranked_ids, gold_groups, k, _address_share)


def mrr(
    ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]], k: int | None = None
) -> float:
    """Mean reciprocal rank of the first gold id within the first k (0 when absent).

    Why: rewards putting a citable fragment near the top, not merely somewhere in the list.
    Questions with empty gold are skipped; NaN when none remain.
    """
    return _per_answerable(ranked_ids, gold, k, _reciprocal_rank)


def ndcg_at_k(
    ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]], k: int = 10
) -> float:
    """Mean nDCG@k with binary relevance and a log2 discount.

    Why: graded view of ranking quality when a question has several gold fragments. The ideal
    DCG puts ``min(|gold|, k)`` relevant ids first; a repeated id counts once (its first rank).
    Questions with empty gold are skipped; NaN when none remain.
    """
    return _per_answerable(ranked_ids, gold, k, _ndcg_one)


__all__ = ["gold_recall", "mrr", "ndcg_at_k", "recall_at_k"]
