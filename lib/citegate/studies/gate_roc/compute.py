"""Notebook 03's numbers: gate signals per question, AUROCs, operating points, recommendations.

Pure functions of a loaded `Study` or of the tables made from it (no database, model or file).

The study compares production's replay-only signals (`pipeline.signals.cosine_signals`) with
five more, `STUDY_SIGNALS`, from the same result and trace (`study_signals`; no index facts, no
texts):

- `max_rerank`: max rerank score of the final notes, a note without one counted by its cosine;
- `margin_top1_top2_zero_filled`: `margin_top1_top2` with a missing note counted as cosine 0
  (the best cosine with one note, 0 without notes), where production's margin is NaN; the RRF
  arm's context cap can leave fewer than 2 notes, so the two differ there;
- `max_verse_cosine`: max cosine of the final verse notes, 0 without one;
- `rrf_fusion_max`, `rrf_rerank_max`: the RRF arm's max fusion score and max rerank score (0
  when unscored) of its own top notes, the two scales the two-scale gate switches between.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.config import DESIGN, PipelineConfig
from citegate.core.types import RetrievalResult
from citegate.evaluation import metrics as M
from citegate.pipeline.cut import lane_view
from citegate.pipeline.fusion import rrf_cut
from citegate.pipeline.signals import cosine_signals
from citegate.research.study import Study, metric_prefix

# The signals compared, in the order of the AUROC table: production's replay-only ones
# (`pipeline.signals.cosine_signals`) interleaved with the study's own (`STUDY_SIGNALS`).
SIGNALS = (
    "max_cosine",
    "max_rerank",
    "topk_mean_cosine",
    "margin_top1_top2_zero_filled",
    "max_verse_cosine",
    "rrf_fusion_max",
    "rrf_rerank_max",
)
STUDY_SIGNALS = (
    "max_rerank",
    "margin_top1_top2_zero_filled",
    "max_verse_cosine",
    "rrf_fusion_max",
    "rrf_rerank_max",
)
DESIGN_POINTS = {
    k: getattr(DESIGN, k) for k in ("bail_out_score", "sufficient_score", "good_enough_score")
}


def study_signals(result: RetrievalResult, cfg: PipelineConfig) -> dict[str, float]:
    """The gate study's extra signals (`STUDY_SIGNALS`, in order) of one replayed result; the
    RRF ones replay the same trace under arm=rrf_hybrid."""
    notes = result.notes
    reranked = result.trace.reranker_id != "none"
    pool = lane_view(result.trace.candidates, cfg.pin_named_verses)  # the pool `cfg` sees
    rrf_notes, _, fused = rrf_cut(pool, cfg.replace(arm="rrf_hybrid"), reranked)
    rerank = (c.rerank_score if c.rerank_score is not None else c.score for c in notes)
    cos = sorted((float(c.score) for c in notes), reverse=True) or [0.0]
    return {
        "max_rerank": max(rerank, default=0.0),
        "margin_top1_top2_zero_filled": cos[0] - (cos[1] if len(cos) > 1 else 0.0),
        "max_verse_cosine": max((c.score for c in notes if c.kind == "verse"), default=0.0),
        "rrf_fusion_max": max((fused[c.fragment_id] for c in rrf_notes), default=0.0),
        "rrf_rerank_max": max((c.rerank_score or 0.0 for c in rrf_notes), default=0.0),
    }


def signals(study: Study, cfg: PipelineConfig) -> pd.DataFrame:
    """One row per question: label, split, language, the candidate gate signals, gate decision."""
    rows = []
    for name, s in study.sets.items():
        results = s.replay_all(cfg)
        for q in s.questions:
            res = results[q.id]
            sig = cosine_signals(res.notes) | study_signals(res, cfg)
            rows.append(
                {
                    "set": name,
                    "qid": q.id,
                    "group": q.group,
                    "label": q.label,
                    "split": q.split,
                    "language": q.language,
                    **{k: sig[k] for k in SIGNALS[:5]},
                    "decision": res.decision,
                    "rounds": len(res.rounds),
                    **{k: sig[k] for k in SIGNALS[5:]},
                }
            )
    return pd.DataFrame(rows)


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
    prefix: str = "",
) -> dict[str, float]:
    """MLflow metrics: AUROCs of max cosine (with their CI bounds) and the test-split rates of the
    recommendation, every name led by `prefix` (see `research.study.metric_prefix`)."""
    out = {f"rec_{k}": v for k, v in rec.items()}
    for r in aurocs[aurocs["signal"] == "max_cosine"].to_dict("records"):
        out[f"auroc_max_cosine_vs_{r['negatives']}"] = r["AUROC"]
        out[f"auroc_max_cosine_vs_{r['negatives']}_ci_low"] = r["CI low"]
        out[f"auroc_max_cosine_vs_{r['negatives']}_ci_high"] = r["CI high"]
    for r in test_points.to_dict("records"):
        if r["point"].startswith("sufficient_score"):
            out[f"test_fpr_at_rec_sufficient_vs_{r['negatives']}"] = r["fpr"]
            out[f"test_tpr_at_rec_sufficient_vs_{r['negatives']}"] = r["tpr"]
    return {f"{prefix}{k}": float(v) for k, v in out.items() if np.isfinite(v)}


# ------------------------------------------------------------------ several corpora side by side


def corpus_signals(studies: Mapping[str, Study]) -> pd.DataFrame:
    """`signals` of every corpus's study, one frame with a leading `corpus` column."""
    parts = [signals(s, s.config).assign(corpus=c) for c, s in studies.items()]
    frame = pd.concat(parts, ignore_index=True)
    return frame[["corpus", *[c for c in frame.columns if c != "corpus"]]]


