"""Notebook 03: does max cosine separate answerable from unanswerable questions, and where should
the gate's thresholds (0.40 / 0.55 / 0.65) sit for this corpus and embedder?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.evaluation import metrics as M
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
    from citegate.pipeline.arms import rrf_cut

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


def plot_two_scale(sweep: pd.DataFrame, design: dict[str, float]) -> Any:
    """Answer rate against a shared threshold, per scale and label (log x); design points marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    styles = {"reranker scale": "-", "fusion scale": "--"}
    for (scale, label), g in sweep.groupby(["scale", "label"]):
        ax.plot(
            g["threshold"], g["answer_rate"], styles[scale], marker=".", label=f"{scale}: {label}"
        )
    for name, t in design.items():
        ax.axvline(t, color="grey", lw=1, ls=":")
        ax.text(
            t, 1.02, f"{name} {t:g}", fontsize=7, ha="center", transform=ax.get_xaxis_transform()
        )
    ax.set(
        xscale="log",
        xlabel="one threshold applied to the scale",
        ylabel="share answered",
        title="why one threshold cannot serve both scales",
    )
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


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


def plot_roc_pr(
    frame: pd.DataFrame, negatives: Sequence[str], marks: dict[str, float], n_boot: int = 200
) -> Any:
    """ROC (with a bootstrap band over question groups, as the AUROC intervals) and
    precision–recall of max cosine, per kind of negative; design thresholds marked on the ROC."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, neg in enumerate(negatives):
        sub = contrast(frame, neg)
        if sub["y"].nunique() < 2:
            continue
        grid, tpr, lo, hi = M.roc_curve_band(
            sub["max_cosine"], sub["y"], n_boot=n_boot, groups=sub["group"]
        )
        auc = M.auroc_ci(sub["max_cosine"], sub["y"], n_boot=1).auroc
        axes[0].plot(grid, tpr, color=f"C{i}", label=f"vs {neg} (AUROC {auc:.3f})")
        axes[0].fill_between(grid, lo, hi, color=f"C{i}", alpha=0.2)
        for t in marks.values():
            p = M.operating_point(sub["max_cosine"], sub["y"], t)
            axes[0].plot(p["fpr"], p["tpr"], marker="o", color=f"C{i}", ms=5)
            axes[0].annotate(
                f"{t:.2f}",
                (p["fpr"], p["tpr"]),
                fontsize=7,
                xytext=(4, -8),
                textcoords="offset points",
            )
        pr = M.pr_curve(sub["max_cosine"], sub["y"])
        axes[1].plot(pr.x, pr.y, color=f"C{i}", label=f"vs {neg}")
    axes[0].plot([0, 1], [0, 1], color="grey", ls="--", lw=1)
    axes[0].set(
        xlabel="false-answer rate (negatives answered)",
        ylabel="answerable answered",
        title="ROC of max cosine (95% band, question groups resampled)",
    )
    axes[1].set(
        xlabel="recall (answerable answered)",
        ylabel="precision",
        title="precision–recall of max cosine",
    )
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_risk_coverage(frame: pd.DataFrame, marks: dict[str, float]) -> Any:
    """Risk (share of answers that should have been abstentions) against coverage, all questions."""
    import matplotlib.pyplot as plt

    y = (frame["label"] == "answerable").astype(int)
    rc = M.risk_coverage(frame["max_cosine"], y)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(rc.coverage, rc.risk, label=f"max cosine (AURC {M.aurc(rc):.3f})")
    for name, t in marks.items():
        p = M.operating_point(frame["max_cosine"], y, t)
        ax.plot(p["coverage"], p["risk"], marker="o", color="k", ms=4)
        ax.annotate(
            f"{name} {t:.2f}",
            (p["coverage"], p["risk"]),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.set(
        xlabel="coverage (share of all questions answered)",
        ylabel="risk (share of answers that are false)",
        title="risk–coverage",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_distributions(frame: pd.DataFrame, marks: dict[str, float]) -> Any:
    """Histograms of max cosine by label, with the thresholds marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 3.5))
    lo = max(0.0, float(frame["max_cosine"].min()) - 0.02)
    bins = np.linspace(lo, min(1.0, float(frame["max_cosine"].max()) + 0.02), 60)
    for label, g in frame.groupby("label"):
        ax.hist(g["max_cosine"], bins=bins, alpha=0.5, density=True, label=f"{label} (n={len(g)})")
    for name, t in marks.items():
        ax.axvline(t, color="k", ls="--", lw=1)
        ax.text(
            t, 1.01, name, rotation=0, fontsize=7, ha="center", transform=ax.get_xaxis_transform()
        )
    ax.set(xlabel="max cosine of the final notes", ylabel="density")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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


