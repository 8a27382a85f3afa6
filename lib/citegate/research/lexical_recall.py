"""The lexical lane's gold recall at the demo corpora's real size, with and without a budget.

`citegate lexical-recall` runs the lexical lane alone (depth `lane_k`) for every answerable
question of each set, in the set's own corpus build on the project database, once per budget
(0: every match ranked, the lane as it was), and reports per set and language the share of
questions whose gold fragment the lane returns (Wilson 95% interval), its overlap@k with the
lane without a budget, the postings the tiers rank and the lane's p50 latency. A budget is a
collection setting (`lexical_budget`), so this is the number to read before a config sets one.
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
) -> list[dict[str, Any]]:
    """One row per (set, language incl. 'all', budget): questions, recall with its interval,
    overlap@k with budget 0, mean postings ranked, p50 ms."""
    rows: list[dict[str, Any]] = []
    for name in sets:
        qset = load_set(name)
        gold = resolve_gold(conn, qset, embedder_id)
        qs = [q for q in qset.questions if q.label == "answerable" and gold.get(q.id)]
        found: dict[int, list[set[int]]] = {}
        per: dict[int, dict[str, list[float]]] = {}
        for budget in budgets:
            hits, ms, postings = [], [], []
            for q in tqdm(qs, desc=f"lexical {name} budget {budget}", unit="q"):
                clock = time.perf_counter()
                got = lanes.lexical(conn, q.text, embedder_id, [qset.corpus], k, budget)
                ms.append((time.perf_counter() - clock) * 1000)
                hits.append({h.fragment_id for h in got})
                (tier,) = lanes.lexical_tiers(
                    conn, [q.text], [k], embedder_id, [qset.corpus], budget
                )
                postings.append(float(tier.postings) if tier.tiered else np.nan)
            found[budget] = hits
            per[budget] = {"ms": ms, "postings": postings}
        base = found[budgets[0]]
        for lang in ["all", *sorted({q.language for q in qs})]:
            idx = [i for i, q in enumerate(qs) if lang in ("all", q.language)]
            for budget in budgets:
                ok = [bool(found[budget][i] & set(gold[qs[i].id])) for i in idx]
                rate, lo, hi = rate_ci_or_nan(ok)
                overlap = [len(found[budget][i] & base[i]) / len(base[i]) for i in idx if base[i]]
                rows.append(
                    {
                        "set": name,
                        "language": lang,
                        "budget": budget,
                        "questions": len(idx),
                        "recall": rate,
                        "ci_low": lo,
                        "ci_high": hi,
                        "overlap": float(np.mean(overlap)) if overlap else np.nan,
                        "postings": float(np.nanmean([per[budget]["postings"][i] for i in idx]))
                        if budget
                        else np.nan,
                        "p50_ms": float(np.median([per[budget]["ms"][i] for i in idx])),
                    }
                )
    return rows


def render(rows: Sequence[dict[str, Any]], k: int) -> str:
    """The rows as a Markdown table."""
    lines = [
        f"Lexical lane alone, depth {k}: gold recall [Wilson 95%], overlap@{k} with budget 0, "
        "mean postings ranked, p50 ms",
        "",
        "| set | language | budget | questions | gold recall | overlap | postings | p50 ms |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        post = "every match" if not r["budget"] else f"{r['postings']:.0f}"
        lines.append(
            f"| {r['set']} | {r['language']} | {r['budget']} | {r['questions']} | "
            f"{r['recall']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['overlap']:.3f} | "
            f"{post} | {r['p50_ms']:.1f} |"
        )
    return "\n".join(lines)
