"""The bench's answer part: what composing and checking add to a warm retrieve.

For each question: the warm retrieve, the extractive composer over its notes, then the claim
check (`turn.checked`) of that answer, both with production's answer settings (support mode and
threshold). The embedding cache is fresh for this part, so the claims
(and the notes as the support scorer embeds them) are embedded per question, as for a question
nobody asked before; the retrieve's question embedding comes from the earlier parts' cache, as
it would from the first pass of a live turn. Reported: each step's p50/p95, and the p50 of
retrieve + compose + check over retrieve + compose (`check_over_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.config_files import production
from citegate.models.embed import CachedEmbedder, Embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline.extractive import extract
from citegate.pipeline.retrieve import retrieve
from citegate.pipeline.turn import checked
from citegate.research.bench.common import pcts, ratio, timed


def bench_answer(
    conn: psycopg.Connection,
    questions: Sequence[str],
    cfg: PipelineConfig,
    model: Embedder,
    warm: Embedder,
    tmp: Path,
) -> dict[str, Any]:
    """Retrieve (on `warm`, the questions' embeddings cached), compose and check each question;
    the composer and the check embed on a fresh cache (`tmp`), as a new answer would."""
    fresh = CachedEmbedder(model, tmp / "answer.sqlite")
    cfg = cfg.replace(**answer_settings(production()))  # production's composer and claim check
    rr = CosineReranker()
    retrieve_s, compose_s, check_s, claims = [], [], [], []
    for q in questions:
        res, t_r = timed(lambda q=q: retrieve(conn, q, cfg, warm, rr))
        composed, t_c = timed(
            lambda q=q, res=res: extract(
                fresh, q, res.notes, sentences=cfg.extract_sentences, policy=cfg.extract_policy
            )
        )
        check, t_k = timed(lambda c=composed: checked(c.text, c.offered, cfg, fresh))
        retrieve_s.append(t_r)
        compose_s.append(t_c)
        check_s.append(t_k)
        claims.append(len(check.verdicts))
    without = np.add(retrieve_s, compose_s)
    with_check = without + np.asarray(check_s)
    return {
        "questions": len(questions),
        "claims_per_answer": float(np.mean(claims)) if claims else float("nan"),
        "retrieve": pcts(retrieve_s),
        "compose": pcts(compose_s),
        "check": pcts(check_s),
        "answer": pcts(list(with_check)),
        "check_over_answer": ratio(
            float(np.median(with_check)) if len(with_check) else np.nan,
            float(np.median(without)) if len(without) else np.nan,
        ),
    }


ANSWER_KEYS = (
    "extract_sentences",
    "extract_policy",
    "support_mode",
    "support_threshold",
    "unsupported_claims",
)


def answer_settings(cfg: PipelineConfig) -> dict[str, Any]:
    """The answer-stage settings of a config (what the bench's answer part takes from
    production, whatever config its retrieval parts run)."""
    return {k: getattr(cfg, k) for k in ANSWER_KEYS}


def answer_rows(res: dict[str, Any]) -> list[list[Any]]:
    """The answer part as report rows: step, p50, p95."""
    a = res["answer_stage"]
    steps = [
        ("retrieve (warm)", a["retrieve"]),
        ("extractive composer", a["compose"]),
        ("claim check", a["check"]),
        ("all three", a["answer"]),
    ]
    rows = [[name, s["p50_ms"], s["p95_ms"]] for name, s in steps]
    rows.append(["p50 with the check / without", a["check_over_answer"], ""])
    rows.append(["claims per answer (mean)", a["claims_per_answer"], ""])
    return rows


__all__ = ["answer_rows", "bench_answer"]
