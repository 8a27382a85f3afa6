"""Experiment 05's signal frame: one row per question and corpus with its labels (raw and audited),
split, language and every gate signal of its replayed trace, plus max cosine standardised per
language on the corpus's tune split.

Pure functions of loaded studies and their inputs (no database or file).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from citegate.models import gate_model as gm
from citegate.pipeline.gate import question_language
from citegate.pipeline.signals import SIGNALS, IndexFacts, signals
from citegate.research.study import Study

Z_SIGNAL = gm.LANG_Z
COLUMNS = (*SIGNALS, Z_SIGNAL)  # every signal the frame holds, raw and standardised
NEGATIVES = ("out_of_corpus", "out_of_scope")
POOLED = gm.POOLED  # language key of the pooled stats


def signal_frame(
    studies: Mapping[str, Study],
    inputs: Mapping[str, Any],
) -> pd.DataFrame:
    """One row per (corpus, question): ids, labels (raw and audited), split, language and every
    raw signal (`pipeline.signals.signals` of the replayed trace), plus `max_cosine_lang_z`
    standardised per language with stats fit on the corpus's tune split (`language_stats`).
    `inputs[corpus]` carries `facts` (IndexFacts) and `texts` (note id -> text).

    `language` is what production reads from the question text (`pipeline.gate.
    question_language`), so the language statistics are fit, and every per-language split is made,
    on the same key the served gate uses; the question set's own label is kept as
    `set_language` (they differ for a handful of questions, e.g. an "en" one in Devanagari)."""
    rows = []
    for corpus, study in studies.items():
        facts: IndexFacts = inputs[corpus].facts
        texts: Mapping[int, str] = inputs[corpus].texts
        for name, s in study.sets.items():
            cfg = study.config.replace(corpora=[s.corpus])
            results = s.replay_all(cfg)
            for q in s.questions:
                sig = signals(results[q.id], cfg, facts, texts)
                rows.append(_row(corpus, name, q, results[q.id].decision, sig))
    frame = pd.DataFrame(rows)
    parts = [with_language_z(g, language_stats(g)) for _, g in frame.groupby("corpus", sort=False)]
    return pd.concat(parts, ignore_index=True)


def _row(corpus: str, name: str, q: Any, decision: str, sig: Mapping[str, float]) -> dict:
    """A frame row; `audit` is "" (and `audited_label` the raw label) for unaudited questions."""
    return {
        "corpus": corpus,
        "set": name,
        "qid": q.id,
        "group": q.group,
        "label": q.label,
        "audit": getattr(q, "audit", ""),
        "audited_label": getattr(q, "audited_label", q.label),
        "split": q.split,
        "language": question_language(q.text),
        "set_language": q.language,
        "decision": decision,
        **{k: float(sig[k]) for k in SIGNALS},
    }


def language_stats(frame: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """(mean, std) of max cosine per language over the TUNE split's answerable questions, and the
    pooled stats under "*" (for a language tune did not see), as `models.gate_model` fits them.
    Answerable only: the negatives' language mix differs from the answerable one (the
    out-of-scope set is mostly English), so stats over every question would mix language with
    label prevalence."""
    base = frame[(frame["split"] == "tune") & (frame["label"] == "answerable")]
    if base.empty:
        base = frame[frame["split"] == "tune"]
    return gm.fit_language_stats(base["max_cosine"].tolist(), base["language"].tolist())


def language_z(
    max_cosine: Iterable[float], languages: Iterable[str], stats: Mapping[str, tuple[float, float]]
) -> np.ndarray:
    """Max cosine standardised by its language's stats (the pooled "*" for an unknown language)."""
    out = []
    for x, lang in zip(max_cosine, languages, strict=True):
        mean, std = stats.get(lang, stats[POOLED])
        out.append((float(x) - mean) / std)
    return np.asarray(out, dtype=float)


def with_language_z(frame: pd.DataFrame, stats: Mapping[str, tuple[float, float]]) -> pd.DataFrame:
    """The frame with `max_cosine_lang_z` computed from `stats`."""
    out = frame.copy()
    out[Z_SIGNAL] = language_z(out["max_cosine"], out["language"], stats)
    return out
