"""The learning-to-rank reranker: pair features, fitting, persistence, and a small real training."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import psycopg
import pytest
from conftest import make_candidate

from citegate.cli import ltr as ltr_cli
from citegate.core.errors import ConfigError
from citegate.core.text import script_language
from citegate.evaluation.metrics import mrr, ndcg_at_k
from citegate.models.embed import default_embedder
from citegate.models.ltr.features import (
    FEATURE_NAMES,
    KNOWN_FEATURES,
    UNIT_FEATURES,
    cyrillic_stems,
    features,
    roman_stems,
    verse_unit,
)
from citegate.models.ltr.fit import ndcg_by_question, pairs_from, select_and_fit
from citegate.models.ltr.model import LTRReranker, load_ltr, save_ltr
from citegate.models.rerank import CachedReranker, make_reranker
from citegate.pipeline.retrieve import Candidate, RetrievalTrace, text_signature
from citegate.research import ltr_training
from citegate.research.rerank_eval import compare_rerankers, to_markdown
from citegate.research.traces import TraceStore


def cand(
    fid: int,
    text: str,
    score: float,
    lanes: tuple[str, ...] = ("dense:library@r1",),
    kind: str = "prose_chapter",
    lang: str = "en",
    addr: str | None = None,
) -> Candidate:
    return make_candidate(
        fid,
        text=text,
        score=score,
        lanes=lanes,
        kind=kind,
        lang=lang,
        addr_label=addr,
        corpus="t",
        source_id="s",
    )


def col(name: str) -> int:
    return FEATURE_NAMES.index(name)


# ---------------------------------------------------------------- features


def test_feature_matrix_shape_and_relative_cosine() -> None:
    cands = [
        cand(1, "a text", 0.80),
        cand(2, "b text", 0.90),
        cand(3, "c text", 0.80),
        cand(4, "d text", 0.75),
    ]
    X = features("question", cands)
    assert X.shape == (4, len(FEATURE_NAMES))
    assert X[:, col("cosine")].tolist() == [0.80, 0.90, 0.80, 0.75]
    assert X[:, col("cos_rank")].tolist() == [2, 1, 2, 4]  # ties share the better rank
    assert np.allclose(X[:, col("cos_gap")], [-0.1, 0.0, -0.1, -0.15])
    assert features("q", []).shape == (0, len(FEATURE_NAMES))


def test_lane_flags_and_counts() -> None:
    c = cand(
        1,
        "t",
        0.8,
        lanes=("dense:verses@r1", "lexical@r2", "address@r1", "address:exact@r1", "lexical@r2"),
    )
    only_r2 = cand(2, "t", 0.7, lanes=("dense:verses@r2", "lexical@r2"))
    X = features("q", [c, only_r2])
    row = dict(zip(FEATURE_NAMES, X[0], strict=True))
    assert row["lane_dense"] == row["lane_lexical"] == 1
    assert row["lane_address"] == row["lane_address_exact"] == 1
    assert row["round2_only"] == 0 and row["n_lanes"] == 5
    row2 = dict(zip(FEATURE_NAMES, X[1], strict=True))
    assert row2["round2_only"] == 1 and row2["lane_address"] == row2["lane_address_exact"] == 0


def test_text_overlaps_kind_length_language_and_address() -> None:
    q = "Что говорит Кришна о бессмертии души?"
    good = cand(1, "Кришна говорит, что душа бессмертна и вечна.", 0.8, lang="ru")
    bad = cand(
        2, "The Super Bowl was played in Santa Clara.", 0.8, kind="verse", lang="en", addr="BG 2.13"
    )
    X = features(q, [good, bad])
    g, b = X
    assert g[col("trgm_jaccard")] > b[col("trgm_jaccard")] == 0.0
    # question words: говорит кришна бессмертии души ("что" is a stop word, "о" too short);
    # stems shared: кришн, говор, бессм (души/душа differ); exact words shared: говорит, кришна
    assert g[col("stem_overlap")] == pytest.approx(3 / 4)
    assert g[col("word_overlap")] == pytest.approx(2 / 4)
    assert b[col("stem_overlap")] == b[col("word_overlap")] == 0.0
    assert g[col("kind_prose_chapter")] == 1 and g[col("kind_verse")] == 0
    assert b[col("kind_verse")] == 1
    assert g[col("lang_match")] == 1 and b[col("lang_match")] == 0
    assert g[col("log_len")] == pytest.approx(math.log1p(len(good.text)))
    assert X[:, col("address_match")].tolist() == [0, 0]
    X2 = features("What does Bg. 2.13 teach?", [bad, good])
    assert X2[:, col("address_match")].tolist() == [1, 0]


def test_roman_overlap_finds_a_quoted_verse_in_its_romanised_sanskrit() -> None:
    q = "दृष्ट्वा तु पाण्डवानीकं व्यूढं का क्या अर्थ है?"
    assert roman_stems(q) == {"drish", "panda", "vyudh"}  # "तु", "का", "क्या", "है" dropped
    verse = "Sanjaya said...\n\ndṛiṣhṭvā tu pāṇḍavānīkaṁ vyūḍhaṁ duryodhanastadā"
    cands = [cand(1, verse, 0.80, kind="verse"), cand(2, "Arjuna said: O Krishna", 0.82)]
    X = features(q, cands, KNOWN_FEATURES)
    roman = KNOWN_FEATURES.index("roman_overlap")
    assert X[:, roman].tolist() == [1.0, 0.0]
    assert np.array_equal(X[:, : len(FEATURE_NAMES)], features(q, cands))
    assert features("What did Duryodhana see?", cands, KNOWN_FEATURES)[:, roman].tolist() == [0, 0]


def test_cyrillic_overlap_finds_sanskrit_names_of_a_russian_question_in_english_passages() -> None:
    q = "Что сказал Арджуна Кришне о Дхритараштре?"
    assert cyrillic_stems(q) == {"skaza", "arjun", "krish", "dhrit"}  # "что", "о" dropped
    cands = [
        cand(1, "Arjuna said: O Krishna, Dhritarashtra's sons...", 0.80, kind="verse"),
        cand(2, "The field of dharma", 0.82),
    ]
    X = features(q, cands, KNOWN_FEATURES)
    assert X[:, KNOWN_FEATURES.index("cyrillic_overlap")].tolist() == [0.75, 0.0]
    assert X[:, KNOWN_FEATURES.index("roman_overlap")].tolist() == [0.0, 0.0]
    assert features("Who is Arjuna?", cands, KNOWN_FEATURES)[:, -1].tolist() == [0.0, 0.0]


def test_a_verses_views_are_one_unit_and_a_lone_frame_match_is_not() -> None:
    """Three views of BG 2.20 (two translations the lexical lane found, its word meanings) carry
    the unit's count, lexical share, best overlap, best cosine gap and best lexical rank; a verse
    that shares only "Krishna" is a unit of one, and so is a passage without an address."""
    q = "What does Krishna say about the soul that cannot be killed?"
    lex = ("lexical@r1", "dense:verses@r1")
    cands = [
        cand(1, "It is not killed when the body is killed.", 0.84, lex, "verse", addr="BG 2.20"),
        cand(2, "The soul is never born and never dies.", 0.83, lex, "verse", addr="BG 2.20"),
        cand(3, "hanyate—is killed; na—not", 0.80, kind="commentary", addr="BG 2.20 word meanings"),
        cand(4, "Lord Shri Krishna said: Arjuna!", 0.87, kind="verse", addr="BG 11.53"),
        cand(5, "A summary of chapter two.", 0.85),
    ]
    cands[0] = replace(cands[0], lex_rank=4)
    cands[1] = replace(cands[1], lex_rank=2)
    assert [verse_unit(c) for c in cands] == ["BG 2.20"] * 3 + ["BG 11.53", None]
    X = features(q, cands, (*FEATURE_NAMES, *UNIT_FEATURES))
    unit = X[:, len(FEATURE_NAMES) :]
    views, lexical, overlap, gap, rank = unit.T
    assert views.tolist() == pytest.approx([math.log1p(3)] * 3 + [math.log1p(1)] * 2)
    assert lexical.tolist() == pytest.approx([2 / 3] * 3 + [0.0, 0.0])
    assert gap.tolist() == pytest.approx([0.84 - 0.87] * 3 + [0.0, 0.85 - 0.87])
    assert rank.tolist() == pytest.approx([0.5] * 3 + [0.0, 0.0])
    base_overlap = X[:, col("stem_overlap")]
    assert overlap[:3].tolist() == pytest.approx([base_overlap[:3].max()] * 3)
    assert overlap[3:].tolist() == pytest.approx(base_overlap[3:].tolist())
    assert np.array_equal(X[:, : len(FEATURE_NAMES)], features(q, cands))


def test_columns_follow_the_names_asked_and_unknown_names_are_refused() -> None:
    cands = [cand(1, "a text", 0.80), cand(2, "b text", 0.90)]
    X = features("question", cands, ("lang_match", "cosine"))
    assert X.tolist() == [[1.0, 0.80], [1.0, 0.90]]
    for bad in (("cosine", "nope"), ("cosine", "cosine"), ("lang_match",)):
        with pytest.raises(ConfigError, match="LTR feature list"):
            features("question", cands, bad)


def test_language_guess() -> None:
    assert script_language("Кто такой Арджуна?") == "ru"
    assert script_language("कर्मण्येवाधिकारस्ते") == "hi"
    assert script_language("Who is Arjuna?") == "en"


# ---------------------------------------------------------------- fitting and persistence

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda"]
WORDS += ["sigma", "omega", "tau", "rho"]


def synthetic_items(n: int, seed: int = 0) -> list:
    """Questions whose gold passage shares their words (cosines are uninformative noise)."""
    rnd = random.Random(seed)
    items = []
    for i in range(n):
        topic = rnd.sample(WORDS, 3)
        others = [w for w in WORDS if w not in topic]
        q = " ".join(topic) + "?"
        cands = [cand(i * 10, " ".join(topic + rnd.sample(others, 3)), rnd.uniform(0.75, 0.9))]
        cands += [
            cand(i * 10 + j, " ".join(rnd.sample(others, 6)), rnd.uniform(0.75, 0.9))
            for j in range(1, 8)
        ]
        rnd.shuffle(cands)
        items.append((f"q{i}", q, f"g{i}", cands, [i * 10]))
    return items


@pytest.fixture(scope="module")
def tiny_model() -> LTRReranker:
    pairs = pairs_from(synthetic_items(40))
    assert pairs.n_questions == 40 and pairs.y.sum() == 40
    model, winner, report = select_and_fit(pairs, folds=4)
    assert winner in ("hgb", "logreg")
    assert set(report["mean"]) == {"hgb", "logreg", "none"}
    assert report["mean"][winner] > report["mean"]["none"]
    import sklearn

    meta = {"feature_names": list(FEATURE_NAMES), "sklearn": sklearn.__version__}
    return LTRReranker("tiny", model, meta)


def test_trained_model_ranks_the_relevant_candidate_first(tiny_model: LTRReranker) -> None:
    q = "gamma kappa omega?"
    rel = cand(1, "omega and gamma with kappa", 0.78)
    irr = cand(2, "alpha beta delta sigma", 0.86)
    s = tiny_model.score(q, [irr, rel])
    assert len(s) == 2 and all(0.0 <= x <= 1.0 for x in s)
    assert s[1] > s[0]
    assert tiny_model.id == "ltr/tiny" and tiny_model.uses_features is True
    assert tiny_model.score(q, []) == []


def test_json_round_trip(
    tiny_model: LTRReranker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path))
    path = save_ltr(tiny_model, run={"trained_at": "now"})
    assert path == tmp_path / "models" / "ltr-tiny.json"
    assert json.loads(path.read_text())["kind"] == "citegate.ltr_model"  # data, not a pickle
    again = load_ltr("ltr/tiny")
    assert again.id == "ltr/tiny" and again.meta == tiny_model.meta
    assert again.cache_id == tiny_model.cache_id == f"ltr/tiny@{tiny_model.version}"
    assert again.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert load_ltr("ltr/tiny", digest=again.digest).digest == again.digest
    cands = [c for item in synthetic_items(3, seed=7) for c in item[3]]
    assert again.score("alpha beta gamma", cands) == tiny_model.score("alpha beta gamma", cands)


def test_an_altered_or_foreign_model_file_is_refused(
    tiny_model: LTRReranker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path))
    path = save_ltr(tiny_model)
    with pytest.raises(ConfigError, match="differs from the expected"):
        load_ltr("tiny", digest="0" * 64)
    doc = json.loads(path.read_text())
    doc["estimator"]["n_features"] = 3
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="malformed LTR estimator"):
        load_ltr("tiny")
    path.write_bytes(b"\x80\x05pickle")
    with pytest.raises(ConfigError, match="not a JSON LTR model"):
        load_ltr("tiny")


def test_a_model_names_its_features_so_an_optional_one_leaves_the_others_scoring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model trained with `roman_overlap` saves and loads with its 21 columns, a default model
    file beside it keeps its 20, and a file naming an unknown feature is refused by name."""
    import sklearn

    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path))
    names = (*FEATURE_NAMES, "roman_overlap")
    pairs = pairs_from(synthetic_items(30), names=names)
    assert pairs.X.shape[1] == len(names) and pairs.names == names
    model, _, _ = select_and_fit(pairs, folds=3, models=["logreg"])
    meta = {"feature_names": list(names), "sklearn": sklearn.__version__}
    path = save_ltr(LTRReranker("roman", model, meta))
    again = load_ltr("roman")
    assert again.feature_names == names
    assert json.loads(path.read_text())["feature_names"] == list(names)
    cands = synthetic_items(1, seed=5)[0][3]
    assert len(again.score("अर्जुन alpha", cands)) == len(cands)
    doc = json.loads(path.read_text())
    doc["feature_names"][-1] = doc["meta"]["feature_names"][-1] = "mystery"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        ConfigError, match=r"ltr-roman.json: LTR model was trained on other features"
    ):
        load_ltr("roman")


