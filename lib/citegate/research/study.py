"""Loading what every experiment needs: sampled question sets, cached traces, resolved gold.

One call gives a notebook the shared retrieval pass (retrieved once per question set, stored
fragment set, collection config and models; later runs read the trace cache and touch no model).
The studies that compare corpora (notebooks 03 and 05) load one `Study` per corpus with
`load_studies`, name each corpus's metrics with `metric_prefix` and start their recommendation
from `production_base`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from citegate.core import config, config_files
from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.corpus.builds import build_id
from citegate.corpus.questions import Question, QuestionSet, load_set, resolve_gold
from citegate.evaluation.sampling import salted_order
from citegate.models.embed import default_embedder
from citegate.pipeline.retrieve import RetrievalResult, RetrievalTrace, replay
from citegate.research.traces import traces_for
from citegate.research.vector_replay import PackedTraces, VectorResult, pack, replay_many
from citegate.store.db import connect
from citegate.store.production import load_reranker

SAMPLE_SALT = "citegate-sample"


@dataclass
class StudySet:
    """One question set as used by a run: the sample, its traces and gold fragment ids."""

    qset: QuestionSet
    corpus: str
    questions: list[Question]
    traces: dict[str, RetrievalTrace]
    gold: dict[str, list[int]]
    _packed: PackedTraces | None = field(default=None, init=False, repr=False, compare=False)

    def replay_all(self, cfg: PipelineConfig) -> dict[str, RetrievalResult]:
        """Replay every trace under `cfg` (no database, no model): full results, with every
        candidate's stage, for studies that need more than the notes."""
        cfg = cfg.replace(corpora=[self.corpus])
        return {q.id: replay(self.traces[q.id], cfg) for q in self.questions}

    def replay_summaries(self, cfg: PipelineConfig) -> dict[str, VectorResult]:
        """The notes (fragment ids, in order), decision and max cosine `replay_all` gives, computed
        for every question at once as array operations (`research.vector_replay`): the fast path
        for sweeps over many configs. The traces are packed once per set and reused."""
        if self._packed is None:
            self._packed = pack([self.traces[q.id] for q in self.questions])
        results = replay_many(self._packed, cfg.replace(corpora=[self.corpus]))
        return {q.id: r for q, r in zip(self.questions, results, strict=True)}


@dataclass
class Study:
    """Every set of one experiment run, plus how long the shared retrieval pass took."""

    sets: dict[str, StudySet]
    config: PipelineConfig
    reranker_id: str
    embedder_id: str
    seconds: dict[str, float] = field(default_factory=dict)
    reranker: Any = None  # the reranker object that scored the traces (an LTR model: its file)


def sample(
    questions: Sequence[Question],
    limit: int,
    labels: Sequence[str] | None = None,
) -> list[Question]:
    """A deterministic sample: up to `limit` questions per label (0 = all), by salted id hash."""
    out: list[Question] = []
    for label in labels or sorted({q.label for q in questions}):
        pool = salted_order((q for q in questions if q.label == label), _id, SAMPLE_SALT)
        out += pool[:limit] if limit else pool
    return out


def _id(q: Question) -> str:
    return q.id


def load_study(
    set_corpora: dict[str, str],
    cfg: PipelineConfig,
    *,
    limit: int = 0,
    split: str | None = None,
    reranker: str | None = None,
    progress: bool = True,
    select: Callable[[str, Question], bool] | None = None,
) -> Study:
    """Sample each set (`set name -> corpus build searched`), fetch/collect traces, resolve gold.
    `select(set name, question)`, when given, keeps only the questions it accepts before the
    sample is drawn (a fold study asks each build only the questions of its own folds).

    A warm run (all traces cached) opens the database only to resolve gold references. Uncached
    traces are collected over `cfg.workers` connections (0 = one per core; `traces_for`), with
    the same traces as a serial pass.
    """
    emb = default_embedder()
    if reranker and reranker != cfg.reranker:  # another reranker: not the config's model file
        cfg = cfg.replace(reranker=reranker, reranker_model="", reranker_model_digest="")
    cfg = cfg.replace(embedder=emb.id)
    rr = load_reranker(cfg)
    sets: dict[str, StudySet] = {}
    seconds: dict[str, float] = {}
    with connect() as conn:
        for name, corpus in set_corpora.items():
            clock = time.perf_counter()
            qset = load_set(name)
            qs = [q for q in qset.questions if split in (None, "all", q.split)]
            qs = [q for q in qs if select(name, q)] if select else qs
            qs = sample(qs, limit)
            set_cfg = cfg.replace(corpora=[corpus])
            traces = traces_for(conn, qs, set_cfg, emb, rr, progress=progress)
            gold = resolve_gold(conn, _subset(qset, qs), emb.id) if qset.corpus != "*" else {}
            sets[name] = StudySet(qset, corpus, qs, traces, gold)
            seconds[name] = time.perf_counter() - clock
    return Study(sets, cfg, rr.id, emb.id, seconds, rr)


