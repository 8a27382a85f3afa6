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
from citegate.corpus.builds import build_id
from citegate.research.study import (
    Study,
    data_table,
    load_study,
    question_records,
    searched_corpora,
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


def record_corpora(rec: Any, studies: Mapping[str, Study]) -> None:
    """Log what the run used, as `research.study.record_study` does for one study: every set's
    sampled questions (dataset "<corpus>/<set>"), the config with every build searched, the
    model ids, builds, sample sizes and retrieval time."""
    for corpus, study in studies.items():
        for name, s in study.sets.items():
            rec.dataset(
                f"{corpus}/{name}",
                s.qset.digest,
                len(s.questions),
                f"data/questions/{name}.jsonl",
                build_id(s.corpus),
                records=question_records(s.questions),
            )
    first = next(iter(studies.values()))
    rec.config(first.config.replace(corpora=all_searched(studies)).to_dict())
    sets = [(c, n, s) for c, st in studies.items() for n, s in st.sets.items()]
    rec.note(
        embedder=first.embedder_id,
        reranker=first.reranker_id,
        corpus_builds=",".join(sorted({build_id(s.corpus) for _, _, s in sets})),
        sample_sizes=",".join(f"{c}/{n}:{len(s.questions)}" for c, n, s in sets),
        retrieval_seconds=round(sum(sum(st.seconds.values()) for st in studies.values()), 2),
    )


def all_searched(studies: Mapping[str, Study]) -> tuple[str, ...]:
    """Every corpus build the studies searched, in order, each once."""
    return tuple(dict.fromkeys(b for st in studies.values() for b in searched_corpora(st)))


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
