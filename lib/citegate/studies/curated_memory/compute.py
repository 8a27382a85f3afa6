"""Notebook 07's numbers, pure: the pre-check's precision and recall by threshold, the lean and
wide paths compared on the questions the pre-check sends lean, boost strength, and the check
that no memory note is ever cited. Rows come from `studies.curated_memory.run`; nothing here
touches the database or a model.

A lean decision is right only when memory answers the question AND the pinned note that leads
is the note written for it: a question answered by another pinned note's body counts against
precision.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from citegate.evaluation.clustered import cluster_rate_ci
from citegate.evaluation.metrics.operation import rate_ci_or_nan

PRECISION_TARGET = 0.95


@dataclass(frozen=True)
class PrecheckRow:
    """One question's signal for one kind of note: the best note's similarity and key, which
    unit gave it, and the question's labels. For the pre-check the note is the best pinned one
    and `memory_answers` says a pinned note answers the question; for boost, the best boost
    note, and `memory_answers` says the question is on a boost note's topic."""

    qid: str
    language: str
    kind: str  # answered_by_memory (on_boost_topic) | in_corpus | out_of_scope
    echo: str
    note: str
    note_kind: str
    memory_answers: bool
    split: str
    group: str
    best_pinned: float
    best_key: str
    via: str

    @property
    def right_note(self) -> bool:
        """Memory answers and the best pinned note is the one written for the question."""
        return self.memory_answers and self.best_key == self.note


@dataclass(frozen=True)
class PathRow:
    """One question retrieved under one policy: seconds (median of the timed repeats), the
    final notes' addresses, the decision and who made it, the retrieval's work (lane searches,
    candidates, reranked), the curated notes among the final notes and among the extractive
    answer's citations, and the gold verses."""

    qid: str
    group: str
    language: str
    policy: str
    seconds: float
    notes: tuple[str, ...]
    decision: str
    decided_by: str
    searches: int
    candidates: int
    reranked: int
    note_keys: tuple[str, ...]
    cited_keys: tuple[str, ...]
    gold: tuple[str, ...]

    @property
    def recall(self) -> float:
        """Share of the gold verses among the final notes."""
        return sum(g in self.notes for g in self.gold) / len(self.gold) if self.gold else math.nan


@dataclass(frozen=True)
class BoostRow:
    """One question's final notes replayed with one boost strength: the share of its gold
    verses kept, and whether the question is on a boost note's topic."""

    qid: str
    group: str
    strength: float
    on_boost_topic: bool
    recall: float


# ------------------------------------------------------------------ the pre-check


def _lean(rows: Sequence[PrecheckRow], t: float) -> np.ndarray:
    return np.array([r.best_pinned >= t for r in rows], dtype=bool)


def counts_at(rows: Sequence[PrecheckRow], t: float) -> dict[str, float]:
    """Taken lean, right, positives, precision and recall at threshold `t`."""
    lean = _lean(rows, t)
    right = np.array([r.right_note for r in rows], dtype=bool)
    pos = int(sum(r.memory_answers for r in rows))
    taken, tp = int(lean.sum()), int((lean & right).sum())
    return {
        "threshold": t,
        "taken": taken,
        "right": tp,
        "positives": pos,
        "precision": tp / taken if taken else math.nan,
        "recall": tp / pos if pos else math.nan,
    }


def sweep(rows: Sequence[PrecheckRow], thresholds: Sequence[float] | None = None) -> pd.DataFrame:
    """Precision and recall of "memory answers" at every threshold (default: every observed
    best-pinned similarity, and 1.0)."""
    grid = sorted({*(r.best_pinned for r in rows), 1.0}) if thresholds is None else thresholds
    return pd.DataFrame([counts_at(rows, float(t)) for t in grid])


