"""Notebook 04, second part: are the claims of an answer supported by what it cites?

Three kinds of answer are checked with `citations.validate_citations` (claims split per sentence,
claims and chunks embedded in one batched call each, a claim is supported when a cited chunk
reaches the cosine threshold; markers naming a source never offered are fabricated):

- `outline`: the production grounded reply. The model picks note numbers per thesis; the parser
  drops numbers no note carries (counted here as fabricated markers).
- `composed`: the related design. The model writes prose over numbered sources, citing `[n]` and
  tagging sentences [SOURCED]/[INFERRED]; `citations.audit_sourced` downgrades [SOURCED] claims
  that cite nothing retrieved.
- `fallback`: a fallback answer. It was offered no source, so every marker it writes is
  fabricated; its probes' admitted hits are attached as optional citations, and a claim counts as
  supported when one of them reaches the threshold.

A shuffled control repeats the support test with the cited numbers pointing at ANOTHER question's
sources: a threshold that passes those as often as the real ones does not separate support from
topical similarity.

A grounded answer whose model call failed (status `llm_error`) is no answer of the model's: it is
counted in the table's "model errors" column and left out of every count and rate, and
`check_model_errors` stops the run when such failures exceed the allowed share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.errors import MAX_MODEL_ERROR_SHARE, MODEL_ERROR
from citegate.core.errors import check_model_errors as check_statuses
from citegate.core.types import Status
from citegate.evaluation.metrics import auroc_ci, rate_ci_or_nan
from citegate.pipeline.citations import DEFAULT_THRESHOLD, audit_sourced, validate_citations
from citegate.pipeline.compose import compose
from citegate.pipeline.fallback import NO_ANSWER, outline_call

FORMATS = ("outline", "composed", "fallback")
MAX_SOURCES = 5


@dataclass(frozen=True)
class GroundedItem:
    """An answerable question, the gate's decision, and its final notes with their texts."""

    set: str
    question: Any
    decision: str
    notes: tuple[Any, ...]


@dataclass
class Answer:
    """One answer to check: its text, the sources offered to the model (id -> text), the ids
    counted as retrieved for the audit, and facts of how it was made."""

    model: str
    format: str
    set: str
    qid: str
    language: str
    text: str
    offered: dict[str, str]
    status: str
    dropped: int = 0
    attached: dict[str, str] = field(default_factory=dict)
    group: str = ""  # the question's gold group (verse): the shuffled control avoids it


# --------------------------------------------------------------------------- grounded answers


def hydrate(conn: Any, notes: Sequence[Any]) -> tuple[Any, ...]:
    """Notes with their texts from the database (cached traces keep no text)."""
    from citegate.research.ltr_training import fetch_texts

    texts = fetch_texts(conn, [c.fragment_id for c in notes if not c.text])
    return tuple(c if c.text else replace(c, text=texts.get(c.fragment_id, "")) for c in notes)


def grounded_items(fq: Any, cfg: PipelineConfig, reranker: str = "none") -> list[GroundedItem]:
    """Every sampled answerable question through the cached production retrieval (one trace per
    question, replayed under `cfg` on its corpus build), notes hydrated with their texts."""
    from citegate.models.embed import default_embedder
    from citegate.models.rerank import make_reranker
    from citegate.pipeline.retrieve import replay
    from citegate.research.traces import traces_for
    from citegate.store.db import connect

    emb = default_embedder()
    cfg = cfg.replace(embedder=emb.id, reranker=reranker)
    rr = make_reranker(cfg.reranker)
    out: list[GroundedItem] = []
    with connect() as conn:
        for corpus in sorted(set(fq.corpora.values())):
            set_cfg = cfg.replace(corpora=[corpus])
            items = [it for it in fq.items if it.corpus == corpus]
            traces = traces_for(conn, [it.question for it in items], set_cfg, emb, rr)
            for it in items:
                res = replay(traces[it.question.id], set_cfg)
                notes = hydrate(conn, res.notes)
                out.append(GroundedItem(it.set, it.question, res.decision, notes))
    return out


def outline_answer(outline: Any) -> str:
    """The outline as the answer text checked: one line per thesis with its note numbers (the
    production reply shows the notes' addresses instead; the numbers are what the model chose)."""
    return "\n".join(
        f"- {t} [{', '.join(str(r) for r in refs)}]"
        for t, refs in zip(outline.theses, outline.cited, strict=True)
    )


