"""Which dense searches a batch of texts runs (`lane_batch.shared_searches`): texts with equal vectors
(the question in both fanout rounds) share one search at the largest depth any of them asks."""

from __future__ import annotations

import numpy as np

from citegate.pipeline import lane_batch


def test_equal_vectors_share_one_search_at_their_largest_depth() -> None:
    a, b = np.eye(3, dtype=np.float32)[:2]
    which, depths = lane_batch.shared_searches(np.stack([a, b, a, a]), [40, 80, 80, 20])
    assert which == [0, 1, 0, 0]
    assert depths == [80, 80]


def test_vectors_that_differ_in_one_bit_are_searched_apart() -> None:
    a = np.ones(4, dtype=np.float32)
    b = a.copy()
    b[3] = np.nextafter(b[3], np.float32(2))
    assert lane_batch.shared_searches(np.stack([a, b]), [40, 40]) == ([0, 1], [40, 40])


def test_a_float64_vector_is_shared_as_the_float32_the_database_gets() -> None:
    a = np.array([0.1, 0.2, 0.3])
    assert lane_batch.shared_searches(np.stack([a, a.astype(np.float32)]), [16, 32]) == (
        [0, 0],
        [32],
    )