def conclusion(
    aurocs: pd.DataFrame,
    design: pd.DataFrame,
    test_points: pd.DataFrame,
    rec: dict[str, float],
    target_fpr: float,
    negative: str | None = None,
) -> str:
    """Markdown conclusion from this run's numbers: every claim follows from a measured value.

    `negative` is the kind the recommendation was tuned against (default: the kind of the
    `design` operating points, which the notebook computes against the same kind)."""
    tuned = negative or _design_negative(design)
    lines = ["## Conclusion", ""]
    lines += [
        _separation_line(r) for r in aurocs[aurocs["signal"] == "max_cosine"].to_dict("records")
    ]
    best = aurocs.sort_values("AUROC", ascending=False).groupby("negatives").head(1)
    lines += [_best_signal_line(r) for r in best.to_dict("records")]
    bail = design[design["point"].str.startswith("bail_out_score")]
    if len(bail):
        lines.append(_bail_line(bail.iloc[0].to_dict(), _design_negative(design)))
    lines.append(
        f"- Recommended from the tune split (target false-answer rate {target_fpr:.0%} "
        f"against {tuned} questions): bail_out {rec['bail_out_score']:.3f}, "
        f"sufficient {rec['sufficient_score']:.3f}, good_enough {rec['good_enough_score']:.3f}."
    )
    points = test_points[test_points["point"].str.startswith("sufficient_score")]
    lines += [_test_line(r, rec, tuned, target_fpr) for r in points.to_dict("records")]
    return "\n".join(lines)


def _design_negative(design: pd.DataFrame) -> str:
    """The kind of negative the design operating points were computed against."""
    if "negatives" in design and len(design):
        return str(design["negatives"].iloc[0])
    return "hard-negative"


def _separation_line(r: dict[str, Any]) -> str:
    """Whether max cosine separates, fails to separate, or inverts, judged by the 95% CI."""
    stats = (
        f"AUROC {r['AUROC']:.3f} (95% CI {r['CI low']:.3f}–{r['CI high']:.3f}; "
        f"{r['answerable']} vs {r['negative']} questions)"
    )
    neg = r["negatives"]
    if r["CI low"] > 0.5:
        return f"- Max cosine separates answerable from **{neg}** questions: {stats}."
    if r["CI high"] < 0.5:
        return (
            f"- Max cosine ranks **{neg}** questions *above* answerable ones, worse than "
            f"chance: {stats}."
        )
    return (
        f"- Max cosine does not separate answerable from **{neg}** questions better than "
        f"chance (the interval includes 0.5): {stats}."
    )


def _best_signal_line(r: dict[str, Any]) -> str:
    """The signal with the highest AUROC against one kind, and whether it beats chance."""
    head = f"- Best signal against {r['negatives']}: `{r['signal']}` (AUROC {r['AUROC']:.3f}"
    if r["CI low"] > 0.5:
        return head + f", CI {r['CI low']:.3f}–{r['CI high']:.3f})."
    return head + f", but its CI {r['CI low']:.3f}–{r['CI high']:.3f} includes or lies below 0.5)."


def _bail_line(b: dict[str, Any], negative: str) -> str:
    """What the design bail-out threshold does here: how many questions of each kind it rejects."""
    pos_bail, neg_bail = 1 - b["tpr"], 1 - b["fpr"]
    head = (
        f"- The design bail-out {b['threshold']:.2f} lets through {b['tpr']:.1%} of answerable "
        f"and {b['fpr']:.1%} of {negative} questions: "
    )
    if pos_bail == 0 and neg_bail == 0:
        return head + "on this embedder it never bails."
    if neg_bail < 0.1:
        return head + (
            f"it bails on only {neg_bail:.1%} of {negative} questions, so it barely acts as a "
            "gate on this embedder."
        )
    if neg_bail > 0.5:
        return head + (
            f"it rejects most {negative} questions ({neg_bail:.1%}), at the cost of "
            f"{pos_bail:.1%} of answerable ones."
        )
    return head + f"it rejects {neg_bail:.1%} of {negative} and {pos_bail:.1%} of answerable ones."


def _test_line(r: dict[str, Any], rec: dict[str, float], tuned: str, target_fpr: float) -> str:
    """The test-split rates at the recommended sufficient score; for the tuned kind, on target?"""
    line = (
        f"- On the **test** split at sufficient = {rec['sufficient_score']:.3f}: "
        f"{r['tpr']:.1%} of answerable answered, false-answer rate {r['fpr']:.1%} "
        f"vs {r['negatives']}"
    )
    if r["negatives"] != tuned or not np.isfinite(r["fpr"]):
        return line + "."
    if r["fpr"] <= target_fpr + 1e-12:
        return line + f" (within the {target_fpr:.0%} target)."
    return line + f" (above the {target_fpr:.0%} target it was tuned for on the tune split)."


def production_base() -> PipelineConfig:
    """The current production config (what a recommendation changes), or the design defaults."""
    from citegate.tracking.promote import PRODUCTION, read_production

    if PRODUCTION.exists():
        return PipelineConfig.from_dict(read_production()["pipeline"])
    return PipelineConfig()


def recommended_config(base: PipelineConfig, rec: dict[str, float]) -> PipelineConfig:
    """The production config with the recommended gate thresholds."""
    return base.replace(**rec)


def save_recommendation(
    run_dir: Any,
    cfg: PipelineConfig,
    rec: dict[str, float],
    test_points: pd.DataFrame,
    target_fpr: float,
) -> None:
    """Write `recommended_config.yaml` (a full PipelineConfig) and `recommendation.json` (why)."""
    import json
    from pathlib import Path

    from citegate.core.config import save_config

    folder = Path(run_dir)
    save_config(recommended_config(cfg, rec), folder / "recommended_config.yaml")
    why = {
        "thresholds": rec,
        "target_false_answer_rate": target_fpr,
        "tuned_on": "tune split",
        "test_operating_points": test_points.to_dict("records"),
    }
    (folder / "recommendation.json").write_text(
        json.dumps(why, indent=2, default=float), encoding="utf-8"
    )
