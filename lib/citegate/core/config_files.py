"""The configs that have names: the production file, the design numbers, a config file.

- *Production* is `experiments/production.yaml` (`PRODUCTION`), written only by `citegate promote`:
  `read_production()` returns the validated document (version, pipeline, provenance, accepted_on),
  `production()` its `PipelineConfig`. `citegate ask`, `citegate.store.load_production_config()`
  (which also checks the embedder against the database) and a notebook's `CONFIG = "production"`
  all mean this file; `resolve(CONFIG, PIPELINE)` is how a notebook picks its base config.
- `named(name)` is the config a name means, with where it came from (`NamedConfig`): "production",
  "design" (`core.config.DESIGN`) or the path of a YAML file.

This module reads files only; it never touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.config import DESIGN, PipelineConfig, load_config
from citegate.core.errors import ConfigError
from citegate.core.inputs import shown
from citegate.core.yamlfile import read_yaml

PRODUCTION = paths.EXPERIMENTS / "production.yaml"

TOP_LEVEL_KEYS = ("version", "pipeline", "provenance", "accepted_on")
# Names a version-2 file used for metrics that pooled every kind of negative; read as the
# explicit pooled names so nobody mistakes them for the per-kind guards of later versions.
LEGACY_METRICS = {
    "false_answer_rate": "false_answer_rate.pooled",
    "gate_auroc": "gate_auroc.pooled",
}


def read_production(path: Path | None = None) -> dict[str, Any]:
    """The production document: {version, pipeline, provenance, accepted_on}, validated, read
    by `core.yamlfile.read_yaml` (a regular file, size-limited, no aliases, anchors or tags).

    Refused with a ConfigError naming the file and key: unknown top-level keys, a version that
    is not a positive integer, a pipeline that is not a non-empty mapping (an empty one would
    silently mean the design defaults), a missing provenance. `accepted_on` metric names of
    version-2 files are renamed to their explicit pooled names (`LEGACY_METRICS`).
    """
    path = Path(path or PRODUCTION)
    doc = read_yaml(path, "production config")
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping with keys {list(TOP_LEVEL_KEYS)}")
    _check_document(doc, path)
    PipelineConfig.from_dict(doc["pipeline"], source=f"{path}: pipeline")
    return {**doc, "accepted_on": accepted_metrics(doc.get("accepted_on") or {})}


def _check_document(doc: dict[str, Any], path: Path) -> None:
    """Raise a ConfigError naming the first key of the production file that is wrong."""
    unknown = sorted(map(str, set(doc) - set(TOP_LEVEL_KEYS)))
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level key(s) {unknown}; known: {list(TOP_LEVEL_KEYS)}"
        )
    missing = [k for k in ("version", "pipeline", "provenance") if k not in doc]
    if missing:
        raise ConfigError(f"{path}: missing key(s) {missing}")
    version = doc["version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(f"{path}: version must be a positive integer, got {shown(version)}")
    if not isinstance(doc["pipeline"], dict) or not doc["pipeline"]:
        raise ConfigError(
            f"{path}: pipeline must be a non-empty mapping of config keys, got {shown(doc['pipeline'])}"
        )
    if not isinstance(doc["provenance"], dict):
        raise ConfigError(f"{path}: provenance must be a mapping, got {shown(doc['provenance'])}")
    if doc.get("accepted_on") is not None and not isinstance(doc["accepted_on"], dict):
        raise ConfigError(f"{path}: accepted_on must be a mapping of metric names")


def accepted_metrics(accepted_on: dict[str, Any]) -> dict[str, Any]:
    """`accepted_on` with legacy pooled metric names replaced by their explicit names."""
    return {LEGACY_METRICS.get(k, k): v for k, v in accepted_on.items()}


def production(path: Path | None = None) -> PipelineConfig:
    """The production `PipelineConfig` from the validated production file (no database check:
    `citegate.store.load_production_config` adds the embedder check against the stored corpora)."""
    return _from_document(Path(path or PRODUCTION), "production").config


@dataclass(frozen=True)
class NamedConfig:
    """A config and where it came from. `source`: "production", "design" or the path of a YAML
    file; `version` and `source_run`: the production document's (None for the design numbers, a
    plain config file, and any file that is not production byte for byte: see `named`)."""

    config: PipelineConfig
    source: str
    version: int | None = None
    source_run: str | None = None
    edited: bool = False  # values changed after loading (`with_config`): not the file as is

    def describe(self) -> dict[str, Any]:
        """{source, version, source_run, edited}: what `citegate ask --json` reports under
        "config"."""
        return {
            "source": self.source,
            "version": self.version,
            "source_run": self.source_run,
            "edited": self.edited,
        }

    def with_config(self, config: PipelineConfig) -> NamedConfig:
        """The same origin with `config` in place of its own, marked edited when it differs."""
        edited = self.edited or config != self.config
        return NamedConfig(config, self.source, self.version, self.source_run, edited)

    def label(self) -> str:
        """One line for a person: which config, its version and the run it was promoted from."""
        if self.source == "design":
            return "design (the design numbers, core.config.DESIGN; not production)"
        edited = ", with values changed after loading" if self.edited else ""
        if self.version is None:
            return self.source + (f" ({edited[2:]})" if edited else "")
        run = self.source_run or "unknown"
        return f"{self.source} (version {self.version}, source run {run}{edited})"


def named(name: str | Path) -> NamedConfig:
    """The config a name means: "production" (`PRODUCTION`, validated), "design" (`DESIGN`), or
    the path of a YAML file: a production document (version, provenance) or a plain config
    (optionally under a `pipeline:` key). Any file but `PRODUCTION` is labelled by its path
    alone, with its own values: the version and source run a production-shaped copy carries
    are claims about the values promote wrote, which an edit to the copy makes untrue, so they
    are kept only for a copy whose bytes are production's (`_same_as_production`)."""
    if name == "design":
        return NamedConfig(DESIGN, "design")
    path = PRODUCTION if name == "production" else Path(name)
    source = "production" if name == "production" else str(name)
    if name != "production" and not _is_production_document(path):
        return NamedConfig(load_config(path), source)
    choice = _from_document(path, source)
    if name == "production" or _same_as_production(path):
        return choice
    return NamedConfig(choice.config, source)


