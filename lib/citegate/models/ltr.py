"""A learning-to-rank reranker: a scikit-learn classifier over (question, candidate) pair features,
trained on the TUNING split only.

Features are computed in Python from the question text and what a `Scorable` carries (text, cosine,
kind, lang, lanes; `addr_label` when the candidate has one), so the same function serves training
(slim traces + texts fetched by fragment id) and serving (`collect` passes full candidates):

- cosine, its rank within the question's candidates and its gap to the question's best cosine
  (e5 cosines are compressed into ~0.75-0.9, so the relative features carry most of the signal);
- lane flags (dense / lexical / address / address-exact, found in round 2 only) and the lane count;
- character-trigram Jaccard between question and passage (a stand-in for pg_trgm similarity);
- crude-stem overlap (first 5 chars of each lowercase word; a stand-in for the `russian` full-text
  rank) and exact-word overlap (the `simple` config), both normalized by the question's words;
- whether a canonical verse address in the question names the passage's address;
- kind one-hot, log passage length, question/passage language match.

The candidate pool of a question is what `retrieve._rerank` scores: every candidate that the ANN
lanes found (`ann_missed` ones, seen only by the exact check, are left out of training and eval).

Two models are cross-validated on the tune split by nDCG@10 (GroupKFold over question groups, so a
verse or an article never sits on both sides of a fold): `HistGradientBoostingClassifier` and a
standardized `LogisticRegression`. The winner is refit on the whole tune split and pickled with its
metadata under `var/models/ltr-<name>.pkl`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import math
import os
import pickle
import re
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from citegate.core import paths
from citegate.core.errors import CitegateError, ConfigError
from citegate.core.fragments import KINDS
from citegate.corpus.sources.address import find_verse_refs, verse_label
from citegate.evaluation.sampling import salted_sample

MODEL_FORMAT = 1
DEFAULT_NAME = "default"
DEFAULT_SETS = ("gita", "xquad")
STEM_LEN = 5
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_CYRILLIC = re.compile(r"[\u0400-\u04FF]")
_DEVANAGARI = re.compile(r"[\u0900-\u097F]")
# A few function words that would otherwise dominate the crude overlaps (en + ru).
_STOP_WORDS = """the and for are was were what who whom whose which when where why how that this these those
    with from into does did has have had not but its his her their they them you your about than
    then there also can could would should will been being such very
    что как кто где когда почему зачем какой какая какие каком чем это этот эта эти для при был была
    были было его она они оно или так все всех также только уже ещё еще над под без из-за чтобы"""
_STOP = frozenset(_STOP_WORDS.split())

FEATURE_NAMES: tuple[str, ...] = (
    "cosine",
    "cos_rank",
    "cos_gap",
    "lane_dense",
    "lane_lexical",
    "lane_address",
    "lane_address_exact",
    "round2_only",
    "n_lanes",
    "trgm_jaccard",
    "stem_overlap",
    "word_overlap",
    "address_match",
    *(f"kind_{k}" for k in KINDS),
    "log_len",
    "lang_match",
)


# ---------------------------------------------------------------- features


def guess_lang(text: str) -> str:
    """Crude script guess: Devanagari → `hi`, Cyrillic → `ru`, anything else → `en`."""
    dev = len(_DEVANAGARI.findall(text))
    cyr = len(_CYRILLIC.findall(text))
    if dev and dev >= cyr:
        return "hi"
    return "ru" if cyr else "en"


def _words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text.lower()) if len(w) > 2 and w not in _STOP]


def trigrams(text: str) -> frozenset[str]:
    """pg_trgm-style trigrams: lowercase alphanumeric words, each padded "  w " then cut in 3s."""
    out: set[str] = set()
    for w in _WORD_RE.findall(text.lower()):
        padded = f"  {w} "
        out.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


@dataclass(frozen=True)
class _Profile:
    trigrams: frozenset[str]
    words: frozenset[str]
    stems: frozenset[str]
    log_len: float


@lru_cache(maxsize=50_000)
def _profile(text: str) -> _Profile:
    words = _words(text)
    return _Profile(
        trigrams(text),
        frozenset(words),
        frozenset(w[:STEM_LEN] for w in words),
        math.log1p(len(text)),
    )


def clear_caches() -> None:
    """Forget the per-text profiles (so a throughput measurement starts cold)."""
    _profile.cache_clear()


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _share(q: frozenset[str], p: frozenset[str]) -> float:
    return len(q & p) / len(q) if q else 0.0


def _lane_family(tag: str) -> str:
    lane = tag.split("@", 1)[0]
    if lane.startswith(("dense:", "exact:")):
        return "dense"
    if lane.startswith("address:exact"):
        return "address_exact"
    if lane.startswith("address"):
        return "address"
    if lane.startswith("lexical"):
        return "lexical"
    return "other"


def features(question: str, cands: Sequence[Any]) -> np.ndarray:
    """The (len(cands), len(FEATURE_NAMES)) float matrix of pair features.

    Each candidate needs `text`, `score` (cosine), `kind`, `lang`, `lanes`; `addr_label` is read when
    present. The relative features (`cos_rank`, `cos_gap`) are computed over `cands`, which should be
    the question's whole candidate pool."""
    n = len(cands)
    out = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float64)
    if n == 0:
        return out
    qp = _profile(question)
    qlang = guess_lang(question)
    qaddr = {verse_label(c, v) for c, v in find_verse_refs(question)}
    cos = np.array([float(c.score) for c in cands], dtype=np.float64)
    desc = np.sort(-cos)
    rank = np.searchsorted(desc, -cos, side="left") + 1  # 1 + number of strictly better cosines
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    out[:, col["cosine"]] = cos
    out[:, col["cos_rank"]] = rank
    out[:, col["cos_gap"]] = cos - cos.max()
    for i, c in enumerate(cands):
        row = out[i]
        tags = tuple(c.lanes or ())
        fams = {_lane_family(t) for t in tags}
        row[col["lane_dense"]] = "dense" in fams
        row[col["lane_lexical"]] = "lexical" in fams
        row[col["lane_address"]] = "address" in fams
        row[col["lane_address_exact"]] = "address_exact" in fams
        row[col["round2_only"]] = bool(tags) and not any(t.endswith("@r1") for t in tags)
        row[col["n_lanes"]] = len(tags)
        pp = _profile(c.text or "")
        row[col["trgm_jaccard"]] = _jaccard(qp.trigrams, pp.trigrams)
        row[col["stem_overlap"]] = _share(qp.stems, pp.stems)
        row[col["word_overlap"]] = _share(qp.words, pp.words)
        addr = getattr(c, "addr_label", None)
        row[col["address_match"]] = bool(qaddr and addr and addr in qaddr)
        if c.kind in KINDS:
            row[col[f"kind_{c.kind}"]] = 1.0
        row[col["log_len"]] = pp.log_len
        row[col["lang_match"]] = (c.lang or "").split("-")[0].lower() == qlang
    return out