def test_missing_model_names_the_training_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path))
    with pytest.raises(ConfigError, match=r"citegate ltr train --name nothing"):
        load_ltr("ltr/nothing")
    with pytest.raises(ConfigError):
        load_ltr("../escape")


def test_make_reranker_loads_a_trained_model_uncached(
    tiny_model: LTRReranker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path))
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))  # not the shared rerank cache
    save_ltr(tiny_model)
    r = make_reranker("ltr/tiny")
    # pool-dependent features: per-pair caching would mix pools, so the LTR is never pair-cached
    assert not isinstance(r, CachedReranker) and r.id == "ltr/tiny"
    cands = synthetic_items(1, seed=3)[0][3]
    assert r.score("alpha beta", cands) == pytest.approx(tiny_model.score("alpha beta", cands))


def test_cli_registers_ltr_train(monkeypatch: pytest.MonkeyPatch) -> None:
    p = argparse.ArgumentParser()
    ltr_cli.register(p.add_subparsers(dest="command"))
    args = p.parse_args(["ltr", "train", "--name", "x", "--sets", "xquad", "--limit", "5"])
    assert (args.name, args.sets, args.limit, args.func) == ("x", ["xquad"], 5, ltr_cli.cmd_train)
    args = p.parse_args(["ltr", "train"])
    assert (args.name, args.sets, args.limit, args.models, args.extra_features) == (
        "default",
        ["gita", "xquad"],
        None,
        None,
        [],
    )
    args = p.parse_args(["ltr", "train", "--extra-features", "roman_overlap"])
    assert args.extra_features == ["roman_overlap"]
    assert args.lexical_backend == "postgres"
    args = p.parse_args(["ltr", "train", "--lexical-backend", "bm25"])
    assert args.lexical_backend == "bm25"


