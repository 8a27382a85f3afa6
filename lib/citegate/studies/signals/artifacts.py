"""Notebook 05's files in the run folder, read by `citegate promote`: `gate_model.json` (the
production `LearnedGate`), `recommended_config.yaml` (gate: learned, naming that file and its
digest) and `recommendation.json` (why, with the `certified` block promote guards on). Plain
writers: nothing here imports `citegate.tracking`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from citegate.core import config
from citegate.core.config import PipelineConfig, save_config
from citegate.models.gate_model import LearnedGate
from citegate.research.study import Study
from citegate.studies.signals.compute import GatePoint, certificate_block

GATE_MODEL_FILE = "gate_model.json"


def production_base() -> PipelineConfig:
    """The current production config (what a recommendation changes), or the design defaults."""
    return config.production() if config.PRODUCTION.exists() else config.DESIGN


def recommended_config(
    base: PipelineConfig, study_cfg: PipelineConfig, digest: str
) -> PipelineConfig:
    """The config that runs the learned gate as it was measured: the study's replay settings
    (its coverage thresholds still decide the fanout round, and its reranker scored the notes the
    model read; both change the signals) on the production corpora, gate learned, the model file
    `gate_model.json` (relative to the run folder until promote moves it) and its digest."""
    return study_cfg.replace(
        corpora=list(base.corpora),
        gate="learned",
        gate_model=GATE_MODEL_FILE,
        gate_model_digest=digest,
    )


def trained_on(study: Study, corpus: str, run_dir: Any, model: str, n_fit: int) -> dict[str, Any]:
    """The model file's provenance: experiment, run folder, corpus, sets with digests, sample."""
    return {
        "experiment": "05_gate_signals",
        "run_dir": Path(run_dir).name,
        "corpus": corpus,
        "sets": {n: s.qset.digest for n, s in study.sets.items()},
        "fit_on": "tune split, fit part (calibration groups excluded)",
        "n_fit": n_fit,
        "model": model,
        "embedder": study.embedder_id,
        "reranker": study.reranker_id,
    }


def save_recommendation(
    run_dir: Any,
    base: PipelineConfig,
    study_cfg: PipelineConfig,
    gate: LearnedGate,
    point: GatePoint,
    realised: pd.DataFrame,
    others: Mapping[str, Any],
) -> str:
    """Write `gate_model.json`, `recommended_config.yaml` and `recommendation.json` (its
    `certified` block: the production gate's per-kind {alpha, delta, n_neg, false_answers,
    bound, kind}); `others` adds context (other corpora's points, goals). Returns the digest."""
    folder = Path(run_dir)
    digest = gate.save(folder / GATE_MODEL_FILE)
    save_config(recommended_config(base, study_cfg, digest), folder / "recommended_config.yaml")
    mine = realised[(realised["corpus"] == point.corpus) & (realised["gate"] == point.gate)]
    mine = mine[(mine["alpha"] - point.alpha).abs() < 1e-12]
    why = {
        "gate": "learned",
        "gate_model": GATE_MODEL_FILE,
        "gate_model_digest": digest,
        "corpus": point.corpus,
        "features": list(gate.features),
        "threshold": gate.threshold,
        "certified": certificate_block(point),
        "test_realised": mine.to_dict("records"),
        **dict(others),
    }
    (folder / "recommendation.json").write_text(
        json.dumps(why, indent=2, default=_plain), encoding="utf-8"
    )
    return digest


def _plain(v: Any) -> Any:
    """numpy scalars and other values json cannot write as themselves."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)
