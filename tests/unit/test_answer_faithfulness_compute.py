"""The claim validator's compute: the certified support threshold keeps the tune false-support
bound at or under alpha and reads nothing of the test part, every slice (cross-lingual ones
apart) gets a row, clustered intervals widen when a group's pairs move together, and the
realised test rates count what they say."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from citegate.evaluation.certify import clopper_pearson_upper
from citegate.studies.answer_faithfulness.compute import (
    Slice,
    certify_support,
    realise,
    roc_row,
    roc_table,
    validator_report,
)


@dataclass(frozen=True)
class Pair:
    corpus: str
    language: str
    note_language: str
    label: int
    family: str
    group: str
    split: str


def synthetic(
    n_groups: int = 120, per_group: int = 2, seed: int = 1
) -> tuple[list[Pair], np.ndarray]:
    """Pairs in gita (en->en) and xquad (en->ru, ru->ru), half tune half test by group; supported
    pairs score ~0.9, unsupported ~0.8, plus a shift shared by each group's pairs."""
    rng = np.random.default_rng(seed)
    kinds = [
        ("gita", "en", "en", "paraphrase"),
        ("xquad", "en", "ru", "answer_sentence"),
        ("xquad", "ru", "ru", "question_answer"),
    ]
    pairs, scores = [], []
    for g in range(n_groups):
        corpus, lang, note, family = kinds[g % len(kinds)]
        split = "tune" if g % 2 == 0 else "test"
        shift = rng.normal(0, 0.03)
        for _ in range(per_group):
            for label in (1, 0):
                pairs.append(Pair(corpus, lang, note, label, family, f"g{g}", split))
                scores.append(0.8 + 0.1 * label + shift + rng.normal(0, 0.03))
    return pairs, np.array(scores)


def test_certified_threshold_keeps_the_tune_false_support_bound_under_alpha() -> None:
    pairs, s = synthetic(n_groups=300)
    cert = certify_support(pairs, s, alpha=0.05, delta=0.05)
    assert cert.feasible
    tune = np.array([p.split == "tune" for p in pairs])
    neg = tune & (np.array([p.label for p in pairs]) == 0)
    k = int(np.sum(s[neg] >= cert.threshold))
    assert (k, int(neg.sum())) == (cert.false_answers, cert.n_neg)
    assert clopper_pearson_upper(k, int(neg.sum()), 0.05) <= 0.05
    # the next lower tune score would break the bound: the threshold is the lowest that holds
    lower = np.max(s[tune][s[tune] < cert.threshold])
    k_next = int(np.sum(s[neg] >= lower))
    assert clopper_pearson_upper(k_next, int(neg.sum()), 0.05) > 0.05
    pos = tune & (np.array([p.label for p in pairs]) == 1)
    assert cert.answer_rate == pytest.approx(np.mean(s[pos] >= cert.threshold))


def test_certificate_reads_only_the_tune_part() -> None:
    pairs, s = synthetic(n_groups=400)
    before = certify_support(pairs, s)
    assert before.feasible
    test_neg = np.array([p.split == "test" and p.label == 0 for p in pairs])
    moved = np.where(test_neg, 2.0, s)  # every test negative now outscores everything
    assert certify_support(pairs, moved) == before
    report = validator_report(pairs, moved, "qp-sentence", n_boot=50)
    assert report.certified == certify_support(pairs, s, per="corpus")
    assert report.certified.feasible
    assert report.realised[0].false_support_rate == 1.0


def test_certificate_per_group_refuses_when_too_few_groups() -> None:
    # 60 tune groups of which 20 hold negatives per kind: zero false supports cannot reach 0.05
    pairs, s = synthetic(n_groups=60, per_group=3)
    per_pair = certify_support(pairs, s)
    per_group = certify_support(pairs, s, by_group=True)
    assert per_pair.n_neg == 90 and per_group.n_neg == 30
    assert not per_group.feasible and per_group.threshold == float("inf")