def answer_item(
    client: Any, model: str, item: GroundedItem, max_tokens: int, json_mode: str
) -> list[Answer]:
    """The outline and the composed answer for one question (none when the gate bailed out)."""
    q = item.question
    base = {"model": model, "set": item.set, "qid": q.id, "language": q.language, "group": q.group}
    if item.decision == "insufficient":
        return [
            Answer(format=f, text="", offered={}, status="gate: bail out", **base)
            for f in FORMATS[:2]
        ]
    shown = item.notes[:MAX_SOURCES]
    offered = {str(i): c.text for i, c in enumerate(shown, 1)}
    plan = outline_call(client, q.text, shown, max_tokens=max_tokens, json_mode=json_mode)
    written = compose(client, q.text, [c.text for c in shown], max_tokens=max_tokens)
    return [
        Answer(
            format="outline",
            text=outline_answer(plan),
            offered=offered,
            status=plan.status,
            dropped=plan.dropped,
            **base,
        ),
        Answer(
            format="composed",
            text=written.text,
            offered=written.offered,
            status=written.status,
            **base,
        ),
    ]


def run_grounded(
    items: Sequence[GroundedItem],
    models: Sequence[str],
    *,
    max_tokens: int = 160,
    json_mode: str = "schema",
    progress: bool = False,
) -> list[Answer]:
    """Outline and composed answers of every available model (missing models are skipped; the
    fallback study's models table says why). Every call is cached."""
    from tqdm.auto import tqdm

    from citegate.studies.fallback import model_client, resolve_models

    usable, _ = resolve_models(models)
    answers: list[Answer] = []
    for name, path in usable.items():
        with model_client(name, path) as client:
            for item in tqdm(items, desc=f"{name} grounded", disable=not progress):
                answers += answer_item(client, name, item, max_tokens, json_mode)
    return answers


def check_model_errors(
    answers: Sequence[Answer], max_share: float = MAX_MODEL_ERROR_SHARE
) -> dict[str, int]:
    """Failed grounded calls (outline and composed) per model; `ModelFailure` beyond
    `max_share`. Answers that made no call (the gate bailed out) do not count."""
    statuses: dict[str, list[str]] = {}
    for a in answers:
        if a.format in FORMATS[:2] and a.status != "gate: bail out":
            statuses.setdefault(a.model, []).append(a.status)
    return check_statuses(statuses, max_share, "grounded answer calls")


# --------------------------------------------------------------------------- fallback answers


def fallback_answers(frame: pd.DataFrame) -> list[Answer]:
    """The fallback branch's answers of notebook 04's `answers` table, with their admitted hits
    (fragment ids) to be attached as optional citations. Nothing was offered to the model. The
    server's fixed "no usable answer" text (an unparsed reply) is no claim of the model's, and a
    failed call (branch `error`, status `llm_error`) is no answer at all."""
    from citegate.research.ltr_training import fetch_texts
    from citegate.store.db import connect

    keep = (frame["branch"] == "fallback") & (frame["status"] != MODEL_ERROR)
    rows = frame[keep].to_dict("records")
    ids = {int(i) for r in rows for i in str(r["admitted_ids"]).split()}
    with connect() as conn:
        texts = fetch_texts(conn, ids)
    return [
        Answer(
            model=r["model"],
            format="fallback",
            set=r["set"],
            qid=r["qid"],
            language=r["language"],
            text="" if r["answer"] in NO_ANSWER.values() else r["answer"],
            offered={},
            status=r["status"],
            attached={
                f"A{n}": texts[int(i)] for n, i in enumerate(str(r["admitted_ids"]).split(), 1)
            },
        )
        for r in rows
    ]


# --------------------------------------------------------------------------- checking


def _control(answers: Sequence[Answer]) -> list[dict[str, str]]:
    """Each answer's sources swapped for those of the next answer (same model and format) to a
    different question: the shuffled control."""
    out: list[dict[str, str]] = [{} for _ in answers]
    groups: dict[tuple[str, str], list[int]] = {}
    for n, a in enumerate(answers):
        groups.setdefault((a.model, a.format), []).append(n)
    for members in groups.values():
        for pos, n in enumerate(members):
            others = members[pos + 1 :] + members[:pos]
            donor = next((m for m in others if _unrelated(answers[m], answers[n])), None)
            if donor is not None:
                out[n] = answers[donor].offered or answers[donor].attached
    return out


