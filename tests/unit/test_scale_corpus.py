"""The scale bench's synthetic corpora (`research.scale_corpus`): seeded mixtures of same-kind real
fragments, spliced texts, unit vectors, and the nearest-neighbour profile that tells them from
noisy copies."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from citegate.core.fragments import Fragment
from citegate.research import scale_corpus as sc

KINDS = ["verse"] * 40 + ["commentary"] * 15 + ["track_transcript"] * 4 + ["letter"] * 2
KINDS += ["prose_chapter"]  # a kind with one fragment: its rows can only copy it


def base_vectors(n: int = len(KINDS), dim: int = 384, seed: int = 0) -> np.ndarray:
    """Unit vectors as anisotropic as real embeddings (pairwise cosine ~0.8)."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(dim)
    v = 2.0 * common / np.linalg.norm(common) + rng.standard_normal((n, dim)) / np.sqrt(dim)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def fragments() -> list[Fragment]:
    """One fragment per kind in KINDS, each of three numbered sentences."""
    return [
        Fragment(
            f"f{i}", "gita", kind, f"src{i}", f"F{i} one. F{i} two; F{i} three?", "en",
            addr_label=f"BG {i}.1",
        )
        for i, kind in enumerate(KINDS)
    ]  # fmt: skip


def test_plans_and_vectors_are_seeded() -> None:
    base = base_vectors()
    a, b = sc.mixture_plan(KINDS, 500, 7), sc.mixture_plan(KINDS, 500, 7)
    assert np.array_equal(a.sources, b.sources) and np.array_equal(a.weights, b.weights)
    assert np.array_equal(sc.block_vectors(base, a, 0), sc.block_vectors(base, b, 0))
    other = sc.mixture_plan(KINDS, 500, 8)
    assert not np.array_equal(a.sources, other.sources)
    assert not np.array_equal(sc.block_vectors(base, a, 0), sc.block_vectors(base, other, 0))


def test_sources_are_distinct_of_one_kind_and_keep_the_kind_mix() -> None:
    plan = sc.mixture_plan(KINDS, 3 * len(KINDS), 1)
    kinds = np.asarray(KINDS)
    most = {"letter": 2, "prose_chapter": 1}  # kinds with fewer than 3 fragments
    for src in plan.sources:
        used = src[src >= 0]
        assert len(set(used.tolist())) == len(used) and len(set(kinds[used])) == 1
        assert min(2, most.get(kinds[used[0]], 3)) <= len(used) <= most.get(kinds[used[0]], 3)
    assert Counter(kinds[plan.sources[:, 0]]) == Counter(
        {k: 3 * c for k, c in Counter(KINDS).items()}
    )
    counts = (plan.sources >= 0).sum(axis=1)
    assert set(counts[kinds[plan.sources[:, 0]] == "verse"]) == {2, 3}


def test_weights_are_descending_and_sum_to_one() -> None:
    plan = sc.mixture_plan(KINDS, 400, 2)
    w = plan.weights
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-6) and np.all(np.diff(w, axis=1) <= 0)
    assert np.all((w > 0) == (plan.sources >= 0))


