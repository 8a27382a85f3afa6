"""Notebook 05's files in the run folder, read by `citegate promote`: `gate_model.json` (the
production `LearnedGate`), `ltr_model.json` (the LTR reranker the study scored with, when it ran
one), `recommended_config.yaml` (gate: learned, naming that file and its
digest) and `recommendation.json` (why, with the `certified` block promote guards on). Plain
writers: nothing here imports `citegate.tracking`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from citegate.core.config import PipelineConfig, save_config
from citegate.core.errors import ConfigError
from citegate.corpus.builds import parent_build
from citegate.models.gate_model import LearnedGate
from citegate.models.ltr.model import LTRReranker
from citegate.research.study import Study
from citegate.store.production import GATE_MODEL_FILE, LTR_MODEL_FILE
from citegate.studies.gate_signals.compute import GatePoint, certificate_block


def recommended_config(
    base: PipelineConfig, study_cfg: PipelineConfig, digest: str, ltr_digest: str = ""
) -> PipelineConfig:
    """The config that runs the learned gate as it was measured: the study's replay settings
    (its coverage thresholds still decide the fanout round, and its reranker scored the notes the
    model read; both change the signals) on the production corpora, gate learned, the model file
    `gate_model.json` (relative to the run folder until promote moves it) and its digest, and,
    when the study ran an LTR reranker, that model's file `ltr_model.json` and its digest."""
    return study_cfg.replace(
        corpora=list(base.corpora),
        gate="learned",
        gate_model=GATE_MODEL_FILE,
        gate_model_digest=digest,
        reranker_model=LTR_MODEL_FILE if ltr_digest else "",
        reranker_model_digest=ltr_digest,
    )


def save_ltr_model(folder: Path, study_cfg: PipelineConfig, reranker: Any) -> str:
    """Copy the LTR model the study scored with into the run folder (`ltr_model.json`, the bytes
    its digest names); returns the digest ("" when the study ran no LTR reranker). A promotion
    carries this file, so production runs the model that was measured, not whatever
    `var/models/` holds later."""
    if not study_cfg.reranker.startswith("ltr/"):
        return ""
    if not isinstance(reranker, LTRReranker):
        raise ConfigError(
            f"the study ran {study_cfg.reranker!r} but its LTR model object was not passed: "
            "the recommendation could not name the model it needs"
        )
    (folder / LTR_MODEL_FILE).write_bytes(reranker.to_bytes())
    return reranker.digest


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


def fold_trained_on(
    studies: Mapping[str, Study], corpus: str, run_dir: Any, model: str, n_fit: int
) -> dict[str, Any]:
    """`trained_on` of the deployable fold gate: every fold build of `corpus` with its sets'
    digests (the out-of-scope set once per fold build)."""
    mine = {name: st for name, st in studies.items() if parent_build(name) == corpus}
    first = next(iter(mine.values()))
    return {
        "experiment": "05_gate_signals",
        "run_dir": Path(run_dir).name,
        "corpus": corpus,
        "sets": {f"{b}/{n}": s.qset.digest for b, st in mine.items() for n, s in st.sets.items()},
        "fit_on": "every leave-out fold's tune-split questions, fit part (calibration groups "
        "excluded); certified per unit on their calibration part",
        "n_fit": n_fit,
        "model": model,
        "embedder": first.embedder_id,
        "reranker": first.reranker_id,
    }


def save_recommendation(
    run_dir: Any,
    base: PipelineConfig,
    study_cfg: PipelineConfig,
    gate: LearnedGate,
    point: GatePoint,
    realised: pd.DataFrame,
    others: Mapping[str, Any],
    reranker: Any = None,
) -> str:
    """Write `gate_model.json`, `recommended_config.yaml` and `recommendation.json` (its
    `certified` block: the production gate's per-kind {alpha, delta, n_neg, false_answers,
    bound, kind}); `others` adds context (other corpora's points, goals); `reranker` is the
    study's reranker object (`Study.reranker`): an LTR model is copied beside the gate
    (`save_ltr_model`). Returns the gate model's digest."""
    folder = Path(run_dir)
    digest = gate.save(folder / GATE_MODEL_FILE)
    ltr_digest = save_ltr_model(folder, study_cfg, reranker)
    save_config(
        recommended_config(base, study_cfg, digest, ltr_digest),
        folder / "recommended_config.yaml",
    )
    mine = realised[(realised["corpus"] == point.corpus) & (realised["gate"] == point.gate)]
    mine = mine[(mine["alpha"] - point.alpha).abs() < 1e-12]
    why = {
        "gate": "learned",
        "gate_model": GATE_MODEL_FILE,
        "gate_model_digest": digest,
        "reranker_model": LTR_MODEL_FILE if ltr_digest else "",
        "reranker_model_digest": ltr_digest,
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
