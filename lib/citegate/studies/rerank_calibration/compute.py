"""Notebook 02's numbers: rerank-stage pairs, and per score its ECE, AUROCs and threshold spread.

Pure functions of a loaded `Study` or of the pair table (no database, model or file).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.types import Step
from citegate.evaluation import metrics as M
from citegate.pipeline.cut import lane_view
from citegate.pipeline.fusion import fusion_scores
from citegate.research.study import Study

SCORES = ("cosine", "rerank", "rerank_minmax", "rerank_sigmoid", "cosine_minmax", "fusion")
TIE = 0.005  # balanced-accuracy points below which two scores' losses count as the same


def pairs(study: Study, cfg: PipelineConfig) -> pd.DataFrame:
    """(question, candidate) pairs that reach the rerank stage under `cfg`, labeled by gold."""
    rows = []
    for name, s in study.sets.items():
        results = s.replay_all(cfg)
        for q in s.questions:
            gold = set(s.gold.get(q.id, ()))
            if not gold:
                continue
            stage = results[q.id].stage
            # the pool as `cfg` sees it: a config that does not pin spelled-out verse names
            # never saw the candidates only the named lane found
            pool = lane_view(s.traces[q.id].candidates, cfg.pin_named_verses)
            round1 = [c for c in pool if c.round == 1]
            fused = fusion_scores(round1, cfg.replace(arm="rrf_hybrid"))
            for c in pool:
                if stage[c.fragment_id].step in (Step.TOP_K, Step.RESERVE, Step.DEDUP):
                    rows.append(
                        {
                            "set": name,
                            "qid": q.id,
                            "language": q.language,
                            "kind": c.kind,
                            "cosine": c.score,
                            "rerank": c.score if c.rerank_score is None else c.rerank_score,
                            "fusion": fused.get(c.fragment_id, 0.0),
                            "gold": int(c.fragment_id in gold),
                        }
                    )
    frame = pd.DataFrame(rows)
    frame["rerank_minmax"] = M.minmax_per_group(frame["rerank"], frame["qid"])
    frame["rerank_sigmoid"] = M.sigmoid_per_group(frame["rerank"], frame["qid"])
    frame["cosine_minmax"] = M.minmax_per_group(frame["cosine"], frame["qid"])
    return frame


def _with_both(frame: pd.DataFrame) -> pd.DataFrame:
    both = frame.groupby("qid")["gold"].transform(lambda g: 0 < g.sum() < len(g))
    return frame[both]


def score_table(frame: pd.DataFrame, n_boot: int = 300) -> pd.DataFrame:
    """Per score: ECE, pooled AUROC with CI (questions resampled), mean per-question AUROC,
    spread of per-question best thresholds, and the loss of one global threshold vs oracles."""
    rows = []
    sub = _with_both(frame)
    for score in SCORES:
        s = frame[score].clip(0, 1)
        pooled = M.auroc_ci(sub[score], sub["gold"], n_boot=n_boot, groups=sub["qid"])
        per_q, n_q = M.mean_per_group_auroc(sub[score], sub["gold"], sub["qid"])
        best = np.array(
            list(M.best_threshold_per_group(sub[score], sub["gold"], sub["qid"]).values())
        )
        gvo = M.global_vs_oracle_threshold(sub[score], sub["gold"], sub["qid"])
        rows.append(
            {
                "score": score,
                "ECE": M.expected_calibration_error(s, frame["gold"]),
                "pooled AUROC": pooled.auroc,
                "AUROC 95% CI": f"{pooled.lower:.3f}–{pooled.upper:.3f}",
                "mean per-question AUROC": per_q,
                "questions with both classes": n_q,
                "best-threshold IQR": float(np.subtract(*np.percentile(best, [75, 25]))),
                "best-threshold median": float(np.median(best)),
                "global threshold": gvo["global_threshold"],
                "global bal. acc.": gvo["global_bal_acc"],
                "oracle bal. acc.": gvo["oracle_bal_acc"],
                "loss vs oracle": gvo["loss"],
            }
        )
    return pd.DataFrame(rows)


def best_thresholds(frame: pd.DataFrame) -> pd.DataFrame:
    """Each question's best threshold under each score (long format, for the spread plot)."""
    sub = _with_both(frame)
    rows = [
        {"score": score, "qid": q, "threshold": t}
        for score in SCORES
        for q, t in M.best_threshold_per_group(sub[score], sub["gold"], sub["qid"]).items()
    ]
    return pd.DataFrame(rows)


def headline(table: pd.DataFrame) -> dict[str, float]:
    """Metrics for MLflow: ECE, AUROCs and the global-threshold loss of each score."""
    out: dict[str, float] = {}
    for r in table.to_dict("records"):
        key = r["score"]
        out[f"ece_{key}"] = r["ECE"]
        out[f"pooled_auroc_{key}"] = r["pooled AUROC"]
        out[f"mean_question_auroc_{key}"] = r["mean per-question AUROC"]
        out[f"global_threshold_loss_{key}"] = r["loss vs oracle"]
        out[f"best_threshold_iqr_{key}"] = r["best-threshold IQR"]
    return out
