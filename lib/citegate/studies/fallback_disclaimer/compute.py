"""Notebook 04's numbers: one row per fallback answer, and the tables and metrics made from them.

Pure functions of the answer frame (no database, model or file); failed calls (`llm_error`) are
left out of every rate by `scored`. `BAR` and `bar_table` judge each model against the fallback
role's bar: a model that fails it does not get the role (its offline default runs instead).
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
from citegate.pipeline.fallback import detect_language, paint
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS
from citegate.research.verdicts import VERDICT_COLUMNS
from citegate.studies.fallback_disclaimer.citation.compute import threshold_sweep
from citegate.studies.fallback_disclaimer.disclaimer import disclaimer_present


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


# --------------------------------------------------------------------------- the fallback bar
#
# A generative role runs only on a model that passed the bar its notebook measures; this is the
# corpus fallback's. Every criterion is judged on the prompt variant production sends, over the
# scored answers (failed calls are no behaviour). A rate passes on the lower bound of its Wilson
# 95% interval, never on the point estimate: a few lucky answers must not certify a model. With
# the notebook's default sample (20 questions per variant) a model right every time has a lower
# bound of 0.84, so a 0.80 bar is reachable there; the `tiny` profile cannot pass, by design.

PRODUCTION_VARIANT = DEFAULT_OPTIONS.variant  # the prompt variant every production turn sends

# The scope verdict decides between answering from general knowledge and declining. The sample is
# balanced between in-scope (`out_of_corpus`) and out-of-scope questions, so a model that always
# says "in scope" scores 0.5; a wrong verdict either declines a question the assistant covers or
# answers trivia: at most one in four wrong, with 95% confidence.
IN_SCOPE_ACCURACY_MIN = 0.75
# An unparsed reply (after the one repair round-trip) shows the fixed "no usable answer" text: the
# turn is lost, where the offline default ("I don't know" with the nearest passages) never is. A
# model losing more than one turn in five does worse than the default it would replace.
PARSE_RATE_MIN = 0.80
# The answer is shown to a user who asked in that language: one in the wrong language is useless
# to them. Judged over parsed replies (an unparsed one already fails the parse rate) with the
# pipeline's language detector, which itself errs on short answers, hence not 0.95.
LANGUAGE_MATCH_MIN = 0.80
# The disclaimer the user sees is painted by the server whatever the model wrote (`paint`), so the
# model's own adherence is moot for the guarantee: what must hold is the painted one, on every
# answer of the model (a deterministic check, not a sampled rate: one miss is a bug). The model's
# own normalized adherence stays in the table as information, not required.
PAINTED_DISCLAIMER_MIN = 1.0
# Admitted fallback citations must support the answer better than citations of an unrelated
# question do: the AUROC of the claims' cosine to their admitted citations against the shuffled
# control, with its 95% (cluster bootstrap) lower bound above chance.
CITATION_AUROC_MIN = 0.5

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Criterion:
    """One line of the bar: its name (metric key part), what it measures, its threshold, how the
    threshold is applied (`rule`) and whether failing it fails the model."""

    name: str
    label: str
    threshold: float
    rule: str  # "wilson_low>=" | "all" | "ci_low>" | "info"
    required: bool = True


BAR: tuple[Criterion, ...] = (
    Criterion("in_scope_accuracy", "in-scope accuracy", IN_SCOPE_ACCURACY_MIN, "wilson_low>="),
    Criterion("parse_rate", "parse rate", PARSE_RATE_MIN, "wilson_low>="),
    Criterion("language_match", "language match", LANGUAGE_MATCH_MIN, "wilson_low>="),
    Criterion("painted_disclaimer", "painted disclaimer", PAINTED_DISCLAIMER_MIN, "all"),
    Criterion(
        "model_disclaimer",
        "model's own disclaimer (normalized)",
        float("nan"),
        "info",
        required=False,
    ),
    Criterion(
        "citation_auroc", "fallback citations vs shuffled (AUROC)", CITATION_AUROC_MIN, "ci_low>"
    ),
)

# The bar table has the columns of a verdict table, one model at a time (no role column).
BAR_COLUMNS = VERDICT_COLUMNS[1:]


def _rate_cell(values: pd.Series) -> tuple[float, float, float, int]:
    """A rate with its Wilson 95% interval and n (NaNs and 0 when there is nothing)."""
    rate, lo, hi = rate_ci_or_nan(values)
    return float(rate), float(lo), float(hi), len(values)


def _rate_cells(g: pd.DataFrame) -> dict[str, tuple[float, float, float, int]]:
    """The rate criteria of one model's answers on one variant. Language match is judged over
    parsed replies only: an unparsed reply has no answer and already fails the parse rate."""
    return {
        "in_scope_accuracy": _rate_cell(g["in_scope_correct"]),
        "parse_rate": _rate_cell(g["parsed"]),
        "language_match": _rate_cell(g.loc[g["parsed"].astype(bool), "answer_lang_match"]),
        "painted_disclaimer": _rate_cell(g["painted_exact"]),
        "model_disclaimer": _rate_cell(g["model_normalized"]),
    }


def _citation_cell(
    claims: pd.DataFrame | None, model: str, n_boot: int
) -> tuple[float, float, float, int]:
    """AUROC of the model's fallback claims' cosine to their admitted citations against the
    shuffled control, with its CI and the number of claims judged (the citation study's
    `threshold_sweep`, on this model's fallback claims only)."""
    if claims is None or claims.empty or "model" not in claims:
        return np.nan, np.nan, np.nan, 0
    mine = claims[(claims["model"] == model) & (claims["format"] == "fallback")]
    sweep = threshold_sweep(mine, [CITATION_AUROC_MIN], n_boot)  # the AUROC ignores the threshold
    if sweep.empty:
        return np.nan, np.nan, np.nan, 0
    r = sweep.iloc[0]
    auc, lo, hi = (float(r[k]) for k in ("AUROC cited vs shuffled", "AUROC lo", "AUROC hi"))
    return auc, lo, hi, int(r["claims"])


def _verdict(c: Criterion, value: float, lo: float, n: int) -> tuple[Any, str]:
    """(passed, reason) of one criterion; unmeasured (n == 0 or no value) never passes."""
    if c.rule == "info":
        return pd.NA, "information only: the server paints the disclaimer"
    if n == 0 or not np.isfinite(value):
        return False, NOT_MEASURED
    if c.rule == "all":
        ok = value >= c.threshold
        return ok, "" if ok else f"{value:.0%} of {n} answers, must be {c.threshold:.0%}"
    if not np.isfinite(lo):
        return False, f"{NOT_MEASURED} (no interval over {n})"
    if c.rule == "ci_low>":
        ok = lo > c.threshold
        why = f"{value:.2f} over {n} claims, 95% CI low {lo:.2f} not above {c.threshold:.2f}"
        return ok, "" if ok else why
    ok = lo >= c.threshold
    why = f"{value:.0%} of {n}, Wilson 95% low {lo:.0%} below {c.threshold:.0%}"
    return ok, "" if ok else why


def bar_table(
    frame: pd.DataFrame,
    claims: pd.DataFrame | None = None,
    models: list[str] | tuple[str, ...] | None = None,
    *,
    variant: str = PRODUCTION_VARIANT,
    n_boot: int = 1000,
) -> pd.DataFrame:
    """One row per model and criterion of `BAR`: value, 95% interval, n, threshold, rule, passed
    and why not. Rates are over the model's scored answers on `variant` (production's); the
    citation AUROC over its fallback claims in `claims` (the citation study's claim rows).
    `models` defaults to those in `frame` (one whose every call failed included); a model asked
    for but absent (not installed) is judged too, every criterion "not measured", so it fails
    rather than vanish."""
    ok = scored(frame)
    seen = sorted(frame["model"].unique()) if len(frame) else []  # failed calls too: judged
    names = list(models) if models is not None else seen
    rows = []
    for model in names:
        g = ok[(ok["model"] == model) & (ok["variant"] == variant)] if len(ok) else None
        cells = _rate_cells(g) if g is not None else {}
        cells["citation_auroc"] = _citation_cell(claims, model, n_boot)
        for c in BAR:
            value, lo, hi, n = cells.get(c.name, (np.nan, np.nan, np.nan, 0))
            passed, reason = _verdict(c, float(value), float(lo), int(n))
            rows.append(
                {
                    "model": model,
                    "criterion": c.name,
                    "label": c.label,
                    "value": float(value),
                    "ci95 low": float(lo),
                    "ci95 high": float(hi),
                    "n": int(n),
                    "threshold": c.threshold,
                    "rule": c.rule,
                    "required": c.required,
                    "passed": passed,
                    "reason": reason,
                }
            )
    table = pd.DataFrame(rows, columns=BAR_COLUMNS)
    table["passed"] = table["passed"].astype("boolean")
    return table


def bar_verdicts(table: pd.DataFrame) -> dict[str, bool]:
    """Model -> whether it passed every required criterion of the bar."""
    return {
        str(model): bool(g.loc[g["required"], "passed"].fillna(False).all())
        for model, g in table.groupby("model", sort=True)
    }


def bar_failures(table: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Model -> its failed required criteria (label, value, threshold, reason), in `BAR` order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for model, g in table.groupby("model", sort=True):
        bad = g[g["required"] & ~g["passed"].fillna(False).astype(bool)]
        out[str(model)] = bad[["criterion", "label", "value", "threshold", "reason"]].to_dict(
            "records"
        )
    return out


def bar_metrics(table: pd.DataFrame) -> dict[str, float]:
    """MLflow metrics of the bar: `fallback_bar_passed.<model>` (1.0 / 0.0) and each measured
    criterion's value `fallback_bar.<criterion>.<model>` (unmeasured values are left out)."""
    out = {f"fallback_bar_passed.{m}": float(p) for m, p in bar_verdicts(table).items()}
    for r in table.to_dict("records"):
        if np.isfinite(r["value"]):
            out[f"fallback_bar.{r['criterion']}.{r['model']}"] = float(r["value"])
    return out