def recommend_threshold(rows: Sequence[PrecheckRow], target: float = PRECISION_TARGET) -> float:
    """The lowest threshold from which precision stays at or above `target` at every higher
    threshold that takes any question (so a small move up never breaks it); 1.0 when none
    does."""
    table = sweep(rows)
    table = table[table["taken"] > 0].sort_values("threshold", ascending=False)
    best = 1.0
    for t, p in zip(table["threshold"], table["precision"], strict=True):
        if p < target:
            break
        best = float(t)
    return best


def precheck_metrics(rows: Sequence[PrecheckRow], t: float, n_boot: int) -> dict[str, float]:
    """Precision and recall at `t` (Wilson intervals, and precision clustered by group), and
    the false-lean rate per negative kind and the recall per echo and language."""
    lean = _lean(rows, t)
    right = [r.right_note for r in rows]
    taken = [ok for ok, go in zip(right, lean, strict=True) if go]
    out: dict[str, float] = {}
    p, plo, phi = rate_ci_or_nan(taken)
    out |= {
        "precision": p,
        "precision.ci_lo": plo,
        "precision.ci_hi": phi,
        "taken": float(len(taken)),
    }
    groups = [r.group for r, go in zip(rows, lean, strict=True) if go]
    out["precision.cluster_lo"], out["precision.cluster_hi"] = cluster_rate_ci(
        np.array(taken, dtype=float), np.array(groups), n_boot
    )
    pos = [(r, go) for r, go in zip(rows, lean, strict=True) if r.memory_answers]
    rec, rlo, rhi = rate_ci_or_nan([go and r.right_note for r, go in pos])
    out |= {"recall": rec, "recall.ci_lo": rlo, "recall.ci_hi": rhi, "positives": float(len(pos))}
    for echo in ("trigger", "body"):
        hits = [go and r.right_note for r, go in pos if r.echo == echo]
        out[f"recall.{echo}"] = rate_ci_or_nan(hits)[0]
    for lang in sorted({r.language for r in rows}):
        hits = [go and r.right_note for r, go in pos if r.language == lang]
        out[f"recall.{lang}"] = rate_ci_or_nan(hits)[0]
        took = [
            ok for r, ok, go in zip(rows, right, lean, strict=True) if go and r.language == lang
        ]
        out[f"precision.{lang}"] = rate_ci_or_nan(took)[0]
    for kind in ("in_corpus", "out_of_scope"):
        neg = [go for r, go in zip(rows, lean, strict=True) if r.kind == kind]
        out[f"false_lean_rate.{kind}"] = rate_ci_or_nan(neg)[0]
        out[f"negatives.{kind}"] = float(len(neg))
    return out


def precheck_table(rows: Sequence[PrecheckRow], t: float, taken: str = "lean") -> pd.DataFrame:
    """Per slice (split × kind × language): questions, how many reach `t` (`taken`: what
    reaching it does, "lean" or "boosted"), rates with Wilson intervals (recall for a positive
    slice, the false rate for negatives)."""
    out = []
    keys = sorted({(r.split, r.kind, r.language) for r in rows})
    for split, kind, lang in keys:
        part = [r for r in rows if (r.split, r.kind, r.language) == (split, kind, lang)]
        lean = _lean(part, t)
        if part[0].memory_answers:
            hits = [go and r.right_note for r, go in zip(part, lean, strict=True)]
            rate, lo, hi = rate_ci_or_nan(hits)
            what = "recall"
        else:
            rate, lo, hi = rate_ci_or_nan(lean)
            what = f"false {taken} rate"
        out.append({"split": split, "kind": kind, "language": lang, "n": len(part),
                    f"taken {taken}": int(lean.sum()), "measure": what, "rate": rate,
                    "ci95 lo": lo, "ci95 hi": hi})  # fmt: skip
    return pd.DataFrame(out)


# ------------------------------------------------------------------ lean versus wide


def _p50_ms(rows: Sequence[PathRow], policy: str) -> float:
    xs = [r.seconds for r in rows if r.policy == policy]
    return float(np.median(xs)) * 1000 if xs else math.nan