def per_corpus(
    frame: pd.DataFrame, table: Callable[[str, pd.DataFrame], pd.DataFrame]
) -> pd.DataFrame:
    """`table(corpus, its rows)` for each corpus (in order of first appearance), concatenated with
    the corpus as the first column: any one-corpus table of this module, per corpus."""
    parts = []
    for corpus in frame["corpus"].unique():
        part = table(str(corpus), frame[frame["corpus"] == corpus].drop(columns="corpus"))
        if len(part):
            parts.append(part.assign(corpus=corpus)[["corpus", *part.columns]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def recommend_per_corpus(
    frame: pd.DataFrame, negative: str, target_fpr: float, strict_fpr: float, min_recall: float
) -> dict[str, dict[str, float]]:
    """`recommend` on each corpus's own tune split: the thresholds each corpus would need."""
    return {
        str(c): recommend(g, negative, target_fpr, strict_fpr, min_recall)
        for c, g in frame.groupby("corpus", sort=False)
    }


def test_report_per_corpus(
    frame: pd.DataFrame, negatives: Sequence[str], recs: Mapping[str, dict[str, float]]
) -> pd.DataFrame:
    """`test_report` of each corpus at its own recommended thresholds (`recs[corpus]`)."""
    return per_corpus(frame, lambda c, g: test_report(g, negatives, recs[c]))


def side_by_side(
    frame: pd.DataFrame,
    aurocs: pd.DataFrame,
    recs: Mapping[str, dict[str, float]],
    negatives: Sequence[str],
    production: str,
) -> pd.DataFrame:
    """One row per corpus: max-cosine AUROC against each kind of negative (clustered 95% CI), the
    sufficient score recommended on that corpus's tune split, and on its TEST split the answer
    rate and false-answer rates there (Wilson 95% intervals); plus the same two rates at the
    production corpus's recommendation, which shows whether one threshold carries across."""
    rows = []
    for corpus, g in frame.groupby("corpus", sort=False):
        row: dict[str, Any] = {"corpus": corpus}
        for neg in negatives:
            a = aurocs[
                (aurocs["corpus"] == corpus)
                & (aurocs["signal"] == "max_cosine")
                & (aurocs["negatives"] == neg)
            ]
            if len(a):
                r = a.iloc[0]
                row[f"AUROC vs {neg}"] = _interval(r["AUROC"], r["CI low"], r["CI high"])
        test = g[g["split"] == "test"]
        own = recs[str(corpus)]["sufficient_score"]
        row["recommended sufficient (tune)"] = f"{own:.4f}"
        row.update(_rates_at(test, own, negatives, ""))
        shared = recs[production]["sufficient_score"]
        at = f" at {production}'s {shared:.4f}"
        if corpus == production:
            row.update(dict.fromkeys(_rates_at(test, shared, negatives, at), "(same)"))
        else:
            row.update(_rates_at(test, shared, negatives, at))
        kinds = ("answerable", *negatives)
        row[f"test questions ({' / '.join(kinds)})"] = " / ".join(
            str(int((test["label"] == k).sum())) for k in kinds
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _rates_at(
    test: pd.DataFrame, threshold: float, negatives: Sequence[str], at: str
) -> dict[str, str]:
    """Answer rate (answerable) and false-answer rate per kind of negative at one max-cosine
    threshold, as table cells with Wilson intervals; `at` ends each column name."""
    cells = {
        f"answer rate{at}": _rate(test.loc[test["label"] == "answerable", "max_cosine"], threshold)
    }
    for neg in negatives:
        cells[f"false answers vs {neg}{at}"] = _rate(
            test.loc[test["label"] == neg, "max_cosine"], threshold
        )
    return cells


def _rate(scores: pd.Series, threshold: float) -> str:
    """Share of `scores` at or above `threshold`, with its Wilson 95% interval, as text."""
    rate, low, high = M.rate_ci_or_nan(scores >= threshold)
    return _interval(rate, low, high)


def _interval(value: float, low: float, high: float) -> str:
    """ "0.981 [0.969, 0.991]"; "n/a" for a missing value."""
    if not np.isfinite(value):
        return "n/a"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def language_aurocs(frame: pd.DataFrame, negatives: Sequence[str], n_boot: int) -> pd.DataFrame:
    """Max-cosine AUROC (clustered CI) per corpus, query language and kind of negative, where
    that language has both classes: one threshold serves every language of a corpus, so a
    language whose scores sit elsewhere shows here."""
    rows = []
    for (corpus, lang), g in frame.groupby(["corpus", "language"], sort=True):
        for neg in negatives:
            sub = contrast(g, neg)
            if sub["y"].nunique() < 2:
                continue
            ci = M.auroc_ci(sub["max_cosine"], sub["y"], n_boot=n_boot, groups=sub["group"])
            rows.append(
                {
                    "corpus": corpus,
                    "language": lang,
                    "negatives": neg,
                    "AUROC": ci.auroc,
                    "CI low": ci.lower,
                    "CI high": ci.upper,
                    "answerable": ci.n_pos,
                    "negative": ci.n_neg,
                    "median max cosine, answerable": float(
                        sub.loc[sub["y"] == 1, "max_cosine"].median()
                    ),
                    "median max cosine, negative": float(
                        sub.loc[sub["y"] == 0, "max_cosine"].median()
                    ),
                }
            )
    return pd.DataFrame(rows)


def recommended_config(base: PipelineConfig, rec: dict[str, float]) -> PipelineConfig:
    """The production config with the recommended gate thresholds."""
    return base.replace(**rec)


def corpus_headline(
    aurocs: pd.DataFrame,
    test_points: pd.DataFrame,
    recs: Mapping[str, dict[str, float]],
    production: str,
) -> dict[str, float]:
    """`headline` of every corpus, each named with its `metric_prefix`: the production corpus's
    metrics keep their one-corpus names, another's read e.g. "xquad_rec_sufficient_score"."""
    out: dict[str, float] = {}
    for corpus, rec in recs.items():
        out |= headline(
            of_corpus(aurocs, corpus),
            of_corpus(test_points, corpus),
            rec,
            metric_prefix(corpus, production),
        )
    return out


def of_corpus(table: pd.DataFrame, corpus: str) -> pd.DataFrame:
    """The rows of one corpus of a `per_corpus` table, without the corpus column (the table a
    one-corpus run gives); an empty table stays empty."""
    if "corpus" not in table:  # a per_corpus table with no part: no rows, the keys read
        return pd.DataFrame({k: pd.Series(dtype=object) for k in ("signal", "point", "negatives")})
    rows = table[table["corpus"] == corpus].drop(columns="corpus")
    return rows.reset_index(drop=True)


def recommendations_table(recs: Mapping[str, dict[str, float]]) -> pd.DataFrame:
    """One row per corpus: the thresholds its own tune split recommends."""
    return pd.DataFrame([{"corpus": c, **r} for c, r in recs.items()])


def language_answer_rates(
    frame: pd.DataFrame, recs: Mapping[str, dict[str, float]]
) -> pd.DataFrame:
    """Per corpus and query language: the share of TEST-split answerable questions whose max
    cosine reaches that corpus's recommended sufficient score (Wilson 95% interval). One
    threshold serves every language, so this is where a language that scores lower pays."""
    rows = []
    test = frame[(frame["split"] == "test") & (frame["label"] == "answerable")]
    for (corpus, lang), g in test.groupby(["corpus", "language"], sort=True):
        t = recs[str(corpus)]["sufficient_score"]
        rate, low, high = M.rate_ci(g["max_cosine"] >= t)
        rows.append(
            {
                "corpus": corpus,
                "language": lang,
                "sufficient_score": t,
                "answer rate": rate,
                "CI low": low,
                "CI high": high,
                "answerable": len(g),
            }
        )
    return pd.DataFrame(rows)
