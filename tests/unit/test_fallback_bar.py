"""The fallback role's bar (notebook 04) without a model or a database: a model passing every
criterion passes; failing any one fails and names it; an unmeasured criterion fails as "not
measured"; rates are judged on their Wilson lower bound; the report, metrics and `bar.json` say
the same as the table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from citegate.core.verdicts import read_verdict, write_verdict
from citegate.studies import fallback_disclaimer as fs
from citegate.studies.fallback_disclaimer import compute

GOOD = "good"
VARIANT = compute.PRODUCTION_VARIANT


def answers(model: str = GOOD, n: int = 40, **wrong: int) -> pd.DataFrame:
    """`n` scored answers of `model` on production's variant, all right except the first
    `wrong[column]` rows of each named boolean column."""
    cols = ["in_scope_correct", "parsed", "answer_lang_match", "painted_exact", "model_normalized"]
    data: dict[str, Any] = {c: [i >= wrong.get(c, 0) for i in range(n)] for c in cols}
    return pd.DataFrame(
        {
            "model": model,
            "variant": VARIANT,
            "status": "ok",
            "error": "",
            "qid": [f"q{i}" for i in range(n)],
            **data,
        }
    )


def claims(model: str = GOOD, n: int = 30, real: float = 0.9, fake: float = 0.1) -> pd.DataFrame:
    """Fallback claims of `model`, one per question: cosine to the admitted citations `real`
    (plus jitter) and to a shuffled control's `fake`; equal values make an AUROC of 0.5."""
    jitter = np.linspace(0.0, 0.05, n)
    return pd.DataFrame(
        {
            "model": model,
            "format": "fallback",
            "language": "en",
            "qid": [f"q{i}" for i in range(n)],
            "claim": "c",
            "status": "attached",
            "cosine": real + jitter,
            "shuffled_cosine": fake + jitter,
        }
    )


def row(table: pd.DataFrame, model: str, criterion: str) -> dict[str, Any]:
    """The table's row of one model and criterion."""
    hit = table[(table["model"] == model) & (table["criterion"] == criterion)]
    assert len(hit) == 1
    return hit.iloc[0].to_dict()


def test_a_model_passing_every_criterion_passes() -> None:
    table = fs.bar_table(answers(), claims(), n_boot=200)
    assert set(table["criterion"]) == {c.name for c in fs.BAR}
    assert fs.bar_verdicts(table) == {GOOD: True}
    required = table[table["required"]]
    assert required["passed"].all() and (required["reason"] == "").all()
    auc = row(table, GOOD, "citation_auroc")
    assert auc["value"] == pytest.approx(1.0) and auc["ci95 low"] > 0.5 and auc["n"] == 30
    assert fs.bar_metrics(table)[f"fallback_bar_passed.{GOOD}"] == 1.0
    assert fs.bar_metrics(table)[f"fallback_bar.parse_rate.{GOOD}"] == 1.0
    assert "**good passed the fallback bar**" in "\n".join(fs.bar_lines(table))


@pytest.mark.parametrize(
    ("criterion", "column", "wrong"),
    [
        ("in_scope_accuracy", "in_scope_correct", 20),
        ("parse_rate", "parsed", 15),
        ("language_match", "answer_lang_match", 15),
        ("painted_disclaimer", "painted_exact", 1),
    ],
)
def test_failing_any_one_criterion_fails_and_names_it(
    criterion: str, column: str, wrong: int
) -> None:
    table = fs.bar_table(answers(**{column: wrong}), claims(), n_boot=200)
    assert fs.bar_verdicts(table) == {GOOD: False}
    failed = table[table["required"] & ~table["passed"].fillna(False).astype(bool)]
    assert list(failed["criterion"]) == [criterion]
    assert fs.bar_metrics(table)[f"fallback_bar_passed.{GOOD}"] == 0.0
    text = "\n".join(fs.bar_lines(table))
    label = row(table, GOOD, criterion)["label"]
    assert f"**{GOOD} failed the fallback bar**: {label}: " in text


def test_language_match_counts_only_parsed_replies() -> None:
    """An unparsed reply has no answer: it fails the parse rate, not the language match too."""
    frame = answers(n=100, parsed=5)
    frame.loc[:4, "answer_lang_match"] = False
    table = fs.bar_table(frame, claims(), n_boot=200)
    lang = row(table, GOOD, "language_match")
    assert lang["n"] == 95 and lang["value"] == 1.0 and lang["passed"]


def test_citations_no_better_than_shuffled_fail() -> None:
    table = fs.bar_table(answers(), claims(real=0.8, fake=0.8), n_boot=200)
    auc = row(table, GOOD, "citation_auroc")
    assert auc["value"] == pytest.approx(0.5) and not auc["passed"]
    assert "not above 0.50" in auc["reason"]
    assert fs.bar_verdicts(table) == {GOOD: False}


def test_the_models_own_disclaimer_is_information_not_a_requirement() -> None:
    """The server paints the disclaimer: a model that never writes it still passes."""
    table = fs.bar_table(answers(model_normalized=40), claims(), n_boot=200)
    own = row(table, GOOD, "model_disclaimer")
    assert own["value"] == 0.0 and not own["required"] and pd.isna(own["passed"])
    assert fs.bar_verdicts(table) == {GOOD: True}


