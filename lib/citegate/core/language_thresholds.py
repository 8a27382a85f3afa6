"""Per-language coverage thresholds (`PipelineConfig.language_thresholds`): which languages and
keys an entry may hold, what is wrong with one, and its canonical form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Languages a question can be told as (the values of `citegate.core.text.script_language`, the rule
# the gate uses): the keys `language_thresholds` accepts.
LANGUAGES = ("en", "hi", "ru")
# The coverage thresholds a language may override, in the order `to_dict` writes them.
LANGUAGE_THRESHOLD_KEYS = ("sufficient_score", "good_enough_score", "bail_out_score")


def threshold_problems(lang: Any, over: Any) -> list[str]:
    """What is wrong with one language's entry: an unknown language, not a mapping, unknown
    inner keys, non-numeric or out-of-range values."""
    if lang not in LANGUAGES:
        return [f"language_thresholds: unknown language {lang!r}; known: {list(LANGUAGES)}"]
    if not isinstance(over, Mapping):
        return [f"language_thresholds.{lang} must be a mapping, got {over!r}"]
    out = []
    for k, v in over.items():
        if k not in LANGUAGE_THRESHOLD_KEYS:
            known = list(LANGUAGE_THRESHOLD_KEYS)
            out.append(f"language_thresholds.{lang}: unknown key {k!r}; known: {known}")
        elif isinstance(v, bool) or not isinstance(v, int | float):
            out.append(f"language_thresholds.{lang}.{k} must be a number, got {v!r}")
        elif not 0.0 <= float(v) <= 1.0:
            out.append(f"language_thresholds.{lang}.{k} must be in [0, 1], got {v}")
    return out


def canonical_thresholds(lt: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """A plain copy, languages sorted, inner keys in `LANGUAGE_THRESHOLD_KEYS` order, floats."""
    return {
        lang: {k: float(lt[lang][k]) for k in LANGUAGE_THRESHOLD_KEYS if k in lt[lang]}
        for lang in sorted(lt)
    }
