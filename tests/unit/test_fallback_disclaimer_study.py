"""Notebook 04's study without a model or a database: the painted-disclaimer check, models that
are not available, the model-error share check, and the conclusion's wording."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from citegate.core.errors import CitegateError, ConfigError, ModelFailure, check_model_errors
from citegate.research import models as chat_models
from citegate.studies import fallback_disclaimer as fs


def test_check_painted_is_a_check() -> None:
    ok = pd.DataFrame(
        {"painted_exact": [True, True], "model": "m", "variant": "v", "qid": ["a", "b"]}
    )
    assert fs.check_painted(ok) == 1.0
    with pytest.raises(CitegateError, match="without the disclaimer"):
        fs.check_painted(ok.assign(painted_exact=[True, False]))


@pytest.mark.llm_model
def test_models_not_available_are_skipped_with_a_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path))
    monkeypatch.setattr(chat_models, "QWEN_PACKAGES", ("citegate_no_such_part1",))
    ok, skipped = chat_models.resolve_models(["smollm2-135m", "qwen2.5-0.5b", "remote:x", "gpt-9"])
    assert list(ok) == ["smollm2-135m"] and ok["smollm2-135m"].is_file()
    assert "not installed" in skipped["qwen2.5-0.5b"] and "no OPENROUTER" in skipped["remote:x"]
    assert "unknown model" in skipped["gpt-9"]


def test_check_model_errors_counts_per_model() -> None:
    ok, bad = "ok", "llm_error: chat call failed: Connection refused"
    statuses = {"a": [ok] * 19 + [bad], "b": [ok] * 10}
    assert check_model_errors(statuses, 0.05, "calls") == {"a": 1, "b": 0}  # 1 of 20 is 5%
    with pytest.raises(ModelFailure, match=r"^a: 2 of 20 calls failed \(llm_error: chat call"):
        check_model_errors({"a": [ok] * 18 + [bad] * 2}, 0.05, "calls")
    with pytest.raises(ModelFailure, match=r"a: 1 of 1 .*; b: 1 of 2 .*allowed share 0%"):
        check_model_errors({"a": [bad], "b": [ok, bad]}, 0.0, "calls")
    assert check_model_errors({"a": ["parse_failure: no JSON"]}, 0.0, "calls") == {"a": 0}
    with pytest.raises(ConfigError, match="MAX_MODEL_ERROR_SHARE"):
        check_model_errors(statuses, 1.5, "calls")


def adherence(exact: float, lo: float, hi: float, n: int = 10) -> pd.DataFrame:
    """A one-cell adherence table."""
    return pd.DataFrame(
        [
            {
                "model": "m",
                "variant": "asked",
                "language": "en",
                "n": n,
                "model exact": exact,
                "model exact lo": lo,
                "model exact hi": hi,
                "model normalized": exact,
                "painted": 1.0,
            }
        ]
    )


SCOPE = pd.DataFrame(
    [{"model": "m", "n": 10, "parsed": 1.0, "in-scope accuracy": 0.7, "language match": 0.9}]
)
PROBES = pd.DataFrame(
    [
        {
            "model": "m",
            "variant": "asked",
            "declined": 2,
            "fallback answers": 8,
            "probes per answer": 3.0,
            "admitted at 0.5": 0.25,
        }
    ]
)
COST = pd.DataFrame(
    [
        {
            "model": "m",
            "prompt tokens/call": 200.0,
            "completion tokens/call": 60.0,
            "latency s/call": 1.5,
        }
    ]
)


def test_conclusion_says_painting_makes_the_guarantee_only_when_models_dropped_it() -> None:
    dropped = fs.conclusion(adherence(0.6, 0.31, 0.83), SCOPE, PROBES, COST, 1.0)
    assert "lacked the verbatim disclaimer in 4 of 10 answers" in dropped
    assert "painting it on the server is what makes the guarantee" in dropped
    assert "present in **100%** of the 10 answers" in dropped
    kept = fs.conclusion(adherence(1.0, 0.72, 1.0), SCOPE, PROBES, COST, 1.0)
    assert "what makes the guarantee" not in kept and "cannot tell" in kept
    assert "A rate of 100% is not a certainty" in kept and "runs 72%–100%" in kept
    broken = fs.conclusion(adherence(0.6, 0.31, 0.83), SCOPE, PROBES, COST, 0.9)
    assert "only **90%**" in broken and "did not hold" in broken and "**100%**" not in broken
    assert "what makes the guarantee" not in broken


def test_conclusion_reports_failed_calls() -> None:
    errors = pd.DataFrame(
        [
            {
                "model": "m",
                "calls": 12,
                "failed": 1,
                "failed share": 1 / 12,
                "first error": "llm_error: x",
            }
        ]
    )
    text = fs.conclusion(adherence(0.6, 0.3, 0.8), SCOPE, PROBES, COST, 1.0, errors)
    assert (
        "m: 1 of 12 fallback calls failed (llm_error: x); they are left out of every rate" in text
    )
    none = fs.conclusion(
        adherence(0.6, 0.3, 0.8), SCOPE, PROBES, COST, 1.0, errors.assign(failed=0)
    )
    assert "No fallback call failed (12 calls)." in none