def _same_as_production(path: Path) -> bool:
    """Whether the file at `path` holds exactly the bytes of `PRODUCTION` (False when either
    cannot be read)."""
    try:
        return path.read_bytes() == PRODUCTION.read_bytes()
    except OSError:
        return False


def _from_document(path: Path, source: str) -> NamedConfig:
    """The config of a production-shaped document, with its version and source run."""
    doc = read_production(path)
    config = PipelineConfig.from_dict(doc["pipeline"], source=str(path))
    return NamedConfig(config, source, doc["version"], doc["provenance"].get("source_run"))


def _is_production_document(path: Path) -> bool:
    """Whether a config file is shaped like the production file (a version and a provenance);
    an unreadable file is not (`load_config` then names the problem)."""
    try:
        data = read_yaml(path, "config file")
    except ConfigError:
        return False
    return isinstance(data, dict) and "version" in data and "provenance" in data


def resolve(name: str, overrides: dict[str, Any] | None = None) -> PipelineConfig:
    """A notebook's config: the base named by its `CONFIG` parameter (`named`: "production",
    "design" or a path), with its `PIPELINE` overrides (the spec's `pipeline:` block) on top."""
    return named(name).config.replace(**(overrides or {}))


__all__ = [
    "LEGACY_METRICS",
    "PRODUCTION",
    "TOP_LEVEL_KEYS",
    "NamedConfig",
    "accepted_metrics",
    "named",
    "production",
    "read_production",
    "resolve",
]
