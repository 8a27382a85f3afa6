"""A slim trace (what the trace cache stores) is the trace with every candidate's text emptied,
and nothing else changed."""

from __future__ import annotations

import pickle
from dataclasses import replace

from conftest import make_candidate

from citegate.core.types import QueryPlan, RetrievalTrace


def test_without_text_is_replace_with_an_empty_text() -> None:
    cand = make_candidate(
        7, text="Karma-yoga.", lanes=("address:named", "dense:verses@r1"), rerank_score=0.4
    )
    assert cand.pinned  # a cached property computed before the copy is not carried into it
    slim = cand.without_text()
    expected = replace(cand, text="")
    assert slim == expected and slim.text == "" and cand.text == "Karma-yoga."
    assert pickle.dumps(slim) == pickle.dumps(expected)
    assert slim.pinned and slim.rank_key() == cand.rank_key()


def test_a_slim_trace_keeps_everything_but_the_texts() -> None:
    cands = [make_candidate(i, text=f"text {i}") for i in range(3)]
    trace = RetrievalTrace(
        "q", QueryPlan("q", (), "offline"), {"k": 1}, "emb", "none", cands, {"dense": 0.1}
    )
    slim = trace.slim()
    assert [c.text for c in slim.candidates] == ["", "", ""]
    assert [replace(c, text="") for c in cands] == slim.candidates
    assert slim.timings == trace.timings and slim.timings is not trace.timings
    assert [c.text for c in trace.candidates] == ["text 0", "text 1", "text 2"]
