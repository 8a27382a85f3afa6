"""Notebook 03's numbers: gate signals per question, AUROCs, operating points, recommendations.

Pure functions of a loaded `Study` or of the tables made from it (no database, model or file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.evaluation import metrics as M
from citegate.pipeline.arms import rrf_cut
from citegate.research.study import Study

SIGNALS = (
    "max_cosine",
    "max_rerank",
    "top3_mean_cosine",
    "margin_top1_top2",
    "max_verse_cosine",
    "rrf_fusion_max",
    "rrf_rerank_max",
)
DESIGN_POINTS = {"bail_out_score": 0.40, "sufficient_score": 0.55, "good_enough_score": 0.65}


def signals(study: Study, cfg: PipelineConfig) -> pd.DataFrame:
    """One row per question: label, split, language, the candidate gate signals, gate decision."""
    rows = []
    for name, s in study.sets.items():
        results = s.replay_all(cfg)
        for q in s.questions:
            res = results[q.id]
            cos = sorted((c.score for c in res.notes), reverse=True) or [0.0]
            rr = [c.rerank_score if c.rerank_score is not None else c.score for c in res.notes]
            verses = [c.score for c in res.notes if c.kind == "verse"]
            rows.append(
                {
                    "set": name,
                    "qid": q.id,
                    "group": q.group,
                    "label": q.label,
                    "split": q.split,
                    "language": q.language,
                    "max_cosine": res.max_score,
                    "max_rerank": max(rr, default=0.0),
                    "top3_mean_cosine": float(np.mean(cos[:3])),
                    "margin_top1_top2": cos[0] - (cos[1] if len(cos) > 1 else 0.0),
                    "max_verse_cosine": max(verses, default=0.0),
                    "decision": res.decision,
                    "rounds": len(res.rounds),
                    **arm_signals(s.traces[q.id], cfg),
                }
            )
    return pd.DataFrame(rows)


def arm_signals(trace: Any, cfg: PipelineConfig) -> dict[str, float]:
    """The RRF arm's gate signals on the same trace: max fusion score and max rerank score of its
    top-5 notes (the two scales the two-scale gate switches between)."""
    reranked = trace.reranker_id != "none"
    notes, _, fused = rrf_cut(trace.candidates, cfg.replace(arm="rrf_hybrid"), reranked)
    return {
        "rrf_fusion_max": max((fused[c.fragment_id] for c in notes), default=0.0),
        "rrf_rerank_max": max((c.rerank_score or 0.0 for c in notes), default=0.0),
    }


def two_scale_sweep(frame: pd.DataFrame, thresholds: Sequence[float]) -> pd.DataFrame:
    """Answer rates when ONE threshold is applied to both scales: the reranker's (sigmoid) and the
    fusion score's. Shows why the related design needs two thresholds."""
    rows = []
    for t in thresholds:
        for scale, col in (
            ("reranker scale", "rrf_rerank_max"),
            ("fusion scale", "rrf_fusion_max"),
        ):
            for label, g in frame.groupby("label"):
                rows.append(
                    {
                        "threshold": t,
                        "scale": scale,
                        "label": label,
                        "answer_rate": float((g[col] >= t).mean()),
                    }
                )
    return pd.DataFrame(rows)


def contrast(frame: pd.DataFrame, negative: str) -> pd.DataFrame:
    """Answerable (label 1) against one kind of negative (label 0)."""
    sub = frame[frame["label"].isin(["answerable", negative])].copy()
    sub["y"] = (sub["label"] == "answerable").astype(int)
    return sub


def auroc_table(frame: pd.DataFrame, negatives: Sequence[str], n_boot: int = 500) -> pd.DataFrame:
    """AUROC with a 95% CI (questions of one verse/article resampled together) per signal."""
    rows = []
    for neg in negatives:
        sub = contrast(frame, neg)
        if sub["y"].nunique() < 2:
            continue
        for sig in SIGNALS:
            ci = M.auroc_ci(sub[sig], sub["y"], n_boot=n_boot, groups=sub["group"])
            rows.append(
                {
                    "negatives": neg,
                    "signal": sig,
                    "AUROC": ci.auroc,
                    "CI low": ci.lower,
                    "CI high": ci.upper,
                    "answerable": ci.n_pos,
                    "negative": ci.n_neg,
                }
            )
    return pd.DataFrame(rows)


def operating_points(
    frame: pd.DataFrame,
    negative: str,
    thresholds: dict[str, float],
) -> pd.DataFrame:
    """Max-cosine operating points of named thresholds plus the full production gate, against
    one kind of negative (named in the `negatives` column)."""
    sub = contrast(frame, negative)
    rows = [
        {"point": f"{k} = {v:.3f}", **M.operating_point(sub["max_cosine"], sub["y"], v)}
        for k, v in thresholds.items()
    ]
    for name, answered in (
        ("full gate: answers (good enough)", sub["decision"] == "answer"),
        ("full gate: does not bail out", sub["decision"] != "insufficient"),
    ):
        rows.append({"point": name, **M.operating_point(answered.astype(float), sub["y"], 0.5)})
    return pd.DataFrame(rows).assign(negatives=negative)


def recommend(
    frame: pd.DataFrame, negative: str, target_fpr: float, strict_fpr: float, min_recall: float
) -> dict[str, float]:
    """Gate thresholds from the TUNE split: sufficient at the target false-answer rate, good enough
    at a stricter one, bail-out where `min_recall` of answerable questions stay above it."""
    tune = contrast(frame[frame["split"] == "tune"], negative)
    pos = tune.loc[tune["y"] == 1, "max_cosine"]
    sufficient = min(M.threshold_for_fpr(tune["max_cosine"], tune["y"], target_fpr), 1.0)
    good = max(M.threshold_for_fpr(tune["max_cosine"], tune["y"], strict_fpr), sufficient)
    bail = min(float(np.quantile(pos, 1 - min_recall)), sufficient)
    return {
        "bail_out_score": round(bail, 4),
        "sufficient_score": round(sufficient, 4),
        "good_enough_score": round(min(good, 1.0), 4),
    }


def test_report(
    frame: pd.DataFrame,
    negatives: Sequence[str],
    thresholds: dict[str, float],
) -> pd.DataFrame:
    """Operating points of the recommended thresholds on the TEST split, per kind of negative."""
    test = frame[frame["split"] == "test"]
    parts = [
        operating_points(test, neg, thresholds).assign(negatives=neg)
        for neg in negatives
        if contrast(test, neg)["y"].nunique() == 2
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def headline(
    aurocs: pd.DataFrame,
    test_points: pd.DataFrame,
    rec: dict[str, float],
) -> dict[str, float]:
    """MLflow metrics: AUROCs of max cosine and the test-split rates of the recommendation."""
    out = {f"rec_{k}": v for k, v in rec.items()}
    for r in aurocs[aurocs["signal"] == "max_cosine"].to_dict("records"):
        out[f"auroc_max_cosine_vs_{r['negatives']}"] = r["AUROC"]
        out[f"auroc_max_cosine_vs_{r['negatives']}_ci_low"] = r["CI low"]
    for r in test_points.to_dict("records"):
        if r["point"].startswith("sufficient_score"):
            out[f"test_fpr_at_rec_sufficient_vs_{r['negatives']}"] = r["fpr"]
            out[f"test_tpr_at_rec_sufficient_vs_{r['negatives']}"] = r["tpr"]
    return {k: float(v) for k, v in out.items() if np.isfinite(v)}


def recommended_config(base: PipelineConfig, rec: dict[str, float]) -> PipelineConfig:
    """The production config with the recommended gate thresholds."""
    return base.replace(**rec)