def test_every_slice_gets_a_row_and_cross_lingual_rows_stay_apart() -> None:
    pairs, s = synthetic()
    names = [r.slice.name for r in roc_table(pairs, s, "test", n_boot=50)]
    for want in (
        "all",
        "gita",
        "xquad",
        "gita en->en",
        "xquad en->ru",
        "xquad ru->ru",
        "xquad en answer_sentence",
        "xquad ru question_answer",
    ):
        assert want in names
    rows = {r.slice.name: r for r in roc_table(pairs, s, "test", n_boot=50)}
    test_pairs = [p for p in pairs if p.split == "test"]
    assert rows["xquad en->ru"].n_pos == sum(
        p.label
        for p in test_pairs
        if (p.corpus, p.language, p.note_language) == ("xquad", "en", "ru")
    )
    assert rows["all"].n_pos + rows["all"].n_neg == len(test_pairs)


def test_clustered_interval_is_wider_than_iid_when_groups_repeat() -> None:
    rng = np.random.default_rng(3)
    pairs, s = [], []
    for g in range(10):  # each group: 30 copies of nearly the same pair, group effects large
        shift = rng.normal(0, 0.08)
        for _ in range(30):
            for label in (1, 0):
                pairs.append(Pair("gita", "en", "en", label, "paraphrase", f"g{g}", "test"))
                s.append(0.8 + 0.05 * label + shift + rng.normal(0, 0.005))
    row = roc_row(pairs, np.array(s), Slice(), n_boot=300)
    assert row.n_groups == 10
    assert row.lower <= row.auroc <= row.upper
    assert (row.upper - row.lower) > 1.5 * (row.upper_iid - row.lower_iid)


def test_realised_counts_false_supports_and_recall_on_the_test_part() -> None:
    pairs = [
        Pair("gita", "en", "en", 1, "paraphrase", "a", "test"),
        Pair("gita", "en", "en", 0, "paraphrase", "a", "test"),
        Pair("gita", "en", "en", 1, "paraphrase", "b", "test"),
        Pair("gita", "en", "en", 0, "paraphrase", "b", "test"),
        Pair("gita", "en", "en", 0, "paraphrase", "c", "tune"),  # not counted
    ]
    s = np.array([0.9, 0.85, 0.7, 0.6, 0.99])
    row = realise(pairs, s, threshold=0.8)[0]
    assert (row.n_neg, row.false_supports, row.n_pos, row.kept) == (2, 1, 2, 1)
    assert row.false_support_rate == 0.5 and row.recall == 0.5
    assert row.fsr_lower < 0.5 < row.fsr_upper  # Wilson: honest at small n


def test_a_slice_without_both_classes_reads_nan_and_bad_lengths_are_refused() -> None:
    pairs = [Pair("gita", "en", "en", 1, "paraphrase", "a", "test")] * 3
    row = roc_row(pairs, np.array([0.1, 0.2, 0.3]), Slice())
    assert np.isnan(row.auroc) and row.n_neg == 0
    with pytest.raises(ValueError, match="one score per pair"):
        roc_row(pairs, np.array([0.1, 0.2]), Slice())
    with pytest.raises(ValueError, match="no pairs in split"):
        certify_support(pairs, np.array([0.1, 0.2, 0.3]))


def test_per_corpus_certificate_holds_each_corpus_under_alpha() -> None:
    pairs, s = synthetic(n_groups=600)
    gita_neg = np.array([p.corpus == "gita" and p.label == 0 for p in pairs])
    s = np.where(gita_neg, s + 0.04, s)  # gita's negatives sit closer to its positives
    pooled = certify_support(pairs, s)
    per = certify_support(pairs, s, per="corpus")
    assert per.feasible and set(per.per_kind) == {"gita", "xquad"}
    assert per.threshold >= pooled.threshold
    tune = np.array([p.split == "tune" for p in pairs])
    for corpus, cert in per.per_kind.items():
        neg = tune & (np.array([p.corpus == corpus and p.label == 0 for p in pairs]))
        k = int(np.sum(s[neg] >= per.threshold))
        assert cert.false_answers == k
        assert clopper_pearson_upper(k, int(neg.sum()), 0.025) <= 0.05
