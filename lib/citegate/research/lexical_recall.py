"""The lexical lane's gold recall at the demo corpora's real size, with and without a budget.

`citegate lexical-recall` runs the lexical lane alone (depth `lane_k`) for every answerable
question of each set, in the set's own corpus build on the project database, once per budget
(0: every match ranked, the lane as it was), and reports per set and language the share of
questions whose gold fragment the lane returns (Wilson 95% interval), its overlap@k with the
lane without a budget, the postings the tiers rank and the lane's p50 latency. A budget is a
collection setting (`lexical_budget`), so this is the number to read before a config sets one.
With `bm25` the BM25 backend (`lexical_backend: bm25`, `store.bm25`) is measured the same way,
one more row per set and language, its overlap taken with the first budget's lane.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from tqdm.auto import tqdm

from citegate.corpus.questions import load_set, resolve_gold
from citegate.evaluation.metrics.operation import rate_ci_or_nan
from citegate.pipeline import lanes

DEFAULT_SETS = ("gita", "xquad")
DEFAULT_BUDGETS = (0, 1024, 8192)


def measure(
    conn: psycopg.Connection,
    embedder_id: str,
    sets: Sequence[str] = DEFAULT_SETS,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    k: int = 40,
    bm25: bool = True,
) -> list[dict[str, Any]]:
    """One row per (set, language incl. 'all', budget or BM25): questions, recall with its
    interval, overlap@k with the first budget, mean postings ranked, p50 ms."""
    variants = [(b, "postgres") for b in budgets] + ([(0, "bm25")] if bm25 else [])
    rows: list[dict[str, Any]] = []
    for name in sets:
        qset = load_set(name)
        gold = resolve_gold(conn, qset, embedder_id)
        qs = [q for q in qset.questions if q.label == "answerable" and gold.get(q.id)]
        found: dict[tuple[int, str], list[set[int]]] = {}
        per: dict[tuple[int, str], dict[str, list[float]]] = {}
        for budget, backend in variants:
            hits, ms, postings = [], [], []
            label = "BM25" if backend == "bm25" else f"budget {budget}"
            for q in tqdm(qs, desc=f"lexical {name} {label}", unit="q"):
                clock = time.perf_counter()
                got = lanes.lexical(conn, q.text, embedder_id, [qset.corpus], k, budget, backend)
                ms.append((time.perf_counter() - clock) * 1000)
                hits.append({h.fragment_id for h in got})
                tiered = budget and backend == "postgres"
                (tier,) = lanes.lexical_tiers(
                    conn, [q.text], [k], embedder_id, [qset.corpus], budget if tiered else 0
                )
                postings.append(float(tier.postings) if tier.tiered else np.nan)
            found[budget, backend] = hits
            per[budget, backend] = {"ms": ms, "postings": postings}
        base = found[variants[0]]
        for lang in ["all", *sorted({q.language for q in qs})]:
            idx = [i for i, q in enumerate(qs) if lang in ("all", q.language)]
            for v in variants:
                budget, backend = v
                ok = [bool(found[v][i] & set(gold[qs[i].id])) for i in idx]
                rate, lo, hi = rate_ci_or_nan(ok)
                overlap = [len(found[v][i] & base[i]) / len(base[i]) for i in idx if base[i]]
                tiered = bool(budget) and backend == "postgres"
                rows.append(
                    {
                        "set": name,
                        "language": lang,
                        "backend": backend,
                        "budget": budget,
                        "questions": len(idx),
                        "recall": rate,
                        "ci_low": lo,
                        "ci_high": hi,
                        "overlap": float(np.mean(overlap)) if overlap else np.nan,
                        "postings": float(np.nanmean([per[v]["postings"][i] for i in idx]))
                        if tiered
                        else np.nan,
                        "p50_ms": float(np.median([per[v]["ms"][i] for i in idx])),
                    }
                )
    return rows


def render(rows: Sequence[dict[str, Any]], k: int) -> str:
    """The rows as a Markdown table."""
    lines = [
        f"Lexical lane alone, depth {k}: gold recall [Wilson 95%], overlap@{k} with the first "
        "row's lane, mean postings ranked, p50 ms; BM25: `lexical_backend: bm25`",
        "",
        "| set | language | budget | questions | gold recall | overlap | postings | p50 ms |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        bm = r.get("backend") == "bm25"
        post = (
            "top-k pruned" if bm else "every match" if not r["budget"] else f"{r['postings']:.0f}"
        )
        budget = "BM25" if bm else r["budget"]
        lines.append(
            f"| {r['set']} | {r['language']} | {budget} | {r['questions']} | "
            f"{r['recall']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['overlap']:.3f} | "
            f"{post} | {r['p50_ms']:.1f} |"
        )
    return "\n".join(lines)
