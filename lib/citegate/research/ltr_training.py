"""Training data and the training run of the learning-to-rank reranker (`citegate.models.ltr`).

A question's pool is what `retrieve._rerank` scores: every candidate of its cosine trace that the
ANN lanes found (`ann_missed` ones, seen only by the exact check, are left out of training and
eval), with texts fetched from the database by fragment id. `train_ltr` builds pairs from the TUNE
split's pools of each question set, lets `models.ltr.fit` pick the model by cross-validated
nDCG@10, and saves the winner with its metadata under `var/models/ltr-<name>.json`.
"""

from __future__ import annotations

import datetime as dt
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.corpus.questions import load_set, resolve_gold
from citegate.evaluation.sampling import salted_sample
from citegate.models.embed import default_embedder, default_embedder_id
from citegate.models.ltr.features import FEATURE_NAMES, check_feature_names
from citegate.models.ltr.fit import pairs_from, select_and_fit
from citegate.models.ltr.model import (
    DEFAULT_NAME,
    LTRReranker,
    bare_name,
    load_ltr,
    load_run,
    save_ltr,
)
from citegate.models.rerank import CosineReranker
from citegate.pipeline.retrieve import collect, text_signature
from citegate.research.traces import traces_for
from citegate.store.tables import fragment_texts

DEFAULT_SETS = ("gita", "xquad")
# How the training pools' dense lanes search (`PipelineConfig.exact_dense`): exactly, so the pools,
# and so the model file and its digest, depend on the stored rows alone. With HNSW pools two fresh
# builds of the same data trained two different models (coefficients up to 3.8e-3 apart,
# 138,480 vs 138,482 pairs), which moved every rerank number downstream.
TRAINING_DENSE = "exact"

# (question id, question text, group, pool, gold fragment ids): one question's training input.
Item = tuple[str, str, str, list[Any], list[int]]


def pick_questions(questions: Sequence[Any], limit: int | None) -> list[Any]:
    """A deterministic, order-independent sample: the `limit` questions with the lowest id hash
    (mixes languages and sources; a smaller limit gives a subset of a larger one)."""
    return salted_sample(questions, lambda q: q.id, limit)


def pools_with_text(conn: Any, traces: dict[str, Any]) -> tuple[dict[str, list[Any]], list[str]]:
    """(question id -> the trace's rerank pool (not `ann_missed`) with texts from the database,
    ids of the stale traces).

    Slim traces hold fragment ids of the database they were collected from (the trace cache does
    not key on the database), so each fetched text is checked against the candidate's `text_sig`:
    a trace with any mismatch is stale (collected from another database or an older ingest) and is
    left out of the pools."""
    texts = fragment_texts(
        conn, (c.fragment_id for t in traces.values() for c in t.candidates if not c.ann_missed)
    )
    out: dict[str, list[Any]] = {}
    stale = []
    for qid, trace in traces.items():
        pool = _pool_with_text(trace, texts)
        if pool is None:
            stale.append(qid)
        else:
            out[qid] = pool
    return out, stale


def _pool_with_text(trace: Any, texts: dict[int, str]) -> list[Any] | None:
    """The trace's rerank pool with texts filled in; None when any text is missing or changed."""
    pool = []
    for c in trace.candidates:
        if c.ann_missed:
            continue
        text = texts.get(c.fragment_id)
        if text is None or (c.text_sig and text_signature(text) != c.text_sig):
            return None
        pool.append(replace(c, text=text))
    return pool


def set_pools(
    conn: Any,
    set_name: str,
    split: str,
    limit: int | None,
    embedder: Any,
    *,
    store: Any = None,
    progress: bool = True,
    lexical_backend: str = "postgres",
) -> tuple[Any, list[Any], dict[str, list[int]], dict[str, list[Any]]]:
    """(question set, questions, gold ids, pools with text) for one set and split: the set's
    answerable questions of `split`, cosine traces collected (or read from the trace cache) with
    `PipelineConfig(embedder=..., corpora=(the set's corpus,), exact_dense=True,
    lexical_backend=...)` (`TRAINING_DENSE`; the lexical lane the reranker will serve behind;
    `rerank-eval` reads its pools here too), exact check on as in
    `traces_for`. Stale cached traces (see `pools_with_text`) are collected afresh (and not
    written back) with a warning."""
    qset = load_set(set_name)
    questions = pick_questions(qset.where(split=split, label="answerable"), limit)
    gold = resolve_gold(conn, qset, embedder.id)
    cfg = PipelineConfig(
        embedder=embedder.id,
        corpora=(qset.corpus,),
        exact_dense=TRAINING_DENSE == "exact",
        lexical_backend=lexical_backend,
    )
    traces = traces_for(
        conn, questions, cfg, embedder, CosineReranker(), store=store, progress=progress
    )
    pools, stale = pools_with_text(conn, traces)
    if stale:
        warnings.warn(
            f"{set_name}/{split}: {len(stale)} cached traces do not match this database's "
            "fragments (cached from another database?); collecting them afresh",
            stacklevel=2,
        )
        by_id = {q.id: q for q in questions}
        for qid in stale:
            trace = collect(
                conn, by_id[qid].text, cfg, embedder, CosineReranker(), exact_check=True
            )
            pools[qid] = [c for c in trace.candidates if not c.ann_missed]
    return qset, questions, gold, pools