def path_table(rows: Sequence[PathRow], n_boot: int) -> pd.DataFrame:
    """Per policy: questions, p50 and p90 retrieve ms, mean lane searches, candidates and
    reranked, final-notes recall (clustered interval) and answer rate."""
    out = []
    for policy in ("lean", "wide"):
        part = [r for r in rows if r.policy == policy]
        if not part:
            continue
        rec = np.array([r.recall for r in part if not math.isnan(r.recall)])
        units = np.array([r.group for r in part if not math.isnan(r.recall)])
        lo, hi = cluster_rate_ci(rec, units, n_boot)
        ms = np.array([r.seconds for r in part]) * 1000
        out.append({
            "policy": policy, "questions": len(part),
            "p50 ms": float(np.median(ms)), "p90 ms": float(np.percentile(ms, 90)),
            "lane searches": float(np.mean([r.searches for r in part])),
            "candidates": float(np.mean([r.candidates for r in part])),
            "reranked": float(np.mean([r.reranked for r in part])),
            "final-notes recall": float(rec.mean()) if len(rec) else math.nan,
            "recall lo": lo, "recall hi": hi,
            "answer rate": float(np.mean([r.decision == "answer" for r in part])),
        })  # fmt: skip
    return pd.DataFrame(out)


def lean_vs_wide(rows: Sequence[PathRow], n_boot: int) -> dict[str, float]:
    """The p50 ratio (lean over wide), the paired recall difference (lean minus wide) with a
    clustered interval, and how many decisions differ."""
    lean = {r.qid: r for r in rows if r.policy == "lean"}
    wide = {r.qid: r for r in rows if r.policy == "wide"}
    both = [q for q in lean if q in wide]
    diffs = [(lean[q].recall - wide[q].recall, lean[q].group) for q in both]
    diffs = [(d, g) for d, g in diffs if not math.isnan(d)]
    d = np.array([x for x, _ in diffs])
    lo, hi = cluster_rate_ci(d, np.array([g for _, g in diffs]), n_boot)
    return {
        "questions": float(len(both)),
        "p50_ratio": _p50_ms(rows, "lean") / _p50_ms(rows, "wide") if both else math.nan,
        "recall_diff": float(d.mean()) if len(d) else math.nan,
        "recall_diff.lo": lo,
        "recall_diff.hi": hi,
        "decisions_changed": float(sum(lean[q].decision != wide[q].decision for q in both)),
    }


def memory_cited(rows: Sequence[PathRow], kinds: dict[str, str]) -> int:
    """How many times a memory or boost note sits among the final notes or is cited by an
    answer (`kinds`: note key -> kind); only a pinned note may be either."""
    return sum(kinds.get(k) != "pinned" for r in rows for k in (*r.note_keys, *r.cited_keys))


def pinned_cited_share(rows: Sequence[PathRow], notes_of: dict[str, str]) -> float:
    """Share of the questions a pinned note answers whose extractive answer cites that note
    (`notes_of`: question id -> the pinned note's key), lean path."""
    lean = [r for r in rows if r.policy == "lean" and r.qid in notes_of]
    if not lean:
        return math.nan
    return float(np.mean([notes_of[r.qid] in r.cited_keys for r in lean]))


# ------------------------------------------------------------------ boost strength


def boost_table(rows: Sequence[BoostRow], n_boot: int) -> pd.DataFrame:
    """Per strength: final-notes recall of the questions on a boost note's topic and of the
    other questions, each with a clustered interval."""
    out = []
    for s in sorted({r.strength for r in rows}):
        row: dict[str, float] = {"strength": s}
        for name, on in (("boost topic", True), ("other", False)):
            part = [r for r in rows if r.strength == s and r.on_boost_topic == on]
            rec = np.array([r.recall for r in part])
            lo, hi = cluster_rate_ci(rec, np.array([r.group for r in part]), n_boot)
            row |= {f"{name} n": len(part), f"{name} recall": float(rec.mean()) if len(rec)
                    else math.nan, f"{name} lo": lo, f"{name} hi": hi}  # fmt: skip
        out.append(row)
    return pd.DataFrame(out)


