"""Experiment 05's contrasts and AUROCs: answerable questions against one kind of negative, on raw
or audited labels, per language, and each signal's AUROC with a clustered bootstrap CI.

Pure functions of the signal frame (`compute.frame`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import TooFewQuestions
from citegate.evaluation import metrics as M
from citegate.studies.gate_signals.compute.frame import COLUMNS, NEGATIVES

POSITIVE = ("answerable", "held_out_answerable")  # audited labels the gate should answer
ALL = "all"
RAW, SUBSET_RAW, SUBSET_AUDITED = "raw", "audited subset: raw", "audited subset: audited"
MIN_PER_CLASS = 5  # a contrast with fewer answerable or negative questions is not reported


def has_audit(frame: pd.DataFrame) -> bool:
    """Whether any question in the frame carries an audit judgment."""
    return "audit" in frame and bool((frame["audit"].astype(str) != "").any())


def contrast(frame: pd.DataFrame, negative: str, labels: str = RAW) -> pd.DataFrame:
    """Answerable questions against one kind of negative, with `y` (1 = the gate should answer).

    `labels`: RAW (every question, raw labels), SUBSET_RAW (only audited questions, raw labels)
    or SUBSET_AUDITED (the same questions, audited labels: a held-out question the indexed corpus
    answers counts as answerable). The kind is always the raw label's."""
    sub = frame[frame["label"].isin(["answerable", negative])]
    if labels != RAW:
        sub = sub[sub["audit"].astype(str) != ""]
    sub = sub.copy()
    truth = sub["audited_label"] if labels == SUBSET_AUDITED else sub["label"]
    sub["y"] = truth.isin(POSITIVE).astype(int)
    return sub


def label_views(frame: pd.DataFrame) -> tuple[str, ...]:
    """The label views a frame supports: raw, plus the audited subset when audits exist."""
    return (RAW, SUBSET_RAW, SUBSET_AUDITED) if has_audit(frame) else (RAW,)


def _enough(y: pd.Series) -> bool:
    """Whether a contrast holds at least MIN_PER_CLASS questions of each class."""
    return int(y.sum()) >= MIN_PER_CLASS and int((1 - y).sum()) >= MIN_PER_CLASS


def language_keys(frame: pd.DataFrame) -> list[str]:
    """ "all", then every language of the frame in order: the language rows of a table."""
    return [ALL, *sorted(frame["language"].unique())]


def of_language(sub: pd.DataFrame, lang: str) -> pd.DataFrame:
    """The rows of one language (every row for "all")."""
    return sub if lang == ALL else sub[sub["language"] == lang]


def auroc_rows(
    sub: pd.DataFrame, scores: Mapping[str, pd.Series | np.ndarray], n_boot: int
) -> list[dict[str, Any]]:
    """AUROC with a clustered (question group) bootstrap CI of each named score on one contrast
    (`sub` with `y`); a score with NaNs is scored on its finite rows only (`n` says how many)."""
    rows = []
    for name, values in scores.items():
        s = pd.Series(np.asarray(values, dtype=float), index=sub.index)
        ok = np.isfinite(s)
        y = sub.loc[ok, "y"]
        if not _enough(y):
            continue
        ci = M.auroc_ci(s[ok], y, n_boot=n_boot, groups=sub.loc[ok, "group"])
        rows.append(
            {
                "signal": name,
                "AUROC": ci.auroc,
                "CI low": ci.lower,
                "CI high": ci.upper,
                "answerable": ci.n_pos,
                "negative": ci.n_neg,
            }
        )
    return rows


def auroc_table(
    frame: pd.DataFrame,
    n_boot: int,
    negatives: Sequence[str] = NEGATIVES,
    split: str = "test",
    columns: Sequence[str] = COLUMNS,
) -> pd.DataFrame:
    """Per corpus × label view × kind of negative × language (and all): AUROC and 95% CI of
    every signal on the `split` split."""
    rows = []
    part = frame[frame["split"] == split]
    for corpus, g in part.groupby("corpus", sort=False):
        for view in label_views(g):
            for neg in negatives:
                sub = contrast(g, neg, view)
                for lang in language_keys(sub):
                    lsub = of_language(sub, lang)
                    scores = {c: lsub[c] for c in columns}
                    head = {"corpus": corpus, "labels": view, "negatives": neg, "language": lang}
                    rows += [{**head, **r} for r in auroc_rows(lsub, scores, n_boot)]
    if not rows:
        raise TooFewQuestions(too_few(frame, negatives, "no signal's AUROC can be computed"))
    return pd.DataFrame(rows)


def best_signals(aurocs: pd.DataFrame, labels: str = RAW) -> pd.DataFrame:
    """The signal with the highest AUROC per corpus × kind × language (ties: first in order)."""
    sub = aurocs[aurocs["labels"] == labels]
    keys = ["corpus", "negatives", "language"]
    best = (
        sub.sort_values("AUROC", ascending=False, kind="stable").groupby(keys, sort=False).head(1)
    )
    return best.loc[sorted(best.index)]  # back in table order: corpus, kind, language


def _label_counts(rows: pd.DataFrame) -> str:
    """'3 test questions (answerable 3)': a split's size and its labels."""
    labels = ", ".join(f"{k} {n}" for k, n in rows["label"].value_counts().items())
    return f"{len(rows)} test questions ({labels or 'none'})"


def too_few(frame: pd.DataFrame, negatives: Sequence[str], what: str) -> str:
    """Why no realised row exists: each corpus's test split with its counts per label."""
    test = frame[frame["split"] == "test"]
    counts = "; ".join(
        f"{corpus}: {_label_counts(test[test['corpus'] == corpus])}"
        for corpus in frame["corpus"].unique()
    )
    return (
        f"{what} on the test split: it needs enough answerable questions and "
        f"negatives of a kind in {list(negatives)} in each corpus's test split, found {counts}. "
        "The corpus is too small for this study: import more questions, or hold out more "
        "documents (--holdout) so out_of_corpus questions exist"
    )