def test_an_unmeasured_criterion_fails_as_not_measured() -> None:
    no_claims = fs.bar_table(answers(), None, n_boot=200)
    auc = row(no_claims, GOOD, "citation_auroc")
    assert auc["n"] == 0 and not auc["passed"] and auc["reason"] == "not measured"
    assert fs.bar_verdicts(no_claims) == {GOOD: False}
    other = fs.bar_table(answers(), claims(model="other"), n_boot=200)
    assert row(other, GOOD, "citation_auroc")["reason"] == "not measured"
    # a model asked for but never run (not installed): every criterion unmeasured, and it fails
    absent = fs.bar_table(answers(), claims(), [GOOD, "missing"], n_boot=200)
    gone = absent[absent["model"] == "missing"]
    assert (gone["n"] == 0).all()
    assert set(gone.loc[gone["required"], "reason"]) == {"not measured"}
    assert fs.bar_verdicts(absent) == {GOOD: True, "missing": False}
    assert "fallback_bar.parse_rate.missing" not in fs.bar_metrics(absent)
    # production's variant not run at all: nothing measured either
    other_variant = fs.bar_table(answers().assign(variant="asked"), claims(), n_boot=200)
    assert not fs.bar_verdicts(other_variant)[GOOD]
    # failed calls are no answers
    failed = answers().assign(status="llm_error")
    assert row(fs.bar_table(failed, claims(), n_boot=200), GOOD, "parse_rate")["n"] == 0


def test_rates_pass_on_the_wilson_lower_bound_not_the_point() -> None:
    """9 of 10 is 0.90 but its Wilson 95% interval starts near 0.60: below a 0.85 bar."""
    cell = compute.Criterion("x", "x", 0.85, "wilson_low>=")
    rate, lo, _, n = compute._rate_cell(pd.Series([True] * 9 + [False]))
    assert rate == 0.9 and lo == pytest.approx(0.596, abs=1e-3) and n == 10
    passed, reason = compute._verdict(cell, rate, lo, n)
    assert not passed and "Wilson 95% low 60% below 85%" in reason
    rate, lo, _, n = compute._rate_cell(pd.Series([True] * 199 + [False]))
    assert lo > 0.85 and compute._verdict(cell, rate, lo, n) == (True, "")
    # through the table: 18 of 20 parse (0.90 >= 0.80) but the lower bound is 0.70
    table = fs.bar_table(answers(n=20, parsed=2), claims(), n_boot=200)
    parse = row(table, GOOD, "parse_rate")
    assert parse["value"] == 0.9 and parse["ci95 low"] < compute.PARSE_RATE_MIN
    assert not parse["passed"]


def test_the_conclusion_states_each_models_verdict() -> None:
    table = fs.bar_table(answers(parsed=40), claims(), [GOOD, "missing"], n_boot=200)
    frame = answers().assign(language="en", model_exact=True)
    parts = (fs.adherence_table(frame), fs.scope_table(frame), pd.DataFrame(), pd.DataFrame(), 1.0)
    text = fs.conclusion(*parts, bar=table)
    assert "### The fallback bar" in text
    assert f"**{GOOD} failed the fallback bar**: parse rate: 0% of 40, Wilson 95% low 0%" in text
    assert "**missing failed the fallback bar**: nothing was measured" in text
    assert "### The fallback bar" not in fs.conclusion(*parts)


def test_bar_json_holds_the_verdicts(tmp_path: Path) -> None:
    table = fs.bar_table(answers(parsed=40), None, [GOOD, "missing"], n_boot=200)
    run_dir = tmp_path / "2024-run-abcdef12"
    run_dir.mkdir()
    path = fs.save_bar(run_dir, table)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert path.name == "bar.json" and set(saved) == {GOOD, "missing"}
    assert saved[GOOD]["passed"] is False and saved[GOOD]["run_folder"] == run_dir.name
    parse = saved[GOOD]["criteria"]["parse_rate"]
    assert parse["value"] == 0.0 and parse["passed"] is False and parse["n"] == 40
    assert saved["missing"]["criteria"]["parse_rate"]["value"] is None  # NaN is no JSON
    assert saved[GOOD]["criteria"]["model_disclaimer"]["passed"] is None
    assert "run_id" not in saved[GOOD]
    with_id = json.loads(fs.save_bar(run_dir, table, run_id="abc123").read_text("utf-8"))
    assert with_id[GOOD]["run_id"] == "abc123"


def test_each_model_s_bar_becomes_a_verdict_that_reads_back(tmp_path: Path) -> None:
    """The table as verdicts (what `citegate models adopt` reads): the same pass or fail per
    model, the information line never deciding."""
    frame = pd.concat([answers(), answers("weak", in_scope_correct=30)])
    table = compute.bar_table(frame, pd.concat([claims(), claims("weak")]), n_boot=200)
    verdicts = {v.model: v for v in fs.fallback_verdicts(table, "run-f")}
    assert verdicts[GOOD].passed and not verdicts["weak"].passed
    assert "in-scope accuracy" in verdicts["weak"].why_not()
    assert compute.bar_verdicts(table) == {GOOD: True, "weak": False}
    for v in verdicts.values():
        assert read_verdict(write_verdict(tmp_path, v)) == v
        info = next(c for c in v.criteria if c.rule == "info")
        assert info.passed is None and not info.required
