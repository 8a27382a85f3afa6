"""The lexical lane's tiers (`lanes.choose_tier`): which of a question's terms select the rows to
rank, by document frequency, and the tsquery text they become."""

from __future__ import annotations

import pytest

from citegate.core.config import PipelineConfig, collection_mismatch
from citegate.core.errors import ConfigError
from citegate.pipeline import lanes
from citegate.pipeline.lanes import LexicalTier, choose_tier, tsquery_text

TERMS = [
    ("simple", "krishna", 900),
    ("russian", "arjun", 40),
    ("simple", "arjuna", 35),
    ("russian", "chariot", 12),
    ("simple", "nowhere", 0),  # no fragment of the searched builds holds it
    ("russian", "war", 5000),
]


def test_rarest_terms_first_until_k_then_within_the_budget() -> None:
    t = choose_tier(TERMS, k=16, budget=100)
    # 12 < 16: take 35 (sum 47); 47 >= 16 and 47 + 40 <= 100: take 40; 87 + 900 > 100: stop
    assert (t.ru, t.si) == ("'arjun' | 'chariot'", "'arjuna'")
    assert t.left_out == 2 and t.postings == 87 and t.tiered


def test_a_common_term_is_taken_when_the_rarer_ones_cannot_fill_k() -> None:
    t = choose_tier(TERMS, k=200, budget=100)
    assert t.si == "'arjuna' | 'krishna'" and t.left_out == 1 and t.postings == 987


def test_a_big_budget_keeps_every_term_that_matches_anything() -> None:
    t = choose_tier(TERMS, k=16, budget=10**9)
    assert t.left_out == 0 and "nowhere" not in (t.si or "") and t.postings == 5987


def test_a_config_without_a_term_matches_nothing_and_no_terms_match_nothing() -> None:
    t = choose_tier([("simple", "arjuna", 3)], k=16, budget=10)
    assert t.ru is None and t.si == "'arjuna'"
    empty = choose_tier([("simple", "nowhere", 0)], k=16, budget=10)
    assert (empty.ru, empty.si, empty.tiered) == (None, None, True)
    assert not LexicalTier.everything().tiered


def test_quotes_and_backslashes_are_escaped_as_tsquery_input() -> None:
    assert tsquery_text(["it's", "a\\b"]) == "'it''s' | 'a\\\\b'"
    assert tsquery_text([]) is None


def test_the_budget_is_a_collection_setting_absent_at_zero() -> None:
    seed, tiered = PipelineConfig(), PipelineConfig(lexical_budget=1024)
    assert "lexical_budget" not in seed.collection_key()
    assert tiered.collection_key()["lexical_budget"] == 1024
    assert collection_mismatch(seed.collection_key(), seed.collection_key()) == {}
    # both ways: a tiered trace is not replayed as an untiered one, nor the reverse
    assert collection_mismatch(tiered.collection_key(), seed.collection_key()) == {
        "lexical_budget": (1024, 0)
    }
    assert collection_mismatch(seed.collection_key(), tiered.collection_key()) == {
        "lexical_budget": (0, 1024)
    }
    with pytest.raises(ConfigError, match="lexical_budget"):
        PipelineConfig(lexical_budget=-1)


def test_the_advice_names_the_unbudgeted_postgres_lane_only_from_the_mark() -> None:
    mark = lanes.SLOW_LEXICAL_ROWS
    assert lanes.lexical_advice("postgres", 0, mark - 1) is None
    advice = lanes.lexical_advice("postgres", 0, mark)
    assert advice is not None and f"{mark:,} fragments" in advice and "bm25" in advice
    assert "re-fit the gate" in advice  # the switch changes the gate's signals
    # a budget or BM25 already bounds the lane's cost at any size
    assert lanes.lexical_advice("postgres", 1024, 10 * mark) is None
    assert lanes.lexical_advice("bm25", 0, 10 * mark) is None