def _subset(qset: QuestionSet, qs: Sequence[Question]) -> QuestionSet:
    return QuestionSet(qset.name, qset.corpus, tuple(qs))


def load_studies(
    corpora: Mapping[str, Mapping[str, str]],
    cfg: PipelineConfig,
    *,
    limit: int,
    split: str | None = "all",
    reranker: str | None,
) -> dict[str, Study]:
    """One `Study` per corpus (`corpus -> {question set -> corpus build searched}`), in the order
    given, each exactly the `load_study` of a one-corpus run; `split` "all" (the default) keeps
    every split for a study that splits tune/test itself. The same question set (out-of-scope)
    may appear under several corpora, searching each one's build."""
    return {
        name: load_study(dict(sets), cfg, limit=limit, split=split, reranker=reranker)
        for name, sets in corpora.items()
    }


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


def metric_prefix(corpus: str, production: str | None = None) -> str:
    """The metric-name prefix of one corpus build: its first word and "_" (gita-split ->
    "gita_", xquad-split -> "xquad_"); none for `production`, whose metrics keep the names of
    a one-corpus run (notebook 03's spec and guards read them)."""
    return "" if corpus == production else corpus.split("-")[0] + "_"


def production_base() -> PipelineConfig:
    """The current production config (what a recommendation changes), or the design defaults."""
    return config_files.production() if config_files.PRODUCTION.exists() else config.DESIGN


def record_study(rec: object, study: Study) -> None:
    """Log on a Recorder what the run actually used: each set's sampled questions (id, label,
    language, split) with its digest and corpus build, the config with the corpora actually
    searched (not the spec's default), and the model ids."""
    for name, s in study.sets.items():
        rec.dataset(  # type: ignore[attr-defined]
            name,
            s.qset.digest,
            len(s.questions),
            f"data/questions/{name}.jsonl",
            build_id(s.corpus),
            records=question_records(s.questions),
        )
    rec.config(study.config.replace(corpora=searched_corpora(study)).to_dict())  # type: ignore[attr-defined]
    rec.note(  # type: ignore[attr-defined]
        embedder=study.embedder_id,
        reranker=study.reranker_id,
        corpus_builds=",".join(sorted({build_id(s.corpus) for s in study.sets.values()})),
        sample_sizes=",".join(f"{n}:{len(s.questions)}" for n, s in study.sets.items()),
        retrieval_seconds=round(sum(study.seconds.values()), 2),
    )


def record_studies(rec: Any, studies: Mapping[str, Study]) -> None:
    """Log what a run comparing corpora used, as `record_study` does for one study: every set's
    sampled questions (dataset "<corpus>/<set>"), the config with every build searched, the
    model ids, builds, sample sizes and retrieval time. (`record_study` twice would overwrite:
    the out-of-scope set is searched against every corpus.)"""
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


def searched_corpora(study: Study) -> tuple[str, ...]:
    """The corpus builds the study's sets searched, in set order, each once."""
    return tuple(dict.fromkeys(s.corpus for s in study.sets.values()))


def question_records(questions: Sequence[Question]) -> list[dict[str, str]]:
    """One row per question used (id, label, language, split): a dataset's real rows."""
    return [
        {"id": q.id, "label": q.label, "language": q.language, "split": q.split} for q in questions
    ]


def data_table(study: Study) -> Any:
    """Per set: corpus build searched, digest, and sampled questions by label and language."""
    import pandas as pd

    rows = []
    for name, s in study.sets.items():
        for (label, lang), n in sorted(Counter((q.label, q.language) for q in s.questions).items()):
            rows.append(
                {
                    "set": name,
                    "searched build": build_id(s.corpus),
                    "set digest": s.qset.digest[:12],
                    "label": label,
                    "language": lang,
                    "questions": n,
                }
            )
    return pd.DataFrame(rows)


def config_table(study: Study) -> Any:
    """The pipeline config of the run as a two-column table (every threshold, models), with the
    corpora the sets actually searched (the same config the runner logs)."""
    import pandas as pd

    d = study.config.replace(corpora=searched_corpora(study)).to_dict()
    d["reranker (scores used)"] = study.reranker_id
    return pd.DataFrame({"key": list(d), "value": [str(v) for v in d.values()]})


def corpora_data_table(studies: Mapping[str, Study]) -> Any:
    """`data_table` of every corpus, with the corpus as the first column."""
    import pandas as pd

    parts = [data_table(st).assign(corpus=c) for c, st in studies.items()]
    frame = pd.concat(parts, ignore_index=True)
    return frame[["corpus", *[c for c in frame.columns if c != "corpus"]]]


def corpora_config_table(studies: Mapping[str, Study]) -> Any:
    """The run's pipeline config as a two-column table, with every build the corpora searched
    (the config `record_studies` logs); one config serves every corpus."""
    import pandas as pd

    first = next(iter(studies.values()))
    d = first.config.replace(corpora=all_searched(studies)).to_dict()
    d["reranker (scores used)"] = first.reranker_id
    return pd.DataFrame({"key": list(d), "value": [str(v) for v in d.values()]})