def _unrelated(a: Answer, b: Answer) -> bool:
    """Different questions with different gold groups (when known)."""
    return a.qid != b.qid and (not a.group or a.group != b.group)


def _sources(a: Answer) -> dict[str, str]:
    """What a claim is checked against: the offered sources, or the attached citations."""
    return a.offered or a.attached


def check_answers(
    answers: Sequence[Answer], embedder: Any, threshold: float = DEFAULT_THRESHOLD
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per answer, one row per claim): support, fabricated markers, the audit, and the
    shuffled control's verdicts. Answers without text (bail-outs, failed calls) are counted only."""
    controls = _control(answers)
    rows, claims = [], []
    for a, control in zip(answers, controls, strict=True):
        if not a.text.strip():
            rows.append(_answer_row(a, None, None, None))
            continue
        report = validate_citations(a.text, _sources(a), embedder, threshold)
        shuffled = validate_citations(a.text, control, embedder, threshold) if control else None
        audit = audit_sourced(a.text, a.offered) if a.format == "composed" else None
        rows.append(_answer_row(a, report, shuffled, audit))
        claims += _claim_rows(a, report, shuffled)
    return pd.DataFrame(rows), pd.DataFrame(claims)


def _answer_row(a: Answer, report: Any, shuffled: Any, audit: Any) -> dict[str, Any]:
    """One answer's totals."""
    fabricated = (report.fabricated_markers if report else 0) + a.dropped
    if a.format == "fallback" and report is not None:
        fabricated = sum(len(r.markers) for r in report.rows)
    return {
        "model": a.model,
        "format": a.format,
        "set": a.set,
        "qid": a.qid,
        "language": a.language,
        "status": Status.parse(a.status).kind,
        "answered": report is not None,
        "claims": report.claims if report else 0,
        "cited": report.cited if report else 0,
        "supported": _supported(a, report) if report else 0,
        "shuffled_supported": _supported(a, shuffled) if shuffled else 0,
        "fabricated_markers": fabricated,
        "sources": len(_sources(a)),
        "sourced": audit.sourced if audit else np.nan,
        "inferred": audit.inferred if audit else np.nan,
        "downgraded": audit.downgraded if audit else np.nan,
        "untagged": audit.untagged if audit else np.nan,
        "text": a.text[:400],
    }


def _supported(a: Answer, report: Any) -> int:
    """Supported claims: a cited offered chunk reaches the threshold; for a fallback answer, any
    attached citation does (every claim is implicitly backed by all of them)."""
    if a.format != "fallback":
        return report.supported
    return sum(
        1
        for r in report.rows
        if r.nearest_offered is not None and r.nearest_offered >= report.threshold
    )


def _claim_rows(a: Answer, report: Any, shuffled: Any) -> list[dict[str, Any]]:
    """Per-claim cosines: the claim's best cited (or, for fallback, attached) cosine, and the
    same under the shuffled control."""
    fallback = a.format == "fallback"
    out = []
    for n, r in enumerate(report.rows):
        s = shuffled.rows[n] if shuffled else None
        out.append(
            {
                "model": a.model,
                "format": a.format,
                "language": a.language,
                "qid": a.qid,
                "claim": r.text[:200],
                "status": "attached" if fallback else r.status,
                "cosine": r.nearest_offered if fallback else r.best_cosine,
                "shuffled_cosine": (s.nearest_offered if fallback else s.best_cosine)
                if s
                else None,
            }
        )
    return out


# --------------------------------------------------------------------------- tables


def _support_flags(g: pd.DataFrame, column: str, threshold: float) -> np.ndarray:
    """Supported-or-not of the claims that count: cited claims (fallback: claims of answers with
    attached citations), judged on `column` (real or shuffled cosine)."""
    counted = g[_judged(g)]
    return (counted[column].fillna(-1.0) >= threshold).to_numpy()


