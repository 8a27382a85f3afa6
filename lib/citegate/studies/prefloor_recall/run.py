"""Notebook 01's arms: each a pipeline variant, measured on the run's own traces where it can
replay them, on a re-collection of the same sampled questions where it cannot.

An arm is `name -> config overrides` on the run's config; an optional `config` key names another
base ("production", "design", a YAML path: `core.config_files.resolve`), a plain string is that base
alone. Its collection settings decide its
traces: equal to the run's (replay-only knobs: `pin_named_verses`, `verse_notes`, `fanout`, the
cut), the run's `Study`; otherwise (another reranker, lane depth, embedder) a `load_study` of the
same sets, sample and split under the arm's config, read from the trace cache when it has them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from citegate.core.config import PipelineConfig, save_config
from citegate.core.config_files import resolve
from citegate.core.errors import ConfigError
from citegate.research.study import Study, load_study, production_base
from citegate.studies.prefloor_recall.compute import Arm

# Collection settings that may differ between a trace and a config that replays it.
_REPLAY_FREE = ("corpora", "max_fanout_rounds")


def arm_config(base: PipelineConfig, spec: Mapping[str, Any] | str) -> PipelineConfig:
    """The arm's config: `base` (or the config its `config` key names) with the overrides."""
    if isinstance(spec, str):
        spec = {"config": spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"an arm is a mapping of config overrides or a config name, got {spec!r}")
    over = dict(spec)
    start = resolve(over.pop("config"), {}) if "config" in over else base
    return start.replace(**over)


def save_recommendation(run_dir: Any, arms: Sequence[Arm], name: str, table: Any) -> PipelineConfig:
    """Write the run folder's `recommended_config.yaml` (the config of the arm `name`, the corpora
    production searches) and `recommendation.json` (which arm, its overrides, its measured rows),
    what `citegate promote <run>` reads."""
    by_name = {a.name: a for a in arms}
    if name not in by_name:
        raise ConfigError(f"RECOMMEND_ARM {name!r} is not among the arms {sorted(by_name)}")
    cfg = recommended_config(by_name[name].config)
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    save_config(cfg, folder / "recommended_config.yaml")
    rows = table[table["arm"] == name].to_dict("records")
    why = {"arm": name, "config": cfg.to_dict(), "measured": rows}
    (folder / "recommendation.json").write_text(
        json.dumps(why, indent=2, default=float), encoding="utf-8"
    )
    return cfg


def recommended_config(cfg: PipelineConfig) -> PipelineConfig:
    """An arm's config as production would run it: searching the corpora production searches."""
    return cfg.replace(corpora=list(production_base().corpora))


def replays(study: Study, cfg: PipelineConfig) -> bool:
    """Whether `cfg` can replay the study's traces (the same collection settings)."""
    have, want = study.config.collection_key(), cfg.collection_key()
    return all(have[k] == want[k] for k in have if k not in _REPLAY_FREE)


def load_arms(
    study: Study,
    arms: Mapping[str, Mapping[str, Any] | str],
    *,
    limit: int,
    split: str,
    progress: bool = True,
) -> list[Arm]:
    """Every arm with the traces it is measured on, in the order given."""
    sets = {name: s.corpus for name, s in study.sets.items()}
    out = []
    for name, spec in arms.items():
        cfg = arm_config(study.config, spec)
        if replays(study, cfg):
            out.append(Arm(name, cfg, study, recollected=False))
            continue
        own = load_study(sets, cfg, limit=limit, split=split, reranker=None, progress=progress)
        out.append(Arm(name, own.config, own, recollected=True))
    return out
