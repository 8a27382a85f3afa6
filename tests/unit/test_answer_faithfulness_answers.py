"""Notebook 06's answer tables and recommendation: pure functions on hand-made answer rows and
certificates (the composers and the claim set are exercised end to end by the notebook test)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from citegate.core.config import PipelineConfig, load_config
from citegate.core.errors import InputError
from citegate.corpus.audited_claims import AUDIT_FILE, load_audited
from citegate.evaluation.certify import Certified, CertifiedKinds
from citegate.studies.answer_faithfulness import answers as fa
from citegate.studies.answer_faithfulness.artifacts import recommended_config, save_recommendation
from citegate.tracking.promote.evaluate import certificate_checks


def claim(status: str, fabricated: int = 0, flagged: bool | None = None) -> dict[str, Any]:
    shown_flag = status != "supported" or fabricated > 0 if flagged is None else flagged
    return {"text": "c", "status": status, "score": 0.9, "fabricated": fabricated,
            "flagged": shown_flag, "removed": False}  # fmt: skip


def row(composer: str, qid: str, claims: list[dict[str, Any]], outcome: str = "answered",
        lang: str = "en", abstained: str = "", status: str = "ok") -> fa.AnswerRow:  # fmt: skip
    return fa.AnswerRow(composer, qid, f"question {qid}", lang, qid, outcome, status, abstained,
                        "composed", "shown", tuple(claims), 0.1)  # fmt: skip


def test_composer_table_counts_each_verdict_and_unflagged_fabrications() -> None:
    rows = [
        row("g", "1", [claim("supported"), claim("unsupported")]),
        row("g", "2", [claim("supported", fabricated=1, flagged=False), claim("uncited")]),
        row("g", "3", [], outcome="abstained", abstained="exact"),
        row("g", "4", [], outcome="llm_error", status="llm_error: down"),
        row("g", "5", [], outcome="gate"),
    ]
    t = fa.composer_table(rows, n_boot=50)
    r = t[(t["composer"] == "g") & (t["language"] == "all")].iloc[0]
    assert (r["questions"], r["answered"], r["abstained"], r["model_errors"]) == (5, 2, 1, 1)
    assert r["claims"] == 4 and r["supported_share"] == pytest.approx(0.5)
    assert (r["unsupported"], r["uncited"], r["fabricated_markers"]) == (1, 1, 1)
    assert r["fabricated_unflagged"] == 1 and r["abstention_exact"] == 1.0


def test_a_composer_passes_only_with_the_bar_met_and_nothing_fabricated_unflagged() -> None:
    good = [row("gen", str(i), [claim("supported")] * 3) for i in range(5)]
    bad = [row("gen2", str(i), [claim("supported"), claim("unsupported")]) for i in range(5)]
    t = fa.composer_table(
        [*good, *bad, *(row("extractive", str(i), [claim("supported")]) for i in range(5))], 20
    )
    assert fa.passes_bar(t, "gen") and not fa.passes_bar(t, "gen2")
    assert fa.production_composer(t, ["gen2", "gen"]) == "gen"
    assert fa.production_composer(t, ["gen2"]) == "extractive"
    errors = fa.composer_table([*good, row("gen", "x", [], outcome="llm_error")], 20)
    assert not fa.passes_bar(errors, "gen")  # a model error is never a pass


def certified(threshold: float, feasible: bool) -> CertifiedKinds:
    kind = Certified(
        threshold, 0.03 if feasible else 0.2, 150, 1, 0.05, 0.025, 0.6, feasible, "gita"
    )
    return CertifiedKinds(threshold, 0.05, 0.05, 0.6, feasible, {"gita": kind}, {"gita": threshold})


def test_the_recommendation_carries_the_certificate_the_promotion_checks(tmp_path: Path) -> None:
    base = PipelineConfig()
    cfg = save_recommendation(
        tmp_path, base, "qp-sentence", certified(0.8948, True), "extractive", {}
    )
    assert load_config(tmp_path / "recommended_config.yaml") == cfg
    assert (cfg.support_mode, cfg.support_threshold, cfg.composer) == (
        "qp-sentence",
        0.8948,
        "extractive",
    )
    why = json.loads((tmp_path / "recommendation.json").read_text())
    checks = certificate_checks(why)
    assert [c.kind for c in checks] == ["gita"] and all(c.ok for c in checks)


def test_an_infeasible_certificate_recommends_one_and_is_refused() -> None:
    cert = certified(math.inf, False)
    assert (
        recommended_config(PipelineConfig(), "qp-sentence", cert, "extractive").support_threshold
        == 1.0
    )
    checks = certificate_checks({"certified": cert.to_dict()})
    assert not any(c.ok for c in checks)


def test_the_shipped_audit_loads_and_a_bad_line_is_named(tmp_path: Path) -> None:
    audited = load_audited()
    assert len(audited) == 50 and {a.label for a in audited} == {0, 1}
    assert all(a.why and a.note for a in audited)
    bad = tmp_path / "audit.jsonl"
    good = AUDIT_FILE.read_text(encoding="utf-8").splitlines()[0]
    bad.write_text(good + "\n" + good.replace('"label": 0', '"label": 2') + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"audit.jsonl: record line 2: label must be 0 or 1"):
        load_audited(bad)
