"""Notebook 03 over several corpora: one `Study` per corpus, loaded and recorded side by side.

The corpora parameter maps a corpus name to that corpus's sets (`set name -> corpus build
searched`), e.g. {"gita-split": {"gita-split": "gita-split", "out-of-scope": "gita-split"},
"xquad-split": {...}}. The same question set (out-of-scope) may appear under several corpora,
searching each one's build, so each corpus gets its own Study and its datasets are recorded under
"<corpus>/<set>".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.research.study import (
    Study,
    all_searched,
    data_table,
    load_study,
    record_studies,
)


def check_corpora(corpora: Mapping[str, Any], production: str) -> None:
    """Each corpus maps to a non-empty {set: build} mapping, and the production corpus (whose
    thresholds become the recommendation) is one of them; a ConfigError names what is wrong."""
    problems = [
        f"{name!r} must map question sets to the corpus build each searches, got {sets!r}"
        for name, sets in corpora.items()
        if not isinstance(sets, Mapping)
        or not sets
        or not all(isinstance(v, str) for v in sets.values())
    ]
    if production not in corpora:
        problems.append(f"the recommendation's corpus {production!r} is not among {list(corpora)}")
    if problems:
        raise ConfigError("CORPORA: " + "; ".join(problems))


def load_corpora(
    corpora: Mapping[str, Mapping[str, str]],
    cfg: PipelineConfig,
    *,
    limit: int,
    split: str | None,
    reranker: str | None,
) -> dict[str, Study]:
    """`load_study` per corpus, in the order given (same sampling, traces and gold as a
    one-corpus run of that corpus)."""
    return {
        name: load_study(dict(sets), cfg, limit=limit, split=split, reranker=reranker)
        for name, sets in corpora.items()
    }


# One multi-corpus recorder for notebooks 03 and 05 (`research.study.record_studies`).
record_corpora = record_studies


def corpora_data_table(studies: Mapping[str, Study]) -> pd.DataFrame:
    """`research.study.data_table` of every corpus, with the corpus as the first column."""
    parts = [data_table(st).assign(corpus=c) for c, st in studies.items()]
    frame = pd.concat(parts, ignore_index=True)
    return frame[["corpus", *[c for c in frame.columns if c != "corpus"]]]


def corpora_config_table(studies: Mapping[str, Study]) -> pd.DataFrame:
    """The run's pipeline config as a two-column table, with every build the corpora searched
    (the config `record_corpora` logs); one config serves every corpus."""
    first = next(iter(studies.values()))
    d = first.config.replace(corpora=all_searched(studies)).to_dict()
    d["reranker (scores used)"] = first.reranker_id
    return pd.DataFrame({"key": list(d), "value": [str(v) for v in d.values()]})
