"""Notebook 04's numbers: one row per fallback answer, and the tables and metrics made from them.

Pure functions of the answer frame (no database, model or file); failed calls (`llm_error`) are
left out of every rate by `scored`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.errors import (
    MAX_MODEL_ERROR_SHARE,
    MODEL_ERROR,
    CitegateError,
    is_model_error,
)
from citegate.core.errors import check_model_errors as check_statuses
from citegate.corpus.questions import Question, QuestionSet
from citegate.evaluation.metrics import rate_ci_or_nan
from citegate.pipeline.fallback import (
    detect_language,
    disclaimer_present,
    paint,
)


@dataclass(frozen=True)
class Item:
    """One sampled question, its set and the corpus build its probes search."""

    set: str
    corpus: str
    question: Question


@dataclass
class FallbackQuestions:
    """The sampled questions of every set, with the sets (for digests)."""

    sets: dict[str, QuestionSet]
    corpora: dict[str, str]
    items: list[Item]


def question_records(fq: FallbackQuestions, name: str) -> list[dict[str, Any]]:
    """One dict per sampled question of set `name`: id, label, language, split."""
    return [
        {
            "id": it.question.id,
            "label": it.question.label,
            "language": it.question.language,
            "split": it.question.split,
        }
        for it in fq.items
        if it.set == name
    ]


def questions_table(fq: FallbackQuestions) -> pd.DataFrame:
    """Sampled questions by set, label and language."""
    frame = pd.DataFrame(
        [
            {"set": it.set, "label": it.question.label, "language": it.question.language}
            for it in fq.items
        ]
    )
    return frame.groupby(["set", "label", "language"]).size().reset_index(name="questions")


def answer_row(item: Item, model: str, fb: Any) -> dict[str, Any]:
    """One row of the study: labels, parse status, disclaimer presence, scope, probes, cost."""
    q, fa = item.question, fb.answer
    expected = q.label != "out_of_scope"
    exact, normalized = disclaimer_present(fa.model_text, fa.lang)
    shown = fb.text if fb.branch == "fallback" else paint(fa.answer, fa.lang)
    uncached = [c for c in fa.calls if not c.cached]
    return {
        "model": model,
        "variant": fa.variant,
        "set": item.set,
        "qid": q.id,
        "label": q.label,
        "language": q.language,
        "lang_detected": fa.lang,
        "status": fa.outcome.kind,
        "error": fa.status if is_model_error(fa.status) else "",
        "parsed": fa.ok,
        "in_scope_expected": expected,
        "in_scope_pred": np.nan if fa.in_scope is None else float(fa.in_scope),
        "in_scope_correct": fa.in_scope == expected,
        "branch": fb.branch,
        "model_exact": exact,
        "model_normalized": normalized,
        "painted_exact": disclaimer_present(shown, fa.lang)[0],
        "answer_lang_match": bool(fa.answer) and detect_language(fa.answer) == fa.lang,
        "probes": len(fb.probes),
        "probe_hits": len({c.fragment_id for c in fb.hits}),
        "admitted": len(fb.admitted),
        "calls": len(fa.calls),
        "uncached_calls": len(uncached),
        "prompt_tokens": fa.prompt_tokens,
        "completion_tokens": fa.completion_tokens,
        "latency_s": sum(c.latency_s for c in uncached),
        "question": q.text,
        "model_text": fa.model_text[:400],
        "shown_text": shown[:400],
        "answer": fa.answer,
        "admitted_ids": " ".join(str(c.fragment_id) for c in fb.admitted),
    }


def scored(frame: pd.DataFrame) -> pd.DataFrame:
    """The answers the model actually gave: rows whose call failed (`llm_error`) removed."""
    if frame.empty or "status" not in frame:
        return frame
    return frame[frame["status"] != MODEL_ERROR]


def error_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model: fallback calls made, how many failed (server down, HTTP error: excluded from
    every rate), their share, and the first error."""
    cols = ["model", "calls", "failed", "failed share", "first error"]
    rows = []
    for model, g in frame.groupby("model", sort=True) if len(frame) else []:
        bad = g[g["status"] == MODEL_ERROR]
        rows.append(
            {
                "model": model,
                "calls": len(g),
                "failed": len(bad),
                "failed share": len(bad) / len(g),
                "first error": str(bad["error"].iloc[0])[:300] if len(bad) else "",
            }
        )
    return pd.DataFrame(rows, columns=cols)