def test_vectors_are_unit_distinct_and_the_same_whichever_way_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sc, "BLOCK", 64)  # several blocks at a tiny size
    base = base_vectors()
    plan = sc.mixture_plan(KINDS, 300, 3)
    vecs = np.vstack([v for _, v in sc.iter_blocks(base, plan)])
    assert vecs.shape == (300, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert len(np.unique(vecs, axis=0)) == 300  # no two synthetic rows identical
    idx = np.array([299, 5, 64, 130])
    assert np.array_equal(sc.rows_vectors(base, plan, idx), vecs[idx])


def test_texts_are_spliced_from_their_sources_sentences() -> None:
    frags = fragments()
    plan = sc.mixture_plan(KINDS, 200, 4)
    texts = sc.Texts(frags, plan, "scale")
    made = [texts.fragment(i) for i in range(len(plan))]
    assert len({f.key for f in made}) == len(made)
    for i, f in enumerate(made):
        src = [int(s) for s in plan.sources[i] if s >= 0]
        dom = frags[src[0]]
        assert (f.kind, f.addr_label, f.source_id, f.corpus) == (
            dom.kind, dom.addr_label, dom.source_id, "scale"
        )  # fmt: skip
        pool = {s for j in src for s in sc.sentences(frags[j].text)}
        assert set(sc.sentences(f.text)) <= pool
        assert set(sc.sentences(f.text)) & set(sc.sentences(dom.text))  # the dominant is in it
    spliced = [f for i, f in enumerate(made) if (plan.sources[i] >= 0).sum() > 1]
    assert all(f.text not in {g.text for g in frags} for f in spliced)


def test_copies_keep_the_text_verbatim() -> None:
    frags = fragments()
    plan = sc.make_plan("copies", KINDS, 2 * len(KINDS), 5, None)
    assert plan.noise == sc.COPY_NOISE and np.all(plan.sources[:, 1:] == -1)
    texts = sc.Texts(frags, plan, "scale")
    assert all(texts.fragment(i).text == frags[plan.sources[i, 0]].text for i in range(len(plan)))


def test_unknown_corpus_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown synthetic corpus"):
        sc.make_plan("clones", KINDS, 10, 0, None)


def test_splice_takes_a_weight_share_of_each_source() -> None:
    got = sc.splice([["a1", "a2", "a3", "a4"], ["b1", "b2"]], [0.75, 0.25], row=0)
    assert got == ["a1", "a2", "a3", "b1"]
    assert sc.splice([["a1", "a2"]], [1.0], row=9) == ["a1", "a2"]  # whole: verbatim order
    assert sc.sentences("One. Two; three? four, five") == [
        "One.",
        "Two;",
        "three?",
        "four,",
        "five",
    ]


def test_nearest_profile_on_a_hand_made_example() -> None:
    angles = np.radians([0.0, 5.0, 30.0, 90.0, 180.0])
    vecs = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    nn = np.cos(np.radians([5.0, 5.0, 25.0, 60.0, 90.0]))  # each row's nearest other row
    got = sc.nearest_profile(vecs, sample=10)
    assert got["rows"] == 5 and got["n"] == 5
    for q in sc.QUANTILES:
        assert got[f"p{q}"] == pytest.approx(np.percentile(nn, q), abs=1e-6)
    assert got["above_0.99"] == pytest.approx(0.4) and got["above_0.98"] == pytest.approx(0.4)
    # k = 4 other rows: each row's 4th nearest, and the relative gap (c1 - c4) / (1 - c4)
    c4 = np.cos(np.radians([180.0, 175.0, 150.0, 90.0, 180.0]))
    assert got["gap16_p50"] == pytest.approx(np.median((nn - c4) / (1 - c4)), abs=1e-6)
    assert got["tied16"] == 0.0
    # streamed in pieces, against a sample, it finds the same neighbours
    probe = sc.Nearest(vecs[[2, 4]], np.array([2, 4]), k=2)
    probe.update(0, vecs[:3])
    probe.update(3, vecs[3:])
    want = [[nn[2], np.cos(np.radians(30))], [0.0, np.cos(np.radians(150))]]
    assert np.allclose(-np.sort(-probe.top, axis=1), want, atol=1e-6)


def test_relative_gaps() -> None:
    got = sc.relative_gaps(np.array([0.9, 1.0, 0.8, 1.0]), np.array([0.8, 0.5, 0.8, 1.0]))
    assert np.allclose(got, [0.5, 1.0, 0.0, 0.0])  # equidistant and all-duplicate rows: 0


def test_mixtures_have_far_fewer_near_ties_than_copies() -> None:
    base = base_vectors()
    n = 100 * len(base)  # as at 1M (~222 per real row), the copies' siblings fill every top-16
    mixtures = sc.plan_profile(base, sc.make_plan("mixtures", KINDS, n, 16, None), 400)
    copies = sc.plan_profile(base, sc.make_plan("copies", KINDS, n, 16, None), 400)
    assert copies["tied16"] > 0.5 and mixtures["tied16"] < copies["tied16"] / 10
    assert mixtures["gap16_p50"] > 3 * copies["gap16_p50"]