def citation_table(
    answers: pd.DataFrame, claims: pd.DataFrame, threshold: float, n_boot: int = 1000
) -> pd.DataFrame:
    """Per model, answer format and language: answers, claims, cited share, supported share (95%
    CI over claims) beside the shuffled control, fabricated markers per answer; failed calls are
    counted under "model errors" and left out of everything else."""
    rows = []
    for (model, fmt, lang), every in answers.groupby(["model", "format", "language"]):
        a = every[every["status"] != MODEL_ERROR]
        c = (
            claims[
                (claims["model"] == model)
                & (claims["format"] == fmt)
                & (claims["language"] == lang)
            ]
            if len(claims)
            else claims
        )
        said = a[a["answered"]]
        flags = _support_flags(c, "cosine", threshold) if len(c) else np.array([], bool)
        shuffled = _support_flags(c, "shuffled_cosine", threshold) if len(c) else np.array([], bool)
        rate, lo, hi = rate_ci_or_nan(flags)
        rows.append(
            {
                "model": model,
                "format": fmt,
                "language": lang,
                "answers": len(a),
                "model errors": len(every) - len(a),
                "with text": len(said),
                "claims": int(said["claims"].sum()),
                "cited share": said["cited"].sum() / said["claims"].sum()
                if said["claims"].sum()
                else np.nan,
                "claims judged": len(flags),
                "supported share": rate,
                "lo": lo,
                "hi": hi,
                "shuffled control": float(shuffled.mean()) if len(shuffled) else np.nan,
                "fabricated markers/answer": said["fabricated_markers"].mean()
                if len(said)
                else np.nan,
                "answers with fabricated": (said["fabricated_markers"] > 0).mean()
                if len(said)
                else np.nan,
            }
        )
    return pd.DataFrame(rows)


AUDIT_COLUMNS = [
    "model",
    "language",
    "answers",
    "claims",
    "tagged SOURCED",
    "downgraded",
    "downgraded share",
    "INFERRED after audit",
    "untagged share",
]


def audit_table(answers: pd.DataFrame) -> pd.DataFrame:
    """The [SOURCED]/[INFERRED] audit of the composed answers, per model and language: claims
    tagged [SOURCED] by the model, how many were downgraded, [INFERRED] after the audit, untagged."""
    said = answers[(answers["format"] == "composed") & answers["answered"]]
    rows = []
    for (model, lang), g in said.groupby(["model", "language"]):
        tagged = g["sourced"].sum() + g["downgraded"].sum()
        rows.append(
            {
                "model": model,
                "language": lang,
                "answers": len(g),
                "claims": int(g["claims"].sum()),
                "tagged SOURCED": int(tagged),
                "downgraded": int(g["downgraded"].sum()),
                "downgraded share": g["downgraded"].sum() / tagged if tagged else np.nan,
                "INFERRED after audit": int(g["inferred"].sum()),
                "untagged share": g["untagged"].sum() / g["claims"].sum()
                if g["claims"].sum()
                else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=AUDIT_COLUMNS)  # columns even when nothing was composed


def threshold_sweep(
    claims: pd.DataFrame, thresholds: Sequence[float], n_boot: int = 1000
) -> pd.DataFrame:
    """Per answer format, pooled over models: the share of judged claims supported at each
    threshold with their real citations and with shuffled ones, and the AUROC of the cosine for
    telling the two apart (claims of one answer resampled together)."""
    rows = []
    for fmt, g in claims.groupby("format") if len(claims) else []:
        judged = g[_judged(g)]
        real = judged["cosine"].fillna(-1.0).to_numpy(float)  # citing only fabricated: never
        fake = judged["shuffled_cosine"].dropna().to_numpy(float)
        auc = np.nan
        if len(real) and len(fake):
            groups = [*judged["qid"], *judged.loc[judged["shuffled_cosine"].notna(), "qid"]]
            auc = auroc_ci(
                np.r_[real, fake],
                np.r_[np.ones(len(real)), np.zeros(len(fake))],
                n_boot=n_boot,
                groups=groups,
            )
        for t in thresholds:
            rows.append(
                {
                    "format": fmt,
                    "threshold": t,
                    "claims": len(real),
                    "supported (cited)": float((real >= t).mean()) if len(real) else np.nan,
                    "supported (shuffled)": float((fake >= t).mean()) if len(fake) else np.nan,
                    "AUROC cited vs shuffled": getattr(auc, "auroc", np.nan),
                    "AUROC lo": getattr(auc, "lower", np.nan),
                    "AUROC hi": getattr(auc, "upper", np.nan),
                }
            )
    return pd.DataFrame(rows)


def _judged(g: pd.DataFrame) -> pd.Series:
    """Claims whose support is judged: cited claims (fallback: claims of answers with attached
    citations)."""
    fallback = g["format"] == "fallback"
    return (fallback & g["cosine"].notna()) | (~fallback & (g["status"] != "uncited"))


def plot_support(claims: pd.DataFrame, threshold: float) -> Any:
    """Per answer format: cosine of each claim to what it cites, against the shuffled control,
    with the support threshold marked."""
    import matplotlib.pyplot as plt

    formats = [f for f in FORMATS if len(claims) and (claims["format"] == f).any()] or list(FORMATS)
    fig, axes = plt.subplots(1, len(formats), figsize=(4.2 * len(formats), 3.4), squeeze=False)
    bins = np.linspace(0.5 * min(threshold, 0.6), 1.0, 26)
    for ax, fmt in zip(axes[0], formats, strict=True):
        g = claims[claims["format"] == fmt] if len(claims) else claims
        for col, label, colour in (
            ("cosine", "cited", "tab:blue"),
            ("shuffled_cosine", "shuffled control", "tab:orange"),
        ):
            values = g[col].dropna().to_numpy(float) if len(g) else np.array([])
            ax.hist(
                np.clip(values, bins[0], 1.0),
                bins=bins,
                alpha=0.55,
                color=colour,
                label=f"{label} (n={len(values)})",
            )
        ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:.2f}")
        ax.set(title=fmt, xlabel="cosine claim ↔ cited chunk", ylabel="claims")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def examples(answers: pd.DataFrame, per_group: int = 1) -> pd.DataFrame:
    """A few checked answers per model and format, with their verdict counts."""
    said = answers[answers["answered"]]
    cols = ["model", "format", "language", "claims", "cited", "supported", "fabricated_markers"]
    return said.groupby(["model", "format"]).head(per_group)[[*cols, "text"]]