def check_model_errors(
    frame: pd.DataFrame, max_share: float = MAX_MODEL_ERROR_SHARE
) -> dict[str, int]:
    """Failed fallback calls per model; `ModelFailure` when a model's failed share exceeds
    `max_share` (the run must fail rather than score an outage as model behaviour)."""
    statuses: dict[str, list[str]] = {}
    for model, status, err in zip(frame["model"], frame["status"], frame["error"], strict=True):
        statuses.setdefault(str(model), []).append(err or status)
    return check_statuses(statuses, max_share, "fallback calls")


def _rates(frame: pd.DataFrame, by: list[str], cols: dict[str, str], n_boot: int) -> pd.DataFrame:
    """Per group of scored answers: n and, for each boolean column, rate with a 95% CI."""
    rows = []
    for key, g in scored(frame).groupby(by, sort=True):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row["n"] = len(g)
        for col, label in cols.items():
            rate, lo, hi = rate_ci_or_nan(g[col])
            row.update({label: rate, f"{label} lo": lo, f"{label} hi": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def adherence_table(frame: pd.DataFrame, n_boot: int = 1000) -> pd.DataFrame:
    """By model, variant and language: the model's own disclaimer (exact, normalized) and the
    server-painted one, each with a 95% CI."""
    cols = {
        "model_exact": "model exact",
        "model_normalized": "model normalized",
        "painted_exact": "painted",
    }
    return _rates(frame, ["model", "variant", "language"], cols, n_boot)


def check_painted(frame: pd.DataFrame) -> float:
    """The server-painted rate over every scored answer; raises when any painted text lacks the
    exact disclaimer (it must be 100%: this is checked, not assumed)."""
    frame = scored(frame)
    if frame.empty:
        raise CitegateError("no answers: nothing to check")
    missing = frame.loc[~frame["painted_exact"].astype(bool), ["model", "variant", "qid"]]
    if len(missing):
        raise CitegateError(
            f"painted text without the disclaimer: {missing.to_dict('records')[:5]}"
        )
    return float(frame["painted_exact"].mean())


def scope_table(frame: pd.DataFrame, n_boot: int = 1000) -> pd.DataFrame:
    """By model, variant and language: parse rate, in-scope accuracy against the labels (an
    unparsed reply counts as wrong), and the answer written in the user's language."""
    cols = {
        "parsed": "parsed",
        "in_scope_correct": "in-scope accuracy",
        "answer_lang_match": "language match",
    }
    return _rates(frame, ["model", "variant", "language"], cols, n_boot)


def scope_by_label(frame: pd.DataFrame, n_boot: int = 1000) -> pd.DataFrame:
    """By model and label: share judged in scope (out_of_corpus should be, out_of_scope not)."""
    frame = scored(frame)
    sub = frame.assign(said_in_scope=frame["in_scope_pred"] == 1.0)
    return _rates(
        sub, ["model", "label"], {"said_in_scope": "said in scope", "parsed": "parsed"}, n_boot
    )


def _admitted_flags(g: pd.DataFrame) -> np.ndarray:
    """One flag per distinct probe hit: admitted or not."""
    parts = [
        np.r_[np.ones(a, bool), np.zeros(h - a, bool)]
        for a, h in zip(g["admitted"], g["probe_hits"], strict=True)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, bool)


def probe_table(frame: pd.DataFrame, admission: float, n_boot: int = 1000) -> pd.DataFrame:
    """By model and variant: answers declined and taken to the fallback; over the fallback ones,
    probes per answer, distinct probe hits, and the share of hits admitted at cosine ≥
    `admission` (95% CI over hits; empty when nothing was searched)."""
    rows = []
    for (model, variant), g in scored(frame).groupby(["model", "variant"]):
        fb = g[g["branch"] == "fallback"]
        rate, lo, hi = rate_ci_or_nan(_admitted_flags(fb))
        rows.append(
            {
                "model": model,
                "variant": variant,
                "declined": int((g["branch"] == "decline").sum()),
                "fallback answers": len(fb),
                "with probes": int((fb["probes"] > 0).sum()),
                "probes per answer": float(fb["probes"].mean()) if len(fb) else np.nan,
                "hits per answer": float(fb["probe_hits"].mean()) if len(fb) else np.nan,
                f"admitted at {admission}": rate,
                "admitted lo": lo,
                "admitted hi": hi,
            }
        )
    return pd.DataFrame(rows)


def cost_table(frame: pd.DataFrame) -> pd.DataFrame:
    """By model, over scored answers: calls, cache hits, tokens per call, latency per uncached
    call, calls per second."""
    rows = []
    for model, g in scored(frame).groupby("model"):
        calls, fresh = int(g["calls"].sum()), int(g["uncached_calls"].sum())
        wall = float(g["latency_s"].sum())
        rows.append(
            {
                "model": model,
                "answers": len(g),
                "calls": calls,
                "repairs": int((g["calls"] > 1).sum()),
                "uncached calls": fresh,
                "prompt tokens/call": g["prompt_tokens"].sum() / max(calls, 1),
                "completion tokens/call": g["completion_tokens"].sum() / max(calls, 1),
                "latency s/call": wall / fresh if fresh else np.nan,
                "calls/s": fresh / wall if wall else np.nan,
            }
        )
    return pd.DataFrame(rows)


def examples(frame: pd.DataFrame, per_group: int = 1) -> pd.DataFrame:
    """A few answers per model, variant and language: what the model wrote and what is shown."""
    cols = [
        "model",
        "variant",
        "language",
        "label",
        "status",
        "model_exact",
        "question",
        "model_text",
        "shown_text",
    ]
    return scored(frame).groupby(["model", "variant", "language"]).head(per_group)[cols]


def headline(frame: pd.DataFrame) -> dict[str, float]:
    """MLflow metrics over scored answers: the painted rate, the model's own exact/normalized
    rates per model, variant (and language), scope accuracy, parse rate, language match, probes,
    tokens, latency; and per model the share of calls that failed (`model_error_share.<model>`)."""
    out: dict[str, float] = {}
    for model, g in frame.groupby("model"):
        out[f"model_error_share.{model}"] = float((g["status"] == MODEL_ERROR).mean())
    frame = scored(frame)
    out["painted_disclaimer_rate"] = float(frame["painted_exact"].mean())
    for (model, variant), g in frame.groupby(["model", "variant"]):
        out[f"model_exact_rate.{model}.{variant}"] = g["model_exact"].mean()
        out[f"model_normalized_rate.{model}.{variant}"] = g["model_normalized"].mean()
        for lang, gl in g.groupby("language"):
            out[f"model_exact_rate.{model}.{variant}.{lang}"] = gl["model_exact"].mean()
            out[f"model_normalized_rate.{model}.{variant}.{lang}"] = gl["model_normalized"].mean()
    for model, g in frame.groupby("model"):
        fb = g[g["branch"] == "fallback"]
        out[f"in_scope_accuracy.{model}"] = g["in_scope_correct"].mean()
        out[f"parse_rate.{model}"] = g["parsed"].mean()
        out[f"language_match.{model}"] = g["answer_lang_match"].mean()
        out[f"probes_per_answer.{model}"] = fb["probes"].mean() if len(fb) else np.nan
        hits = fb["probe_hits"].sum()
        out[f"admitted_share.{model}"] = fb["admitted"].sum() / hits if hits else np.nan
        out[f"tokens_per_call.{model}"] = (g["prompt_tokens"] + g["completion_tokens"]).sum() / g[
            "calls"
        ].sum()
        fresh = g["uncached_calls"].sum()
        out[f"latency_s_per_call.{model}"] = g["latency_s"].sum() / fresh if fresh else np.nan
    return {k: float(v) for k, v in out.items() if np.isfinite(v)}


def config_table(cfg: PipelineConfig, models: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The run's pipeline config, models and study parameters as a two-column table."""
    d: dict[str, Any] = {**cfg.to_dict(), **{f"param {k}": v for k, v in params.items()}}
    for r in models.to_dict("records"):
        d[f"model {r['model']}"] = r["why"]
    return pd.DataFrame({"key": list(d), "value": [str(v) for v in d.values()]})


def model_notes(models: pd.DataFrame) -> dict[str, str]:
    """Run facts for tags: the models used and the ones skipped (with why)."""
    used = models[models["used"]]
    skipped = models[~models["used"]]
    return {
        "models": ",".join(f"{m} ({w})" for m, w in zip(used["model"], used["why"], strict=True)),
        "skipped_models": "; ".join(
            f"{m}: {w}" for m, w in zip(skipped["model"], skipped["why"], strict=True)
        ),
    }