def test_rerank_eval_metrics_are_the_evaluation_ones() -> None:
    """rerank_eval ranks with `citegate.evaluation.metrics` (its private copies are gone)."""
    from citegate.research import rerank_eval

    assert rerank_eval.ndcg_at_k is ndcg_at_k and rerank_eval.mrr is mrr
    assert ndcg_at_k([[5, 1, 2]], [[1]]) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k([[1, 2], [3]], [[1, 2], []]) == pytest.approx(1.0)  # no gold: skipped
    assert mrr([[5, 6, 1], [5]], [[1], [1]]) == pytest.approx(1 / 6)


def _old_ndcg_by_question(
    scores: np.ndarray, y: np.ndarray, qid: np.ndarray, cosine: np.ndarray, k: int = 10
) -> float:
    """The model-selection nDCG as ltr computed it before it used `metrics.ndcg_at_k`."""

    def dcg(rel: np.ndarray) -> float:
        rel = rel[:k]
        return float(np.sum(rel / np.log2(np.arange(2, len(rel) + 2))))

    vals = []
    for q in np.unique(qid):
        m = qid == q
        yq = y[m]
        if not yq.any():
            continue
        order = np.lexsort((-cosine[m], -scores[m]))
        vals.append(dcg(yq[order].astype(float)) / dcg(np.sort(yq)[::-1].astype(float)))
    return float(np.mean(vals)) if vals else float("nan")