# --------------------------------------------------------------------------- metrics, conclusion


def headline(
    table: pd.DataFrame, audit: pd.DataFrame, sweep: pd.DataFrame | None = None
) -> dict[str, float]:
    """MLflow metrics, pooled over languages: supported share (and its shuffled control) and
    fabricated markers per answer per model and format; the audit's downgrade share per model;
    per format, the AUROC of the cited cosine against the shuffled one."""
    out: dict[str, float] = {}
    if sweep is not None and len(sweep):
        for fmt, g in sweep.groupby("format"):
            out[f"citation_auroc_vs_shuffled.{fmt}"] = g["AUROC cited vs shuffled"].iloc[0]
    for (model, fmt), g in table.groupby(["model", "format"]):
        w = g["claims judged"]
        if w.sum():
            out[f"supported_claim_share.{model}.{fmt}"] = np.average(
                g["supported share"].fillna(0), weights=w
            )
            out[f"shuffled_supported_share.{model}.{fmt}"] = np.average(
                g["shuffled control"].fillna(0), weights=w
            )
        said = g["with text"]
        if said.sum():
            out[f"fabricated_markers_per_answer.{model}.{fmt}"] = np.average(
                g["fabricated markers/answer"].fillna(0), weights=said
            )
    for model, g in audit.groupby("model"):
        tagged = g["tagged SOURCED"].sum()
        if tagged:
            out[f"sourced_downgrade_share.{model}"] = g["downgraded"].sum() / tagged
    return {k: float(v) for k, v in out.items() if np.isfinite(v)}