# ---------------------------------------------------------------- models and selection


def model_factories(random_state: int = 0) -> dict[str, Callable[[], Any]]:
    """The candidate models, by short name (fresh, unfitted estimators)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "hgb": lambda: HistGradientBoostingClassifier(
            max_iter=200,
            learning_rate=0.05,
            max_leaf_nodes=31,
            min_samples_leaf=20,
            l2_regularization=1.0,
            early_stopping=False,
            random_state=random_state,
        ),
        "logreg": lambda: make_pipeline(
            StandardScaler(), LogisticRegression(C=1.0, max_iter=2000, random_state=random_state)
        ),
    }


def _positive_proba(model: Any, X: np.ndarray) -> np.ndarray:
    classes = list(model.classes_)
    proba = model.predict_proba(X)
    return proba[:, classes.index(1)] if 1 in classes else np.zeros(len(X))


def _dcg(rel: np.ndarray, k: int) -> float:
    rel = rel[:k]
    return float(np.sum(rel / np.log2(np.arange(2, len(rel) + 2))))


def ndcg_by_question(
    scores: np.ndarray, y: np.ndarray, qid: np.ndarray, cosine: np.ndarray, k: int = 10
) -> float:
    """Mean nDCG@k over the questions with at least one positive in the pool (ideal = the pool's
    positives; ties broken by cosine). Used for model selection only."""
    vals = []
    for q in np.unique(qid):
        m = qid == q
        yq = y[m]
        if not yq.any():
            continue
        order = np.lexsort((-cosine[m], -scores[m]))
        ideal = _dcg(np.sort(yq)[::-1].astype(float), k)
        vals.append(_dcg(yq[order].astype(float), k) / ideal)
    return float(np.mean(vals)) if vals else float("nan")


@dataclass
class PairSet:
    """Training pairs: features, labels, the question each row belongs to and its group."""

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    groups: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_questions(self) -> int:
        return int(len(np.unique(self.qid)))


def pairs_from(
    items: Iterable[tuple[str, str, str, Sequence[Any], Iterable[int]]],
    progress: bool = False,
) -> PairSet:
    """Build pairs from (question id, question text, group, candidates, gold fragment ids)."""
    xs, ys, qids, groups = [], [], [], []
    for q_id, text, group, cands, gold in tqdm(
        list(items), desc="features", unit="q", disable=not progress
    ):
        if not cands:
            continue
        gold = set(gold)
        xs.append(features(text, cands))
        ys.append(np.array([c.fragment_id in gold for c in cands], dtype=np.int8))
        qids += [q_id] * len(cands)
        groups += [group] * len(cands)
    if not xs:
        raise CitegateError("no training pairs: no question had any candidate")
    return PairSet(
        np.vstack(xs),
        np.concatenate(ys),
        np.array(qids, dtype=object),
        np.array(groups, dtype=object),
    )


def select_and_fit(
    pairs: PairSet,
    folds: int = 5,
    random_state: int = 0,
    progress: bool = False,
    models: Sequence[str] | None = None,
    threads: int | None = 1,
) -> tuple[Any, str, dict[str, Any]]:
    """Cross-validate every model (or those named in `models`) by nDCG@10 (GroupKFold over
    question groups), refit the winner on all pairs; returns (fitted model, winner, CV report).
    Fits run on `threads` OpenMP threads (None: the library default; see `_one_thread`)."""
    with _one_thread(threads):
        return _select_and_fit(pairs, folds, random_state, progress, models)


def _select_and_fit(
    pairs: PairSet,
    folds: int,
    random_state: int,
    progress: bool,
    models: Sequence[str] | None,
) -> tuple[Any, str, dict[str, Any]]:
    from sklearn.model_selection import GroupKFold

    if pairs.y.min() == pairs.y.max():
        raise CitegateError("training pairs hold only one class (no gold candidate, or only gold)")
    factories = model_factories(random_state)
    if models:
        unknown = sorted(set(models) - set(factories))
        if unknown:
            raise ConfigError(f"unknown LTR model(s) {unknown}; known: {sorted(factories)}")
        factories = {k: v for k, v in factories.items() if k in models}
    n_groups = len(set(pairs.groups))
    k = max(2, min(folds, n_groups))
    cos = pairs.X[:, FEATURE_NAMES.index("cosine")]
    per_fold: dict[str, list[float]] = {name: [] for name in factories}
    splits = list(GroupKFold(n_splits=k).split(pairs.X, pairs.y, pairs.groups))
    bar = tqdm(total=len(splits) * len(factories), desc="cv", disable=not progress)
    for train, test in splits:
        for name, make in factories.items():
            if pairs.y[train].min() == pairs.y[train].max():
                per_fold[name].append(float("nan"))
            else:
                model = make().fit(pairs.X[train], pairs.y[train])
                s = _positive_proba(model, pairs.X[test])
                per_fold[name].append(
                    ndcg_by_question(s, pairs.y[test], pairs.qid[test], cos[test])
                )
            bar.update()
    bar.close()
    per_fold["none"] = [
        ndcg_by_question(cos[test], pairs.y[test], pairs.qid[test], cos[test]) for _, test in splits
    ]
    means = {name: float(np.nanmean(v)) for name, v in per_fold.items()}
    winner = max(factories, key=lambda n: (np.nan_to_num(means[n], nan=-1.0), n == "hgb"))
    model = factories[winner]().fit(pairs.X, pairs.y)
    report = {"folds": k, "metric": "ndcg@10", "mean": means, "per_fold": per_fold}
    return model, winner, report


# ---------------------------------------------------------------- the reranker and its file


class LTRReranker:
    """A fitted pair classifier behind the `Reranker` protocol: the score is P(gold | features)."""

    uses_features = True  # CachedReranker keys on cosine and lanes too

    def __init__(self, name: str, model: Any, meta: dict[str, Any] | None = None) -> None:
        self.name = name
        self.id = f"ltr/{name}"
        self.model = model
        self.meta = dict(meta or {})
        # Digest of the fitted model: `id` stays `ltr/<name>` (configs name it), so a cache that
        # must not serve a retrained model's old scores should key on `cache_id` instead.
        self.version = self.meta.setdefault(
            "version", hashlib.sha256(pickle.dumps(model, protocol=5)).hexdigest()[:12]
        )
        self.cache_id = f"{self.id}@{self.version}"
        names = tuple(self.meta.get("feature_names", FEATURE_NAMES))
        if names != FEATURE_NAMES:
            raise ConfigError(
                f"LTR model {name!r} was trained on other features; retrain it with "
                f"`citegate ltr train --name {name}`"
            )

    def score(self, question: str, cands: Sequence[Any]) -> list[float]:
        """P(candidate is gold) for each candidate (pass the question's whole pool: the relative
        features are computed over it)."""
        if not cands:
            return []
        X = features(question, cands)
        with _one_thread():  # a few hundred rows: OpenMP start-up costs more than it saves
            proba = _positive_proba(self.model, X)
        return [float(p) for p in proba]


_CONTROLLER: list[Any] = []


def _one_thread(limit: int | None = 1) -> Any:
    """Limit OpenMP to `limit` threads (None: no limit). On a busy 2-core machine a full thread
    team makes HistGradientBoosting pathological: predict on ~100 rows ~140 ms vs ~2 ms on one
    thread, a fit on 322k pairs 90 s vs 10 s."""
    if limit is None:
        return contextlib.nullcontext()
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=limit, user_api="openmp")


def _bare(name: str) -> str:
    name = name.removeprefix("ltr/")
    if not _NAME_RE.match(name):
        raise ConfigError(f"bad LTR model name {name!r} (letters, digits, '.', '_', '-')")
    return name


def model_path(name: str) -> Path:
    """Where the model `name` (or `ltr/name`) is stored: `var/models/ltr-<name>.pkl`."""
    return paths.var_dir() / "models" / f"ltr-{_bare(name)}.pkl"


def save_ltr(reranker: LTRReranker, path: Path | None = None) -> Path:
    """Pickle the model with its metadata (written atomically)."""
    path = Path(path or model_path(reranker.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"format": MODEL_FORMAT, "model": reranker.model, "meta": reranker.meta}
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(pickle.dumps(blob, protocol=5))
    tmp.replace(path)
    return path


def load_ltr(name: str, path: Path | None = None) -> LTRReranker:
    """The trained model `name` (`ltr/<name>` works too); ConfigError if it was never trained."""
    import sklearn

    bare = _bare(name)
    path = Path(path or model_path(bare))
    if not path.exists():
        raise ConfigError(
            f"no trained LTR model {bare!r} at {path}; train it with "
            f"`citegate ltr train --name {bare}`"
        )
    blob = pickle.loads(path.read_bytes())
    if not isinstance(blob, dict) or blob.get("format") != MODEL_FORMAT:
        raise ConfigError(
            f"{path} is not an LTR model of format {MODEL_FORMAT}; retrain it with "
            f"`citegate ltr train --name {bare}`"
        )
    meta = blob["meta"]
    if meta.get("sklearn") != sklearn.__version__:
        warnings.warn(
            f"LTR model {bare!r} was trained with scikit-learn {meta.get('sklearn')}, "
            f"running {sklearn.__version__}",
            stacklevel=2,
        )
    return LTRReranker(bare, blob["model"], meta)


# ---------------------------------------------------------------- data from traces and the database


def pick_questions(questions: Sequence[Any], limit: int | None) -> list[Any]:
    """A deterministic, order-independent sample: the `limit` questions with the lowest id hash
    (mixes languages and sources; a smaller limit gives a subset of a larger one)."""
    return salted_sample(questions, lambda q: q.id, limit)


def fetch_texts(conn: Any, ids: Iterable[int]) -> dict[int, str]:
    """Fragment texts by id."""
    ids = sorted(set(ids))
    out: dict[int, str] = {}
    for start in range(0, len(ids), 5000):
        chunk = ids[start : start + 5000]
        out.update(conn.execute("SELECT id, text FROM fragments WHERE id = ANY(%s)", (chunk,)))
    return out


def pools_with_text(conn: Any, traces: dict[str, Any]) -> tuple[dict[str, list[Any]], list[str]]:
    """(question id -> the trace's rerank pool (not `ann_missed`) with texts from the database,
    ids of the stale traces).

    Slim traces hold fragment ids of the database they were collected from (the trace cache does
    not key on the database), so each fetched text is checked against the candidate's `text_sig`:
    a trace with any mismatch is stale (collected from another database or an older ingest) and is
    left out of the pools."""
    from citegate.pipeline.retrieve import text_signature

    texts = fetch_texts(
        conn, (c.fragment_id for t in traces.values() for c in t.candidates if not c.ann_missed)
    )
    out: dict[str, list[Any]] = {}
    stale = []
    for qid, trace in traces.items():
        pool = []
        for c in trace.candidates:
            if c.ann_missed:
                continue
            text = texts.get(c.fragment_id)
            if text is None or (c.text_sig and text_signature(text) != c.text_sig):
                stale.append(qid)
                break
            pool.append(replace(c, text=text))
        else:
            out[qid] = pool
    return out, stale


def set_pools(
    conn: Any,
    set_name: str,
    split: str,
    limit: int | None,
    embedder: Any,
    *,
    store: Any = None,
    progress: bool = True,
) -> tuple[Any, list[Any], dict[str, list[int]], dict[str, list[Any]]]:
    """(question set, questions, gold ids, pools with text) for one set and split: the set's
    answerable questions of `split`, cosine traces collected (or read from the trace cache) with
    `PipelineConfig(embedder=..., corpora=(the set's corpus,))`, exact check on as in
    `traces_for`. Stale cached traces (see `pools_with_text`) are collected afresh (and not
    written back) with a warning."""
    from citegate.core.config import PipelineConfig
    from citegate.corpus.questions import load_set, resolve_gold
    from citegate.models.rerank import CosineReranker
    from citegate.pipeline.retrieve import collect
    from citegate.research.traces import traces_for

    qset = load_set(set_name)
    questions = pick_questions(qset.where(split=split, label="answerable"), limit)
    gold = resolve_gold(conn, qset, embedder.id)
    cfg = PipelineConfig(embedder=embedder.id, corpora=(qset.corpus,))
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
) -> dict[str, Any]:
    """Train on the tune split of each set (at most `limit` questions per set), pick the model by
    cross-validated nDCG@10, save it under `var/models/ltr-<name>.pkl`; returns the metadata."""
    import sklearn

    from citegate.models.embed import default_embedder

    name = _bare(name)
    emb = embedder or default_embedder()
    clock = time.perf_counter()
    items: list[tuple[str, str, str, list[Any], list[int]]] = []
    sets_meta = []
    for set_name in set_names:
        qset, questions, gold, pools = set_pools(
            conn, set_name, "tune", limit, emb, store=store, progress=progress
        )
        n_pairs = sum(len(pools[q.id]) for q in questions)
        n_hit = sum(any(c.fragment_id in set(gold[q.id]) for c in pools[q.id]) for q in questions)
        sets_meta.append(
            {
                "name": set_name,
                "corpus": qset.corpus,
                "build_id": qset.build_id(),
                "digest": qset.digest,
                "questions": len(questions),
                "questions_with_gold_in_pool": int(n_hit),
                "pairs": int(n_pairs),
            }
        )
        items += [
            (f"{set_name}:{q.id}", q.text, f"{set_name}:{q.group}", pools[q.id], gold[q.id])
            for q in questions
        ]
    collect_s = time.perf_counter() - clock
    clock = time.perf_counter()
    pairs = pairs_from(items, progress=progress)
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
        "feature_names": list(FEATURE_NAMES),
        "sklearn": sklearn.__version__,
        "n_pairs": int(len(pairs.y)),
        "n_positive": int(pairs.y.sum()),
        "n_questions": pairs.n_questions,
        "cv": cv,
        "random_state": random_state,
        "seconds": {"collect": collect_s, "features": features_s, "fit": fit_s},
        "trained_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    reranker = LTRReranker(name, model, meta)
    path = save_ltr(reranker)
    return {**reranker.meta, "path": str(path)}


# ---------------------------------------------------------------- command line


def cmd_train(args: argparse.Namespace) -> int:
    """`citegate ltr train`: train, save, print a summary."""
    from citegate.store.db import connect

    if args.if_stale and (why := _current_reason(args)):
        print(f"ltr/{_bare(args.name)} is up to date ({why}); not retraining")
        return 0
    with connect() as conn:
        meta = train_ltr(
            conn, args.name, tuple(args.sets), limit=args.limit, models=args.models, progress=True
        )
    cv = meta["cv"]["mean"]
    print(f"saved {meta['id']} -> {meta['path']}")
    print(
        f"model {meta['model']}  ({meta['n_questions']} tune questions, {meta['n_pairs']} pairs, "
        f"{meta['n_positive']} positive)"
    )
    print("cv nDCG@10: " + "  ".join(f"{k}={v:.4f}" for k, v in cv.items()))
    return 0


def _current_reason(args: argparse.Namespace) -> str:
    """Non-empty when the saved model was trained on exactly these inputs (sets and their
    digests, limit, features, scikit-learn version, embedder): then retraining changes nothing."""
    import sklearn

    from citegate.corpus.questions import load_set
    from citegate.models.embed import default_embedder_id

    try:
        meta = load_ltr(args.name).meta
    except ConfigError:
        return ""
    want = {(n, load_set(n).digest) for n in args.sets}
    have = {(m["name"], m["digest"]) for m in meta.get("sets", [])}
    same = (
        want == have
        and meta.get("limit_per_set") == args.limit
        and meta.get("feature_names") == list(FEATURE_NAMES)
        and meta.get("sklearn") == sklearn.__version__
        and meta.get("embedder") == default_embedder_id()
    )
    return f"trained {meta.get('trained_at')} on the same inputs" if same else ""


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate ltr train` to the CLI."""
    p = sub.add_parser("ltr", help="learning-to-rank reranker (trained on the tune split)")
    s = p.add_subparsers(dest="ltr_command", required=True)
    t = s.add_parser("train", help="train an LTR reranker on the tune split and save it")
    t.add_argument("--name", default=DEFAULT_NAME, help=f"model name (default {DEFAULT_NAME})")
    t.add_argument(
        "--sets", nargs="+", default=list(DEFAULT_SETS), help="question sets (default gita xquad)"
    )
    t.add_argument("--limit", type=int, default=None, help="at most N tune questions per set")
    t.add_argument(
        "--models",
        nargs="+",
        choices=["hgb", "logreg"],
        help="candidate models (default both; the better cross-validated nDCG@10 wins)",
    )
    t.add_argument(
        "--if-stale",
        action="store_true",
        help="skip training when the saved model was trained on the same inputs",
    )
    t.set_defaults(func=cmd_train)


__all__ = [
    "FEATURE_NAMES",
    "LTRReranker",
    "features",
    "load_ltr",
    "save_ltr",
    "train_ltr",
    "register",
]
