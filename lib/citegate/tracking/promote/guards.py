"""Guard metrics: what `experiments/guards.yaml` declares a candidate must not lose, and the
metrics (with intervals) computed from replayed test questions that the guards compare."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.core.yamlfile import read_yaml
from citegate.corpus.questions import LABELS
from citegate.evaluation import metrics as M

GUARDS = paths.EXPERIMENTS / "guards.yaml"

NEGATIVE_KINDS = tuple(label for label in LABELS if label != "answerable")
METRIC_BASES = (
    "false_answer_rate",
    "answer_rate",
    "recall_at_16",
    "gate_auroc",
    "wrong_source_rate",
    "wrong_source_share",
)


@dataclass(frozen=True)
class Guard:
    """A metric that must not get worse by more than `tolerance` (direction: higher or lower)."""

    metric: str
    better: str
    tolerance: float

    def passes(self, candidate: float, production: float) -> bool:
        """True when the candidate is no worse than production beyond the tolerance."""
        if self.better == "higher":
            return candidate >= production - self.tolerance
        return candidate <= production + self.tolerance


def load_guards(path: Path | None = None) -> tuple[dict[str, Any], list[Guard]]:
    """The evaluation settings and guard metrics declared in `experiments/guards.yaml`."""
    path = Path(path or GUARDS)
    doc = read_yaml(path, "guards file")
    try:
        evaluation = doc["evaluation"]
        guards = [Guard(g["metric"], g["better"], float(g["tolerance"])) for g in doc["guards"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"{path}: needs `evaluation` and `guards` (each with metric, better, tolerance): "
            f"{exc!r}"
        ) from exc
    bad = [g.metric for g in guards if g.better not in ("higher", "lower")]
    if bad:
        raise ConfigError(f"{path}: 'better' must be higher or lower for {bad}")
    for g in guards:
        _check_guard_name(g.metric, path)
    return evaluation, guards


def _check_guard_name(metric: str, path: Path) -> None:
    """A guard names a metric `evaluate` can produce: a known base, a per-kind one where needed."""
    base, _, suffix = metric.partition(".")
    if base not in METRIC_BASES:
        raise ConfigError(
            f"{path}: guard metric {metric!r} is unknown; bases: {list(METRIC_BASES)}"
        )
    kind = suffix.partition(".")[0]
    if base in ("false_answer_rate", "gate_auroc") and kind not in (*NEGATIVE_KINDS, "pooled"):
        kinds = ", ".join(f"{base}.{k}" for k in NEGATIVE_KINDS)
        raise ConfigError(
            f"{path}: guard metric {metric!r} must name a kind of negative ({kinds}); "
            "pooling the kinds mixes easy and hard negatives"
        )


@dataclass(frozen=True)
class EvalRow:
    """One test question replayed under a config: what the guard metrics are computed from."""

    label: str  # answerable | out_of_corpus | out_of_scope
    language: str
    group: str  # questions of one group (verse, article) are resampled together
    answered: bool  # the gate's decision was "answer"
    max_score: float  # the gate signal (max cosine of the final notes)
    gold_hit: bool | None  # a gold fragment is among the final notes; None without gold
    # answered, and the composed answer cites no gold source (False when declined; None for a
    # negative, or a composer that needs a model)
    wrong_source: bool | None = None
    names_source: bool = False  # the question names a source (a verse number)


def compute_metrics(
    rows: list[EvalRow], n_boot: int = 500, seed: int = 0, alpha: float = 0.05
) -> dict[str, dict[str, float]]:
    """Guard and reported metrics of replayed questions: metric -> {value, low, high, n}.

    Rates (Wilson intervals): `answer_rate`, `recall_at_16`, `false_answer_rate.<kind>` per kind
    of negative, and each per language (`answer_rate.en`, `false_answer_rate.out_of_corpus.ru`);
    `wrong_source_rate` (answerable questions answered citing no gold source, over every composed
    answerable question: measured whenever the composer is extractive) and `wrong_source_share`
    (the same among the answered ones), also for questions naming a source and not (`.named`,
    `.unnamed`).
    AUROC of max cosine (cluster bootstrap over question groups, as notebook 03):
    `gate_auroc.<kind>`. Both also pooled over the kinds (`.pooled`, reported for comparison
    with version-2 files whose names meant that). A metric without observations is absent.
    """
    out: dict[str, dict[str, float]] = {}
    pos = [r for r in rows if r.label == "answerable"]
    _add_rate(out, "answer_rate", [r.answered for r in pos], alpha)
    _add_rate(out, "recall_at_16", [r.gold_hit for r in pos if r.gold_hit is not None], alpha)
    for lang in sorted({r.language for r in pos}):
        mine = [r for r in pos if r.language == lang]
        _add_rate(out, f"answer_rate.{lang}", [r.answered for r in mine], alpha)
        hits = [r.gold_hit for r in mine if r.gold_hit is not None]
        _add_rate(out, f"recall_at_16.{lang}", hits, alpha)
    composed = [r for r in pos if r.wrong_source is not None]
    _add_rate(out, "wrong_source_rate", [bool(r.wrong_source) for r in composed], alpha)
    answered = [r for r in composed if r.answered]
    _add_rate(out, "wrong_source_share", [bool(r.wrong_source) for r in answered], alpha)
    for name, named in (("named", True), ("unnamed", False)):
        flags = [bool(r.wrong_source) for r in answered if r.names_source == named]
        _add_rate(out, f"wrong_source_share.{name}", flags, alpha)
    kinds = sorted({r.label for r in rows} - {"answerable"})
    negatives = {k: [r for r in rows if r.label == k] for k in kinds}
    if len(kinds) > 1:
        negatives["pooled"] = [r for r in rows if r.label != "answerable"]
    for kind, neg in negatives.items():
        _add_rate(out, f"false_answer_rate.{kind}", [r.answered for r in neg], alpha)
        if kind != "pooled":
            for lang in sorted({r.language for r in neg}):
                flags = [r.answered for r in neg if r.language == lang]
                _add_rate(out, f"false_answer_rate.{kind}.{lang}", flags, alpha)
        _add_auroc(out, f"gate_auroc.{kind}", pos + neg, n_boot, seed, alpha)
    return out


def _add_rate(out: dict[str, dict[str, float]], name: str, flags: list[bool], alpha: float) -> None:
    if flags:
        rate, lo, hi = M.rate_ci(np.array(flags, dtype=bool), alpha=alpha)
        out[name] = {"value": rate, "low": lo, "high": hi, "n": float(len(flags))}


def _add_auroc(
    out: dict[str, dict[str, float]],
    name: str,
    rows: list[EvalRow],
    n_boot: int,
    seed: int,
    alpha: float,
) -> None:
    y = np.array([r.label == "answerable" for r in rows], dtype=int)
    if not 0 < y.sum() < len(y):
        return
    auc = M.auroc_ci(
        [r.max_score for r in rows],
        y,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
        groups=[r.group for r in rows],
    )
    out[name] = {"value": auc.auroc, "low": auc.lower, "high": auc.upper, "n": float(len(y))}
