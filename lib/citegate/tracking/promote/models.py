"""The model files a promotion carries: read from the run that made them, checked, and named by
content digest under `experiments/models/` (`gate-<digest12>.json`, `ltr-<digest12>.json`).

A run's config names its models relative to the run folder (experiment 05 writes
`gate_model.json` and `ltr_model.json`); a config that kept a model production already runs names
the committed file. `promoted_config` rewrites the names to where production keeps them;
`evaluation_config` points the candidate's evaluation at the very bytes it would commit. `base`
is the production file's folder (`experiments/`).
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.models.gate_model import LearnedGate
from citegate.models.ltr.model import load_ltr
from citegate.store.production import GATE_MODEL_FILE, LTR_MODEL_FILE, MODELS_DIR, load_gate_file


def artifact(run_id: str, name: str, tmp: str) -> Path | None:
    """The local copy of one artifact of a run, None when the run has no such file."""
    import mlflow

    try:
        return Path(
            mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name, dst_path=tmp)
        )
    except Exception:  # noqa: BLE001 - mlflow raises several types for a missing file
        return None


def run_gate_model(run_id: str, cfg: PipelineConfig, tmp: str, base: Path) -> bytes:
    """The bytes of the learned gate a run's config names, its digest and contents checked."""
    name = cfg.gate_model or GATE_MODEL_FILE
    local = _model_file(run_id, name, cfg.gate_model_digest, tmp, base)
    if local is None:
        raise ConfigError(
            f"run {run_id} recommends gate=learned but has no {name} artifact (experiment 05 "
            "writes it into the run folder)"
        )
    data = local.read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if cfg.gate_model_digest and found != cfg.gate_model_digest:
        raise ConfigError(
            f"run {run_id}: {name} has digest {found[:12]}…, its config says "
            f"{cfg.gate_model_digest[:12]}…; the model file was altered"
        )
    load_gate_file(local, found, cfg)  # a model production could not run is refused here
    return data


def _model_file(run_id: str, name: str, digest: str, tmp: str, base: Path) -> Path | None:
    """A model file a run's config names: the run's own artifact, else (a config that kept a
    model production already runs, e.g. experiment 03 tuning thresholds on top of production)
    the committed file of that name next to the production file, when its digest matches."""
    local = artifact(run_id, name, tmp)
    if local is not None:
        return local
    committed = base / name
    if (
        digest
        and Path(name).parts[:1] == (MODELS_DIR,)
        and committed.is_file()
        and hashlib.sha256(committed.read_bytes()).hexdigest() == digest
    ):
        return committed
    return None


def run_ltr_model(run_id: str, cfg: PipelineConfig, tmp: str, base: Path) -> bytes | None:
    """The bytes of the LTR model a run's config runs (its `reranker_model` artifact), digest
    and contents checked; None when the config runs no LTR reranker. A config that runs one
    without carrying its file is refused: a fresh clone could not answer through it."""
    if not cfg.reranker.startswith("ltr/"):
        return None
    if not cfg.reranker_model:
        raise ConfigError(
            f"run {run_id} recommends reranker {cfg.reranker} but carries no model file for it "
            f"({LTR_MODEL_FILE}): production could not run it on a fresh clone; re-run the "
            "experiment on this version"
        )
    local = _model_file(run_id, cfg.reranker_model, cfg.reranker_model_digest, tmp, base)
    if local is None:
        raise ConfigError(
            f"run {run_id} names {cfg.reranker_model} but has no such artifact, and production "
            "holds no such model"
        )
    data = local.read_bytes()
    load_ltr(cfg.reranker, local, cfg.reranker_model_digest)  # digest and format checked here
    return data


def promoted_config(
    cfg: PipelineConfig, gate_model: bytes | None, ltr_model: bytes | None
) -> tuple[PipelineConfig, LearnedGate | None]:
    """The config as production will hold it (each model it needs named by its content address
    under models/, with its digest) and the loaded gate model (None for other gates)."""
    if ltr_model is not None:
        digest = hashlib.sha256(ltr_model).hexdigest()
        cfg = cfg.replace(reranker_model=model_name("ltr", digest), reranker_model_digest=digest)
    if gate_model is None:
        return cfg, None
    digest = hashlib.sha256(gate_model).hexdigest()
    cfg = cfg.replace(gate_model=model_name("gate", digest), gate_model_digest=digest)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / GATE_MODEL_FILE
        path.write_bytes(gate_model)
        return cfg, load_gate_file(path, digest, cfg)


def model_name(kind: str, digest: str) -> str:
    """Where production keeps a model (`kind`: gate or ltr), relative to the production file."""
    return f"{MODELS_DIR}/{kind}-{digest[:12]}.json"


def evaluation_config(cfg: PipelineConfig, ltr_model: bytes | None) -> PipelineConfig:
    """`cfg` pointed at a copy of the candidate's LTR model outside the repository (under
    var/models/candidates/, content-addressed), so a dry run or a refused promotion writes
    nothing under experiments/ and still scores with the very file it would commit."""
    if ltr_model is None:
        return cfg
    path = paths.var_dir() / "models" / "candidates" / Path(cfg.reranker_model).name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ltr_model)
    return cfg.replace(reranker_model=str(path.resolve()))
