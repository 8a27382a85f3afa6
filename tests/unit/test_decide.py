"""Which gate decided and why: the coverage gate's reason names the threshold that decided (and the
language whose thresholds applied), the learned gate decides on p(answerable) from the signals and
says why ("named address BG 3.5 is not in the index"); a model file is refused when missing,
altered, or needing a reranker the config does not run; a recommendation's certificate must bound
the false-answer rate by alpha for every kind. No database: hand-built traces, replayed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.types import Candidate, Decision, GateKind, RetrievalResult, RetrievalTrace
from citegate.models.gate_model import LearnedGate
from citegate.pipeline.decide import compare, learned_decision, rule_reason
from citegate.pipeline.plan import OfflinePlanner
from citegate.pipeline.retrieve import replay
from citegate.pipeline.signals import IndexFacts
from citegate.store.production import gate_model_path, load_gate, load_gate_file
from citegate.tracking.promote import certificate_checks

GLOBAL = {"sufficient_score": 0.8852, "good_enough_score": 0.8934, "bail_out_score": 0.8233}
RU = {"sufficient_score": 0.80, "good_enough_score": 0.82, "bail_out_score": 0.75}
CFG = PipelineConfig(**GLOBAL, sufficient_lectures=0)
RU_CFG = CFG.replace(language_thresholds={"ru": RU})
ENGLISH = "What does Krishna say about steadfast wisdom?"
RUSSIAN = "Что Кришна говорит о стойкой мудрости?"
NAMED = "In Chapter 3, Verse 5, why can no one remain without action?"
FACTS = IndexFacts(("c",), frozenset({"BG 2.13", "BG 2.47"}), {}, 0)


def result_for(question: str, cosine: float, cfg: PipelineConfig = CFG) -> RetrievalResult:
    """A replayed result whose best note has cosine `cosine` (two verse notes)."""
    cands: list[Candidate] = [make_candidate(score=cosine), make_candidate(score=cosine - 0.1)]
    plan = OfflinePlanner().plan(question)
    trace = RetrievalTrace(question, plan, cfg.collection_key(), cfg.embedder, cfg.reranker, cands)
    return replay(trace, cfg)


def gate(threshold: float = 0.43, **trained_on: object) -> LearnedGate:
    """p = logistic(z(max cosine) − 4 address_absent): a named-but-absent verse pulls p down."""
    return LearnedGate(
        features=("max_cosine", "address_absent"),
        language_stats={"*": (0.8, 0.05)},
        mean=(0.8, 0.0),
        scale=(0.05, 1.0),
        coef=(1.0, -4.0),
        intercept=0.0,
        threshold=threshold,
        certificate={"alpha": 0.05, "delta": 0.05, "n_neg": 120, "bound": 0.04},
        trained_on=dict(trained_on),
    )


# ---------------------------------------------------------------- the printed comparison


def test_compare_prints_enough_digits_to_agree_with_the_comparison() -> None:
    assert compare(0.842, 0.8852, "sufficient") == "0.842 < sufficient 0.8852"
    assert compare(0.88519, 0.8852) == "0.885 < 0.8852"
    assert compare(0.88521, 0.8852) == "0.88521 ≥ 0.8852"  # never "0.885 ≥ 0.8852"
    assert compare(0.8852, 0.8852) == "0.8852 ≥ 0.8852"
    assert compare(0.4299, 0.43, digits=2) == "0.4299 < 0.43"  # never "0.43 < 0.43"
    assert compare(0.9, 0.8) == "0.900 ≥ 0.8"


# ---------------------------------------------------------------- the coverage gate's reason


@pytest.mark.parametrize(
    ("question", "cosine", "cfg", "decision", "reason"),
    [
        (ENGLISH, 0.90, CFG, "answer", "max cosine 0.900 ≥ sufficient 0.8852"),
        (ENGLISH, 0.71, CFG, "insufficient", "max cosine 0.710 < bail-out 0.8233"),
        (RUSSIAN, 0.81, RU_CFG, "answer", "max cosine 0.810 ≥ sufficient 0.8 (ru thresholds)"),
        (RUSSIAN, 0.74, RU_CFG, "insufficient", "max cosine 0.740 < bail-out 0.75 (ru thresholds)"),
        (ENGLISH, 0.81, RU_CFG, "insufficient", "max cosine 0.810 < bail-out 0.8233"),
    ],
)
def test_the_coverage_reason_names_the_threshold_that_decided(
    question: str, cosine: float, cfg: PipelineConfig, decision: str, reason: str
) -> None:
    res = result_for(question, cosine, cfg)
    by = rule_reason(res, cfg)
    assert res.decision == decision
    assert by.kind == GateKind.COVERAGE and by.reason == reason
    assert by.signal == pytest.approx(cosine)


def test_a_weak_answer_says_it_lies_between_the_thresholds() -> None:
    cfg = CFG.replace(max_fanout_rounds=1)
    res = result_for(ENGLISH, 0.85, cfg)
    assert res.decision == Decision.WEAK
    assert rule_reason(res, cfg).reason == (
        "max cosine 0.850 between bail-out 0.8233 and good enough 0.8934: a weak answer"
    )


# ---------------------------------------------------------------- the learned gate's decision


def test_the_learned_gate_refuses_a_question_naming_an_absent_verse_and_says_why() -> None:
    res = result_for(NAMED, 0.90, CFG)
    assert res.decision == Decision.ANSWER  # the coverage gate alone would answer
    out = learned_decision(res, CFG, gate(), FACTS, {})
    p = 1 / (1 + math.exp(-((0.90 - 0.8) / 0.05 - 4)))
    assert out.decision == Decision.INSUFFICIENT
    assert out.decided_by is not None and out.decided_by.kind == GateKind.LEARNED
    assert out.decided_by.signal == pytest.approx(p)
    assert out.decided_by.reason.startswith("p(answerable)=0.12 < 0.43: ") and p < 0.43
    assert "named address BG 3.5 is not in the index" in out.decided_by.reason
    assert out.notes == res.notes  # the coverage rounds' notes stay


def test_the_learned_gate_answers_when_p_reaches_its_threshold() -> None:
    res = result_for("What does BG 2.13 say about the soul?", 0.82, CFG)
    assert res.decision == Decision.INSUFFICIENT  # under the coverage bail-out
    out = learned_decision(res, CFG, gate(), FACTS, {})
    assert out.decision == Decision.ANSWER and out.decided_by is not None
    assert out.decided_by.reason.startswith("p(answerable)=0.60 ≥ 0.43: ")
    assert "named address BG 2.13 is in the index" in out.decided_by.reason


def test_an_infeasible_threshold_answers_nothing() -> None:
    out = learned_decision(result_for(ENGLISH, 0.99, CFG), CFG, gate(math.inf), FACTS, {})
    assert out.decision == Decision.INSUFFICIENT and out.decided_by is not None
    assert out.decided_by.reason.startswith("p(answerable)=0.98 < inf: ")


# ---------------------------------------------------------------- the model file


def learned_cfg(tmp_path: Path, model: LearnedGate) -> PipelineConfig:
    (tmp_path / "models").mkdir(exist_ok=True)
    digest = model.save(tmp_path / "models" / "gate_model.json")
    return CFG.replace(
        gate="learned", gate_model="models/gate_model.json", gate_model_digest=digest
    )


def test_a_model_file_is_found_under_the_config_folders_models_and_checked(
    tmp_path: Path,
) -> None:
    cfg = learned_cfg(tmp_path, gate())
    model = tmp_path / "models" / "gate_model.json"
    assert gate_model_path(cfg, tmp_path) == model
    assert load_gate(cfg, tmp_path) == gate()
    model.write_text(model.read_text().replace('"threshold": 0.43', '"threshold": 0.1'))
    with pytest.raises(ConfigError, match="gate_model.json: gate model digest"):
        load_gate(cfg, tmp_path)
    model.unlink()
    with pytest.raises(
        ConfigError, match="gate_model.json: the learned gate's model file is missing"
    ):
        load_gate(cfg, tmp_path)


def test_a_model_reading_the_reranker_needs_a_config_that_runs_it(tmp_path: Path) -> None:
    ltr = LearnedGate(
        ("ltr_max_prob",), {"*": (0.8, 0.05)}, (0.5,), (0.2,), (3.0,), 0.0, 0.5,
        trained_on={"reranker": "ltr/default"},
    )  # fmt: skip
    digest = ltr.save(tmp_path / "ltr.json")
    cfg = CFG.replace(gate="learned", gate_model="ltr.json", gate_model_digest=digest)
    with pytest.raises(ConfigError, match=r"ltr.json: .*runs no reranker"):
        load_gate_file(tmp_path / "ltr.json", digest, cfg)
    with pytest.raises(ConfigError, match="not comparable"):
        load_gate_file(tmp_path / "ltr.json", digest, cfg.replace(reranker="voyage/rerank-2"))
    assert load_gate_file(tmp_path / "ltr.json", digest, cfg.replace(reranker="ltr/default"))


def test_a_model_with_an_unknown_feature_is_refused(tmp_path: Path) -> None:
    doc = json.loads(gate().to_json())
    doc["features"] = ["max_cosine", "vibes"]
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="m.json: .*unknown feature 'vibes'"):
        load_gate_file(tmp_path / "m.json", None, CFG)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the certificate guard


def test_certificate_checks_read_every_kind_and_fail_the_one_over_alpha() -> None:
    why = {
        "certified": {
            "alpha": 0.05,
            "delta": 0.05,
            "out_of_corpus": {"n_neg": 150, "bound": 0.071},
            "out_of_scope": {"n_neg": 250, "bound": 0.012},
        }
    }
    checks = {c.kind: c for c in certificate_checks(why)}
    assert set(checks) == {"out_of_corpus", "out_of_scope"}
    assert not checks["out_of_corpus"].ok and checks["out_of_scope"].ok
    assert checks["out_of_corpus"].line() == (
        "certificate out_of_corpus: bound 0.0710 > alpha 0.05 (confidence 0.95, 150 negatives): "
        "FAILS"
    )
    listed = [{"kind": "out_of_corpus", "alpha": 0.1, "delta": 0.05, "n_neg": 9, "bound": 0.1}]
    assert [c.ok for c in certificate_checks({"certified": listed})] == [True]  # bound = alpha
    nested = {"certified": {"gita-split": {"out_of_corpus": {**listed[0], "kind": None}}}}
    assert [c.kind for c in certificate_checks(nested)] == ["gita-split.out_of_corpus"]
    per_unit = {
        "certified": {"calibrated_on": "every fold's calibration part (per unit)", "x": listed[0]}
    }
    assert "9 negative units" in certificate_checks(per_unit)[0].line()


def test_certificate_checks_read_experiment_05s_block() -> None:
    kind = {"alpha": 0.1, "delta": 0.025, "n_neg": 180, "false_answers": 9, "bound": 0.083}
    block = {
        "gate": "learned",
        "threshold": 0.61,
        "feasible": True,
        "alpha": 0.1,
        "delta": 0.05,
        "calibrated_on": "tune, calibration groups",
        "kinds": {"out_of_corpus": {**kind, "kind": "out_of_corpus"}},
    }
    (check,) = certificate_checks({"certified": block})
    assert (check.kind, check.bound, check.alpha, check.delta, check.n_neg) == (
        "out_of_corpus", 0.083, 0.1, 0.025, 180
    )  # fmt: skip
    assert check.ok
    (none,) = certificate_checks({"certified": {**block, "feasible": False}})
    assert not none.ok and none.line().endswith("FAILS (no threshold could be certified)")


def test_a_recommendation_without_a_certificate_is_not_subject_to_it() -> None:
    assert certificate_checks(None) == [] and certificate_checks({"thresholds": {}}) == []
    with pytest.raises(ConfigError, match="certifies no kind"):
        certificate_checks({"certified": {}})
    with pytest.raises(ConfigError, match="out_of_corpus.*numeric alpha"):
        certificate_checks({"certified": {"out_of_corpus": {"bound": 0.01}}})