def _set_items(
    conn: Any,
    set_name: str,
    limit: int | None,
    emb: Any,
    store: Any,
    progress: bool,
    lexical_backend: str,
) -> tuple[list[Item], dict[str, Any]]:
    """One set's tune-split training items and its entry in the model metadata."""
    qset, questions, gold, pools = set_pools(
        conn, set_name, "tune", limit, emb, store=store, progress=progress,
        lexical_backend=lexical_backend,
    )  # fmt: skip
    n_pairs = sum(len(pools[q.id]) for q in questions)
    n_hit = sum(any(c.fragment_id in set(gold[q.id]) for c in pools[q.id]) for q in questions)
    meta = {
        "name": set_name,
        "corpus": qset.corpus,
        "build_id": qset.build_id(),
        "digest": qset.digest,
        "questions": len(questions),
        "questions_with_gold_in_pool": int(n_hit),
        "pairs": int(n_pairs),
    }
    items = [
        (f"{set_name}:{q.id}", q.text, f"{set_name}:{q.group}", pools[q.id], gold[q.id])
        for q in questions
    ]
    return items, meta


def train_ltr(
    conn: Any,
    name: str = DEFAULT_NAME,
    set_names: Sequence[str] = DEFAULT_SETS,
    embedder: Any = None,
    progress: bool = True,
    *,
    limit: int | None = None,
    folds: int = 5,
    random_state: int = 0,
    store: Any = None,
    models: Sequence[str] | None = None,
    extra_features: Sequence[str] = (),
    lexical_backend: str = "postgres",
) -> dict[str, Any]:
    """Train on the tune split of each set (at most `limit` questions per set) on `FEATURE_NAMES`
    plus `extra_features` (of `OPTIONAL_FEATURES`), the pools gathered by the lanes a config with
    `lexical_backend` runs, pick the model by cross-validated nDCG@10, save it under
    `var/models/ltr-<name>.json`; returns the metadata."""
    import sklearn

    name = bare_name(name)
    names = check_feature_names(FEATURE_NAMES + tuple(extra_features))
    emb = embedder or default_embedder()
    clock = time.perf_counter()
    items: list[Item] = []
    sets_meta = []
    for set_name in set_names:
        set_items, set_meta = _set_items(
            conn, set_name, limit, emb, store, progress, lexical_backend
        )
        items += set_items
        sets_meta.append(set_meta)
    collect_s = time.perf_counter() - clock
    clock = time.perf_counter()
    pairs = pairs_from(items, progress=progress, names=names)
    features_s = time.perf_counter() - clock
    clock = time.perf_counter()
    model, winner, cv = select_and_fit(
        pairs, folds=folds, random_state=random_state, progress=progress, models=models
    )
    fit_s = time.perf_counter() - clock
    meta = {
        "name": name,
        "id": f"ltr/{name}",
        "model": winner,
        "model_repr": repr(model),
        "split": "tune",
        "limit_per_set": limit,
        "sets": sets_meta,
        "embedder": emb.id,
        "feature_names": list(names),
        "sklearn": sklearn.__version__,
        "n_pairs": int(len(pairs.y)),
        "n_positive": int(pairs.y.sum()),
        "n_questions": pairs.n_questions,
        "cv": cv,
        "random_state": random_state,
        "dense": TRAINING_DENSE,
        "lexical_backend": lexical_backend,
    }
    run = {
        "seconds": {"collect": collect_s, "features": features_s, "fit": fit_s},
        "trained_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    reranker = LTRReranker(name, model, meta)
    path = save_ltr(reranker, run=run)
    return {**reranker.meta, **run, "path": str(path), "digest": reranker.digest}


def current_reason(
    name: str,
    set_names: Sequence[str],
    limit: int | None,
    extra_features: Sequence[str] = (),
    lexical_backend: str = "postgres",
) -> str:
    """Non-empty when the saved model `name` was trained on exactly these inputs (sets and their
    digests, limit, features, scikit-learn version, embedder, dense search of the pools): then
    retraining changes nothing."""
    import sklearn

    try:
        meta = load_ltr(name).meta
    except ConfigError:
        return ""
    want = {(n, load_set(n).digest) for n in set_names}
    have = {(m["name"], m["digest"]) for m in meta.get("sets", [])}
    same = (
        want == have
        and meta.get("limit_per_set") == limit
        and meta.get("feature_names") == list(FEATURE_NAMES) + list(extra_features)
        and meta.get("sklearn") == sklearn.__version__
        and meta.get("embedder") == default_embedder_id()
        and meta.get("dense", "hnsw") == TRAINING_DENSE
        and meta.get("lexical_backend", "postgres") == lexical_backend
    )
    trained_at = load_run(name).get("trained_at", "earlier")
    return f"trained {trained_at} on the same inputs" if same else ""