def recommend_boost(table: pd.DataFrame, tolerance: float = 0.01) -> float:
    """The smallest strength reaching the best recall on boost topics among those that keep
    the other questions' recall within `tolerance` of no boost (0.0 when none helps)."""
    if table.empty:
        return 0.0
    base = float(table.loc[table["strength"] == table["strength"].min(), "other recall"].iloc[0])
    ok = table[table["other recall"] >= base - tolerance]
    best = ok["boost topic recall"].max()
    return float(ok.loc[ok["boost topic recall"] >= best, "strength"].min())


def boost_metrics(threshold: float, test: dict[str, float]) -> dict[str, float]:
    """The boost topic check's metrics on the test part (NaN left out)."""
    out = {
        "boost_threshold": threshold,
        "boost_topic_precision.test": test["precision"],
        "boost_topic_recall.test": test["recall"],
    }
    return {k: float(v) for k, v in out.items() if math.isfinite(float(v))}


__all__ = [
    "PRECISION_TARGET",
    "BoostRow",
    "PathRow",
    "PrecheckRow",
    "boost_metrics",
    "boost_table",
    "counts_at",
    "headline",
    "lean_vs_wide",
    "memory_cited",
    "path_table",
    "pinned_cited_share",
    "precheck_metrics",
    "precheck_table",
    "recommend_boost",
    "recommend_threshold",
    "sweep",
]


def headline(
    threshold: float,
    tune: dict[str, float],
    test: dict[str, float],
    pooled: dict[str, float],
    paths: dict[str, float],
    path_frame: pd.DataFrame,
    cited: int,
    pinned_share: float,
    boost: float,
    boost_frame: pd.DataFrame,
) -> dict[str, float]:
    """The run's metrics (what MLflow logs and the spec's expectations check); a value with
    no observation is left out rather than logged as NaN."""
    ms = dict(zip(path_frame.get("policy", []), path_frame.get("p50 ms", []), strict=True))
    at = boost_frame.set_index("strength") if not boost_frame.empty else None
    gain = (
        float(at.loc[boost, "boost topic recall"] - at.iloc[0]["boost topic recall"])
        if at is not None
        else math.nan
    )
    out = {
        "precheck_threshold": threshold,
        "precheck_precision.tune": tune["precision"],
        "precheck_recall.tune": tune["recall"],
        "precheck_precision.test": test["precision"],
        "precheck_precision.test.lo": test["precision.ci_lo"],
        "precheck_recall.test": test["recall"],
        "precheck_recall.test.body": test["recall.body"],
        "precheck_recall.test.trigger": test["recall.trigger"],
        "precheck_precision": pooled["precision"],
        "precheck_recall": pooled["recall"],
        **{f"precheck_{k}": v for k, v in pooled.items() if k.startswith("false_lean_rate.")},
        **{
            f"precheck_recall.{k.split('.')[1]}": v
            for k, v in pooled.items()
            if k.startswith("recall.")
            and k.split(".")[1] not in ("trigger", "body", "ci_lo", "ci_hi")
        },
        "lean_questions": paths["questions"],
        "lean_p50_ms": ms.get("lean", math.nan),
        "wide_p50_ms": ms.get("wide", math.nan),
        "lean_p50_ratio": paths["p50_ratio"],
        "lean_recall_diff": paths["recall_diff"],
        "lean_recall_diff.lo": paths["recall_diff.lo"],
        "lean_recall_diff.hi": paths["recall_diff.hi"],
        "lean_decisions_changed": paths["decisions_changed"],
        "memory_cited": float(cited),
        "pinned_cited_share": pinned_share,
        "boost_strength": boost,
        "boost_recall_gain": gain,
    }
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}