def test_model_selection_ndcg_matches_the_old_per_question_copy() -> None:
    """Same numbers as the removed copy, ties (by score, then cosine, then pool order) included."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        qid = rng.integers(0, 8, n).astype(object)
        y = (rng.random(n) < 0.2).astype(np.int8)
        cos = np.round(rng.uniform(0.7, 0.9, n), 2)
        s = np.round(rng.random(n), 1)
        new, old = ndcg_by_question(s, y, qid, cos), _old_ndcg_by_question(s, y, qid, cos)
        assert new == pytest.approx(old, rel=1e-12, abs=1e-15) or (
            math.isnan(new) and math.isnan(old)
        )
    # the pool [gold?] ordered by score: positives at ranks 2 and 3 of 3, ideal at 1 and 2
    got = ndcg_by_question(
        np.array([0.9, 0.5, 0.1]),
        np.array([0, 1, 1]),
        np.array(["q"] * 3, dtype=object),
        np.array([0.8, 0.8, 0.8]),
    )
    assert got == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))


def test_markdown_table() -> None:
    import pandas as pd

    md = to_markdown(pd.DataFrame([{"reranker": "none", "ndcg@10": 0.5, "mrr": 0.25}]))
    assert md.splitlines()[2] == "| none | 0.5000 | 0.2500 |"


# ---------------------------------------------------------------- on the demo database


@pytest.mark.db
def test_train_and_compare_on_a_small_xquad_sample(
    demo: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path))
    # Traces hold fragment ids of the database they came from: keep the demo's apart.
    store = TraceStore(tmp_path / "traces.sqlite")
    emb = default_embedder()
    meta = ltr_training.train_ltr(
        demo, "t40", ("xquad",), emb, progress=False, limit=40, folds=3, store=store
    )
    assert Path(meta["path"]) == tmp_path / "models" / "ltr-t40.json"
    assert meta["n_questions"] == 40 and meta["n_positive"] > 0
    assert meta["sets"][0]["name"] == "xquad" and len(meta["sets"][0]["digest"]) == 64
    df = compare_rerankers(
        demo, "xquad", ["none", "ltr/t40"], "test", 40, emb, store=store, progress=False
    )
    assert list(df["reranker"]) == ["none", "ltr/t40"]
    assert (df["questions"] == 40).all()
    assert df["ndcg@10"].map(math.isfinite).all() and (df["pairs_per_s"] > 0).all()
    # Deterministic: the same data, traces collected afresh into another cache, gives a
    # byte-identical model file (what a promotion commits by digest).
    first = Path(meta["path"]).read_bytes()
    again = ltr_training.train_ltr(
        demo, "t40", ("xquad",), emb, progress=False, limit=40, folds=3,
        store=TraceStore(tmp_path / "traces2.sqlite"),
    )  # fmt: skip
    assert Path(again["path"]).read_bytes() == first and again["digest"] == meta["digest"]


def test_pools_take_texts_by_id_and_flag_stale_traces() -> None:
    class FakeConn:
        def execute(self, sql: str, params: tuple) -> list[tuple[int, str]]:
            assert "FROM fragments WHERE id = ANY(%s)" in sql
            texts = {1: "one", 2: "two", 3: "three"}
            return [(i, texts[i]) for i in params[0] if i in texts]

    def slim(fid: int, text: str, missed: bool = False) -> Candidate:
        c = cand(fid, "", 0.8)
        return replace(c, text_sig=text_signature(text), ann_missed=missed)

    def trace(*cands: Candidate) -> RetrievalTrace:
        return RetrievalTrace("q", None, {}, "e", "none", list(cands))  # type: ignore[arg-type]

    pools, stale = ltr_training.pools_with_text(
        FakeConn(),
        {
            "ok": trace(slim(1, "one"), slim(2, "two"), slim(9, "gone", missed=True)),
            "other_db": trace(slim(1, "one"), slim(3, "not three")),
            "gone": trace(slim(7, "seven")),
        },
    )
    assert [c.text for c in pools["ok"]] == ["one", "two"]  # ann_missed left out
    assert sorted(stale) == ["gone", "other_db"] and set(pools) == {"ok"}


@pytest.mark.db
def test_two_fresh_databases_give_a_byte_identical_model(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same data ingested into two new databases (fragment ids, HNSW graphs and trace
    caches all built afresh) trains to the same model bytes: what a promotion commits by digest
    does not depend on which machine or database trained it."""
    from citegate.store import db
    from citegate.store.ingest import ingest_corpus

    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path))
    emb = default_embedder()
    files = []
    for side in ("a", "b"):
        name = f"ltr_{side}_{os.getpid()}"
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            with db.connect(pg_url.replace("/postgres?", f"/{name}?")) as conn:
                ingest_corpus(conn, "xquad", emb, progress=False)
                meta = ltr_training.train_ltr(
                    conn, "fresh", ("xquad",), emb, progress=False, limit=40, folds=3,
                    store=TraceStore(tmp_path / f"traces-{side}.sqlite"),
                )  # fmt: skip
            files.append(Path(meta["path"]).read_bytes())
        finally:
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    assert files[0] == files[1]


def test_a_model_trained_on_hnsw_pools_is_retrained_by_if_stale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The training pools are collected with exact dense lanes (so the model file is
    the same on every fresh build of the data); a model whose meta lacks `dense: exact` (trained
    on HNSW pools, before) is not current, so `ltr train --if-stale` retrains it."""
    import sklearn

    from citegate.corpus.questions import load_set
    from citegate.models.embed import default_embedder_id

    meta = {
        "sets": [{"name": n, "digest": load_set(n).digest} for n in ltr_training.DEFAULT_SETS],
        "limit_per_set": 300,
        "feature_names": list(FEATURE_NAMES),
        "sklearn": sklearn.__version__,
        "embedder": default_embedder_id(),
    }
    monkeypatch.setattr(ltr_training, "load_ltr", lambda name: argparse.Namespace(meta=meta))
    monkeypatch.setattr(ltr_training, "load_run", lambda name: {"trained_at": "then"})
    assert ltr_training.current_reason("default", ltr_training.DEFAULT_SETS, 300) == ""
    meta["dense"] = ltr_training.TRAINING_DENSE
    assert "same inputs" in ltr_training.current_reason("default", ltr_training.DEFAULT_SETS, 300)