def conclusion(
    table: pd.DataFrame, audit: pd.DataFrame, threshold: float, sweep: pd.DataFrame | None = None
) -> str:
    """Markdown conclusion from this run's numbers: every sentence that states a fact is chosen
    by the measured value it reports."""
    lines = ["## Conclusion: citations", ""]
    pooled = headline(table, audit)
    lines += _error_lines(table)
    for (model, fmt), g in table.groupby(["model", "format"]):
        judged = int(g["claims judged"].sum())
        real = pooled.get(f"supported_claim_share.{model}.{fmt}")
        fake = pooled.get(f"shuffled_supported_share.{model}.{fmt}")
        fab = pooled.get(f"fabricated_markers_per_answer.{model}.{fmt}", float("nan"))
        if real is None:
            lines.append(
                f"- {model} / {fmt}: no claim could be judged ({int(g['with text'].sum())} answers with text)."
            )
            continue
        lines.append(
            f"- {model} / {fmt}: {real:.0%} of {judged} judged claims reach cosine {threshold:.2f} "
            f"with a chunk they cite; with the citations shuffled to another question's sources "
            f"{fake:.0%} still do. Fabricated markers per answer: {fab:.2f}."
        )
    for r in audit.to_dict("records"):
        untagged = (
            "no claim to tag"
            if not np.isfinite(r["untagged share"])
            else f"{r['untagged share']:.0%} of claims carried no tag"
        )
        lines.append(
            f"- Audit, {r['model']} / {r['language']}: {r['downgraded']} of {r['tagged SOURCED']} "
            f"[SOURCED] claims cited nothing retrieved and were downgraded to [INFERRED]; "
            f"{untagged}."
        )
    lines += _control_lines(pooled, threshold)
    for fmt, g in sweep.groupby("format") if sweep is not None and len(sweep) else []:
        lines.append(_sweep_line(str(fmt), g.sort_values("threshold").iloc[-1]))
    return "\n".join(lines)


def _error_lines(table: pd.DataFrame) -> list[str]:
    """Failed grounded calls per model and format (left out of every number here)."""
    if "model errors" not in table or not len(table):
        return []
    lines = []
    for (model, fmt), g in table.groupby(["model", "format"]):
        failed, made = (
            int(g["model errors"].sum()),
            int(g["model errors"].sum() + g["answers"].sum()),
        )
        if failed:
            lines.append(
                f"- {model} / {fmt}: {failed} of {made} model calls failed; they are left out of "
                "every number below."
            )
    return lines


def _control_lines(pooled: dict[str, float], threshold: float) -> list[str]:
    """Real against shuffled citations, per (model, format) cell: the largest difference, which
    way it goes, and whether either passes the threshold at all."""
    cells = {
        k.removeprefix("supported_claim_share."): (
            v,
            pooled[k.replace("supported_claim", "shuffled_supported")],
        )
        for k, v in pooled.items()
        if k.startswith("supported_claim_share.")
    }
    if not cells:
        return []
    name, (real, fake) = max(cells.items(), key=lambda kv: abs(kv[1][0] - kv[1][1]))
    gap = real - fake
    if abs(gap) >= 0.15:
        better = (
            "Real citations beat shuffled ones" if gap > 0 else "Shuffled citations beat real ones"
        )
        return [
            f"- {better} by {abs(gap):.0%} in {name} ({real:.0%} vs {fake:.0%} of judged claims "
            f"at {threshold:.2f}), the largest difference of any cell."
        ]
    fakes = [f for _, f in cells.values()]
    head = (
        f"- Real and shuffled citations differ by at most {abs(gap):.0%} in every cell "
        f"(largest: {name}, {real:.0%} vs {fake:.0%})"
    )
    if min(fakes) >= 0.5:
        return [
            head + f": claims clear {threshold:.2f} against another question's sources too, so "
            "the test is a floor against off-topic citations, not evidence that a source states "
            "the claim."
        ]
    if max(fakes) < 0.5 and max(r for r, _ in cells.values()) < 0.5:
        return [
            head + f": few claims clear {threshold:.2f} with either, so the test tells "
            "neither apart at this threshold."
        ]
    return [head + ": at this threshold the test does not tell real citations from shuffled ones."]


def _sweep_line(fmt: str, top: pd.Series) -> str:
    """The AUROC of cited against shuffled cosines, worded by where its interval lies."""
    auc, lo, hi = top["AUROC cited vs shuffled"], top["AUROC lo"], top["AUROC hi"]
    at = (
        f"at {top['threshold']:.2f}, {top['supported (cited)']:.0%} of cited and "
        f"{top['supported (shuffled)']:.0%} of shuffled claims pass"
    )
    if not np.isfinite(auc):
        return f"- {fmt}: no AUROC of cited against shuffled citations (one side empty); {at}."
    ci = f"AUROC {auc:.2f}, 95% CI {lo:.2f}–{hi:.2f}, {int(top['claims'])} claims"
    if lo > 0.5:
        verdict = "tells real from shuffled citations apart better than chance"
    elif hi < 0.5:
        verdict = "ranks shuffled citations ABOVE real ones"
    else:
        verdict = "does not tell real from shuffled citations apart (the interval includes 0.5)"
    return f"- {fmt}: the cited cosine {verdict} ({ci}); {at}."
