"""The production config as a service loads it: `experiments/production.yaml`, validated, and
refused when its embedder is not the one its corpora were embedded with (vectors of two embedders
never mix). Reading the file is `core.config_files.production`; this module adds the database check,
and for the learned gate the model file check (`load_gate`): the file the config names, relative
to the config file's folder (`experiments/` for production: `models/gate-<digest12>.json`), must
lie inside its `models/` folder (real path: no absolute path, '..' or link out), be a regular
file of bounded size (`core.inputs.read_file_bytes`), have the digest the config records, name only known signals, and need no reranker the
config does not run; an LTR reranker's model file (`models/ltr-<digest12>.json`) likewise must
exist with its recorded digest (`load_reranker`).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.config_files import PRODUCTION, production
from citegate.core.errors import ConfigError
from citegate.core.verdicts import RoleVerdict, read_verdict
from citegate.models import gate_model
from citegate.models.gate_model import LearnedGate
from citegate.models.ltr.model import LTRReranker, load_ltr
from citegate.models.protocols import Reranker
from citegate.models.rerank import make_reranker
from citegate.store.db import connect

GATE_MODEL_FILE = "gate_model.json"  # what experiment 05 writes into its run folder
LTR_MODEL_FILE = "ltr_model.json"  # the LTR model a run scored with, in its run folder
# Where promote keeps every model a production config needs, next to production.yaml, by content
# digest (`gate-<digest12>.json`, `ltr-<digest12>.json`): a file there is never overwritten.
MODELS_DIR = "models"


def corpus_embedders(conn: psycopg.Connection, corpora: tuple[str, ...]) -> set[str]:
    """Embedder ids the given corpora were embedded with."""
    rows = conn.execute(
        "SELECT DISTINCT embedder_id FROM fragments WHERE corpus = ANY(%s)", (list(corpora),)
    ).fetchall()
    return {r[0] for r in rows}


def load_production_config(
    path: Path | None = None, conn: psycopg.Connection | None = None
) -> PipelineConfig:
    """What a production service calls: the validated production config, refused when its embedder
    differs from the one its corpora were embedded with. Without `conn` it opens the project
    database (`DATABASE_URL`); a malformed file, or a learned gate whose model file is missing,
    altered or unusable with this config (`load_gate`), is refused before any database is
    touched."""
    cfg = production(path)
    base = Path(path or PRODUCTION).parent
    if cfg.reranker_model:
        load_reranker(cfg, base)
    if cfg.gate == "learned":
        load_gate(cfg, base)
    if conn is None:
        with connect() as c:
            return check_embedder(cfg, corpus_embedders(c, cfg.corpora), path)
    return check_embedder(cfg, corpus_embedders(conn, cfg.corpora), path)


def check_embedder(
    cfg: PipelineConfig, found: set[str], path: Path | None = None
) -> PipelineConfig:
    """`cfg` when its embedder is among the corpus embedders `found`; a ConfigError otherwise."""
    if not found:
        raise ConfigError(f"{path or PRODUCTION}: corpora {list(cfg.corpora)} are not ingested")
    if cfg.embedder not in found:
        raise ConfigError(
            f"{path or PRODUCTION}: config embedder {cfg.embedder!r} differs from the "
            f"corpus embedder(s) {sorted(found)}; re-ingest or fix the config"
        )
    return cfg


def gate_model_path(
    cfg: PipelineConfig, base: Path | None = None, root: Path | None = None
) -> Path:
    """The model file a learned-gate config names: relative to `base` (the folder of the config
    file; default `experiments/`, the production file's), or absolute as given. Its real path
    (links followed) must lie inside `root` (default `base/models/`, where promote keeps every
    model a production file names; a plain `--config` file's own folder for `citegate ask`), or
    it is a one-line ConfigError: a config file cannot point the service at any file on the
    machine. An absolute name with neither `base` nor `root` is a path a caller already checked
    (`citegate ask` resolves the names of its config file first) and is taken as given."""
    return _model_file(cfg.gate_model, base, root, "learned gate's")


def reranker_model_path(
    cfg: PipelineConfig, base: Path | None = None, root: Path | None = None
) -> Path:
    """The LTR model file a config names (`reranker_model`), resolved and confined as
    `gate_model_path`."""
    return _model_file(cfg.reranker_model, base, root, "LTR reranker's")


def _model_file(name: str, base: Path | None, root: Path | None, whose: str) -> Path:
    """`name` relative to `base` (default `experiments/`), refused when its real path leaves
    `root` (default `base/models/`); see `gate_model_path`."""
    folder = Path(base or PRODUCTION.parent)
    path = Path(name)
    full = path if path.is_absolute() else folder / path
    if path.is_absolute() and base is None and root is None:
        return full
    allowed = Path(root or folder / MODELS_DIR).resolve()
    if allowed not in full.resolve().parents:
        raise ConfigError(
            f"{full}: the {whose} model file lies outside {allowed} (an absolute path, '..' or "
            "a link pointing out); a config names its model files inside that folder"
        )
    return full


def load_verdict(
    name: str, field: str, base: Path | None = None, root: Path | None = None
) -> RoleVerdict:
    """The role verdict a config's bar field (`field`) names: `name` relative to `base` (the
    config file's folder, default `experiments/`), confined to `root` (default `base/models/`)
    as model files are (`gate_model_path`), read and checked by `core.verdicts.read_verdict`; a
    missing file is a ConfigError saying where it was looked for and how to put it there."""
    path = _model_file(name, base, root, f"{field}'s verdict")
    try:
        return read_verdict(path)
    except OSError as exc:
        raise ConfigError(
            f"{path}: the verdict file {field} names is missing ({exc.strerror or exc}); adopt "
            "the passing verdict of the run that measured the role into that folder "
            "(citegate models adopt RUN_FOLDER --role ROLE)"
        ) from exc


def load_reranker(cfg: PipelineConfig, base: Path | None = None) -> Reranker:
    """The reranker `cfg` runs. An LTR model named by file (`reranker_model`, what a promoted
    config holds) is read from that file, digest checked (a ConfigError naming the file when it
    is missing or altered); any other reranker is `make_reranker(cfg.reranker)` (an LTR model
    then comes from this checkout's `var/models/`). Re-read when the file changes."""
    if not cfg.reranker_model:
        return make_reranker(cfg.reranker)
    path = reranker_model_path(cfg, base).resolve()
    st = _stat_model(path, "the LTR reranker's")
    return _cached_ltr(
        cfg.reranker, str(path), cfg.reranker_model_digest, st.st_mtime_ns, st.st_size
    )


def _stat_model(path: Path, whose: str) -> os.stat_result:
    """The model file's stat (its mtime and size key the caches), or a ConfigError naming the
    file, the folder it was looked for in and how to put it there (`missing_model_hint`)."""
    try:
        return os.stat(path)
    except OSError as exc:
        raise ConfigError(
            f"{path}: {whose} model file is missing ({exc.strerror or exc}): a config names "
            f"its model files relative to its own folder, so it was looked for in {path.parent}; "
            f"{missing_model_hint(path)}"
        ) from exc


def missing_model_hint(path: Path) -> str:
    """What to do about a missing model file `path`. Production's models live in
    `experiments/models/`: a copy of a production file elsewhere finds them only when that
    folder is copied beside it, so when production's folder holds a file of that name the hint
    says to copy it; otherwise the file comes from promoting the run that trained it."""
    promoted = (PRODUCTION.parent / MODELS_DIR).resolve()
    if path.parent.resolve() == promoted:
        return "promote the run that trained it (promote writes it there)"
    if (promoted / path.name).is_file():
        return (
            f"copy {promoted} to {path.parent} (it holds {path.name}), or keep the config "
            f"file in {PRODUCTION.parent}"
        )
    return (
        f"copy the model file into {path.parent} from beside the config it came with, or "
        "promote the run that trained it"
    )


@lru_cache(maxsize=8)
def _cached_ltr(name: str, path: str, digest: str, mtime_ns: int, size: int) -> LTRReranker:
    return load_ltr(name, Path(path), digest)


def load_gate(cfg: PipelineConfig, base: Path | None = None) -> LearnedGate:
    """The learned gate `cfg` names (`gate_model_path`), refused with a ConfigError naming the
    file when it is missing, its bytes differ from `gate_model_digest`, its format or a field is
    unknown, or it needs a reranker the config does not run. Re-read when the file changes."""
    if cfg.gate != "learned":
        raise ConfigError(f"config gate is {cfg.gate!r}, not learned: it names no gate model")
    path = gate_model_path(cfg, base).resolve()
    st = _stat_model(path, "the learned gate's")
    return _cached_gate(str(path), cfg.gate_model_digest, cfg.reranker, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _cached_gate(path: str, digest: str, reranker: str, mtime_ns: int, size: int) -> LearnedGate:
    return check_gate(gate_model.load(path, digest or None), reranker, Path(path))


def load_gate_file(path: Path, digest: str, cfg: PipelineConfig) -> LearnedGate:
    """A model file read (digest checked) and checked against `cfg` (`check_gate`)."""
    return check_gate(gate_model.load(path, digest), cfg.reranker, Path(path))


def check_gate(gate: LearnedGate, reranker: str, path: Path) -> LearnedGate:
    """`gate` when a config running `reranker` can compute every feature it reads; a ConfigError
    naming the file otherwise (the features themselves are checked when the file is read)."""
    unknown = [f for f in gate.features if f not in gate_model.FEATURES]
    if unknown:
        raise ConfigError(f"{path}: gate model feature(s) {unknown} are not known signals")
    if gate.needs_reranker and reranker == "none":
        raise ConfigError(
            f"{path}: the gate model reads ltr_max_prob (the reranker's score) but the config "
            "runs no reranker (reranker: none)"
        )
    trained = gate.trained_on.get("reranker")
    if gate.needs_reranker and isinstance(trained, str) and trained and trained != reranker:
        raise ConfigError(
            f"{path}: the gate model reads ltr_max_prob as scored by {trained!r} but the config "
            f"runs {reranker!r} (the scores are not comparable)"
        )
    return gate


__all__ = [
    "GATE_MODEL_FILE",
    "LTR_MODEL_FILE",
    "MODELS_DIR",
    "check_embedder",
    "check_gate",
    "corpus_embedders",
    "gate_model_path",
    "load_gate",
    "load_gate_file",
    "load_production_config",
    "load_reranker",
    "reranker_model_path",
]
