"""Leave-out splits: one salted mechanism for the demo split builds and for imported corpora."""

from __future__ import annotations

from collections import Counter

import pytest

from citegate.core.errors import ConfigError
from citegate.corpus.builds import heldout_gita_chapters, heldout_xquad_articles
from citegate.corpus.holdout import HOLDOUT_SALT, Folds, Holdout, folds, held_out, share_count
from citegate.corpus.sources.xquad import load_xquad
from citegate.evaluation.sampling import salted_order


def test_demo_splits_are_instances_of_the_mechanism_with_the_draw_they_always_had() -> None:
    # The pre-holdout formula, written out: the lowest salted hashes of "gita:<chapter>".
    old = salted_order(range(1, 19), lambda c: f"gita:{c}", HOLDOUT_SALT)[:4]
    assert heldout_gita_chapters() == frozenset(old) == frozenset({3, 8, 10, 12})
    titles = [a["title"] for a in load_xquad("en")[1]]
    old_x = salted_order(titles, lambda t: f"xquad:{t}", HOLDOUT_SALT)[:12]
    assert heldout_xquad_articles() == frozenset(old_x)
    assert "Super_Bowl_50" in heldout_xquad_articles()


def test_held_out_ignores_input_order_and_grows_by_adding() -> None:
    values = [f"d{i}" for i in range(40)]
    a = held_out(values, "c", 10)
    assert a == held_out(list(reversed(values)), "c", 10)
    assert held_out(values, "c", 5) < a
    assert held_out(values, "other", 10) != a  # the namespace is part of the draw


@pytest.mark.parametrize(
    ("n", "share", "count"), [(4, 0.25, 1), (150, 0.25, 38), (2, 0.9, 1), (10, 0.01, 1)]
)
def test_share_count_keeps_both_parts(n: int, share: float, count: int) -> None:
    assert share_count(n, share) == count


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1, 1.5])
def test_share_must_lie_strictly_between_0_and_1(share: float) -> None:
    with pytest.raises(ConfigError, match="strictly between"):
        Holdout(share)


def test_a_single_item_cannot_be_split() -> None:
    with pytest.raises(ConfigError, match="at least 2"):
        share_count(1, 0.5)


def test_documents_by_share_and_by_field() -> None:
    field_of = {f"a{i}-{p}": f"art{i}" for i in range(8) for p in range(3)}
    by_doc = Holdout(0.25).documents(field_of)
    assert len(by_doc) == 6
    by_field = Holdout(0.25, "article").documents(field_of)
    assert len(by_field) == 6  # 2 of 8 articles, 3 documents each
    held_articles = {field_of[d] for d in by_field}
    assert len(held_articles) == 2
    assert all(d in by_field for d, a in field_of.items() if a in held_articles)
    assert Holdout(0.25, "article").spec == f"0.25 of field article (salt {HOLDOUT_SALT})"
    assert Holdout.from_json(Holdout(0.3, "x").to_json()) == Holdout(0.3, "x")


def test_fold_rule_deals_every_document_to_exactly_one_fold() -> None:
    docs = {f"d{i}": None for i in range(10)}
    got = Folds(3).assign(docs, "mine")
    assert set(got) == set(docs) and sorted(Counter(got.values()).values()) == [3, 3, 4]
    assert got == folds(docs, "document", 3)  # the demo folds' mechanism, namespace `document`
    assert Folds.from_json(Folds(3).to_json()) == Folds(3)


def test_folds_by_field_keep_a_value_in_one_fold() -> None:
    field_of = {f"{a}-{p}": a for a in "abcde" for p in range(3)}
    got = Folds(2, "article").assign(field_of, "mine")
    for a in "abcde":
        assert len({got[f"{a}-{p}"] for p in range(3)}) == 1
    assert set(got.values()) == {1, 2}
    assert "field article" in Folds(2, "article").spec


@pytest.mark.parametrize(("k", "field"), [(1, None), (11, None), (0, None), (6, "article")])
def test_a_fold_count_that_cannot_divide_is_refused_in_one_line_naming_the_corpus(
    k: int, field: str | None
) -> None:
    field_of = {f"{a}-{p}": a for a in "abcde" for p in range(2)}
    with pytest.raises(ConfigError, match=rf"^mine: --folds {k} is out of range") as err:
        Folds(k, field).assign(field_of, "mine")
    assert "\n" not in str(err.value)
