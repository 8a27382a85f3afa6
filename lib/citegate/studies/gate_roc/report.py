"""Notebook 03's conclusion: every claim follows from a measured value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from citegate.studies.gate_roc.compute import of_corpus


def conclusion(
    aurocs: pd.DataFrame,
    design: pd.DataFrame,
    test_points: pd.DataFrame,
    rec: dict[str, float],
    target_fpr: float,
    negative: str | None = None,
) -> str:
    """Markdown conclusion of one corpus from this run's numbers: every claim follows from a
    measured value.

    `negative` is the kind the recommendation was tuned against (default: the kind of the
    `design` operating points, which the notebook computes against the same kind)."""
    body = _corpus_lines(aurocs, design, test_points, rec, target_fpr, negative)
    return "\n".join(["## Conclusion", "", *body])


def corpora_conclusion(
    aurocs: pd.DataFrame,
    design: pd.DataFrame,
    test_points: pd.DataFrame,
    shared_points: pd.DataFrame,
    recs: Mapping[str, dict[str, float]],
    target_fpr: float,
    production: str,
    languages: pd.DataFrame | None = None,
    language_rates: pd.DataFrame | None = None,
) -> str:
    """Markdown conclusion of several corpora (`per_corpus` tables): what differs between them,
    then one section per corpus with the one-corpus conclusion's lines. `shared_points` are the
    other corpora's test operating points at the production corpus's thresholds
    (`recs[production]`); `languages` the per-language AUROCs (`language_aurocs`) and
    `language_rates` the per-language answer rates (`language_answer_rates`)."""
    lines = ["## Conclusion", ""]
    lines += _comparison_lines(aurocs, test_points, shared_points, recs, production)
    for corpus, rec in recs.items():
        role = " (its thresholds are the recommendation)" if corpus == production else ""
        lines += ["", f"### {corpus}{role}", ""]
        lines += _corpus_lines(
            of_corpus(aurocs, corpus),
            of_corpus(design, corpus),
            of_corpus(test_points, corpus),
            rec,
            target_fpr,
        )
        lines += _language_lines(_rows_of(languages, corpus), _rows_of(language_rates, corpus))
    return "\n".join(lines)


def _corpus_lines(
    aurocs: pd.DataFrame,
    design: pd.DataFrame,
    test_points: pd.DataFrame,
    rec: dict[str, float],
    target_fpr: float,
    negative: str | None = None,
) -> list[str]:
    """The bullet lines of one corpus's conclusion."""
    tuned = negative or _design_negative(design)
    lines = [
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
    return lines


def _comparison_lines(
    aurocs: pd.DataFrame,
    test_points: pd.DataFrame,
    shared_points: pd.DataFrame,
    recs: Mapping[str, dict[str, float]],
    production: str,
) -> list[str]:
    """What the corpora share and where they differ: the max-cosine verdict per kind of negative
    and whether the production corpus's threshold carries over to the others."""
    cos = aurocs[aurocs["signal"] == "max_cosine"]
    lines = []
    for neg, g in cos.groupby("negatives", sort=False):
        rows = g.to_dict("records")
        verdicts = {_verdict(r) for r in rows}
        parts = "; ".join(
            f"on {r['corpus']}, AUROC {r['AUROC']:.3f} (CI {r['CI low']:.3f}–{r['CI high']:.3f}): "
            f"{_VERDICTS[_verdict(r)]}"
            for r in rows
        )
        line = f"- Max cosine against **{neg}** questions: {parts}."
        if len(rows) > 1 and len(verdicts) > 1:
            line += (
                " The same signal and embedder give different verdicts on different corpora, so "
                "how well the gate can work is a property of the corpus, not only of the embedder."
            )
        elif len(rows) > 1:
            line += " The verdict is the same on every corpus."
        lines.append(line)
    own = ", ".join(f"{c} {r['sufficient_score']:.3f}" for c, r in recs.items())
    lines.append(f"- The sufficient score each corpus's own tune split recommends: {own}.")
    lines += [
        _carry_line(c, of_corpus(test_points, c), of_corpus(shared_points, c), recs, production)
        for c in recs
        if c != production
    ]
    return lines


def _carry_line(
    corpus: str,
    own: pd.DataFrame,
    shared: pd.DataFrame,
    recs: Mapping[str, dict[str, float]],
    production: str,
) -> str:
    """One corpus's test answer and false-answer rates at its own recommended sufficient score
    and at the production corpus's."""

    def rates(points: pd.DataFrame) -> str:
        rows = points[points["point"].str.startswith("sufficient_score")].to_dict("records")
        if not rows:
            return "no test questions"
        answered = f"{rows[0]['tpr']:.1%} of answerable answered"
        false = ", ".join(f"{r['fpr']:.1%} of {r['negatives']}" for r in rows)
        return f"{answered}, {false} answered falsely"

    mine, theirs = recs[corpus]["sufficient_score"], recs[production]["sufficient_score"]
    return (
        f"- On {corpus}'s test split, at its own sufficient score {mine:.3f}: {rates(own)}; at "
        f"{production}'s {theirs:.3f} (the production recommendation): {rates(shared)}."
    )


def _rows_of(table: pd.DataFrame | None, corpus: str) -> pd.DataFrame:
    """One corpus's rows of an optional per-corpus table (empty when there is none)."""
    return pd.DataFrame() if table is None or not len(table) else of_corpus(table, corpus)


def _language_lines(languages: pd.DataFrame, rates: pd.DataFrame) -> list[str]:
    """With two or more query languages: max-cosine AUROC per language and kind of negative, the
    answerable questions' median max cosine per language, and the test answer rate per language
    at the corpus's recommended sufficient score (one threshold serves every language)."""
    if not len(languages) or languages["language"].nunique() < 2:
        return []
    per_kind = "; ".join(
        f"against {neg} "
        + ", ".join(
            f"{r['language']} {r['AUROC']:.3f} [{r['CI low']:.3f}, {r['CI high']:.3f}]"
            for r in g.to_dict("records")
        )
        for neg, g in languages.groupby("negatives", sort=False)
    )
    med = (
        languages.drop_duplicates("language")
        .set_index("language")["median max cosine, answerable"]
        .sort_values()
    )
    medians = ", ".join(f"{lang} {m:.3f}" for lang, m in med.items())
    lines = [
        f"- Max-cosine AUROC per query language: {per_kind}.",
        f"- Median max cosine of answerable questions per language: {medians} (spread "
        f"{med.max() - med.min():.3f}).",
    ]
    if len(rates):
        t = float(rates["sufficient_score"].iloc[0])
        cells = ", ".join(
            f"{r['language']} {r['answer rate']:.1%} [{r['CI low']:.1%}, {r['CI high']:.1%}] "
            f"(n={r['answerable']})"
            for r in rates.to_dict("records")
        )
        lines.append(
            f"- Answerable test questions answered at the recommended sufficient score {t:.3f}, "
            f"per language: {cells}."
        )
    return lines


_VERDICTS = {
    "separates": "it separates answerable from them",
    "chance": "no better than chance (the interval includes 0.5)",
    "inverted": "it ranks them *above* answerable ones, worse than chance",
}


def _verdict(r: Mapping[str, Any]) -> str:
    """ "separates", "chance" or "inverted", judged by the AUROC's 95% CI against 0.5."""
    if r["CI low"] > 0.5:
        return "separates"
    if r["CI high"] < 0.5:
        return "inverted"
    return "chance"


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
