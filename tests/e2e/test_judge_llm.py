"""The blind pairwise judge on the real local model (SmolLM2-135M through llama.cpp): the JSON
schema constrains its replies to four 1-5 scores per slot, both orders are sent, and the summary's
verdict follows its measured flip rate. Which verdict the model earns is its behaviour, not
asserted here; the pure parts and scripted judges are unit tests (`tests/unit/test_judge.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citegate.models.llm import ChatClient
from citegate.models.llm_server import LOCAL_MODEL_ID, LocalLlamaServer
from citegate.studies.answer_faithfulness import judge as J

# (question, notes, an answer true to its notes, one that invents facts under the same markers)
PAIRS = [
    (
        "What happens to the soul when the body dies?",
        [
            "As a man casts off worn-out garments and puts on new ones, so the embodied soul "
            "casts off worn-out bodies and enters new ones. (BG 2.22)",
            "Weapons do not cut it, fire does not burn it, water does not wet it. (BG 2.23)",
        ],
        "The soul leaves a worn-out body for a new one, as a man changes clothes [1]. "
        "Weapons, fire and water cannot harm it [2].",
        "The soul dies with the body after 108 days [1]. The tongue is the organ of memory [2].",
    ),
    (
        "Who asks what happened on the field of Kurukshetra?",
        [
            "Dhritarashtra said: what did my sons and the sons of Pandu do on the field of "
            "Kurukshetra, assembled and eager to fight? (BG 1.1)"
        ],
        "Dhritarashtra asks what his sons and the sons of Pandu did at Kurukshetra [1].",
        "Arjuna asks Krishna how many soldiers, 4,000,000 in all, stood at Kurukshetra [1].",
    ),
    (
        "Should one act for the fruits of action?",
        [
            "You have a right to your prescribed duty, but never to the fruits of action. Never "
            "be attached to not doing your duty. (BG 2.47)"
        ],
        "No: one has a right to act, never to the fruits of action, nor to inaction [1].",
        "Yes, one should act for rewards, which are guaranteed after three lives [1].",
    ),
]


@pytest.mark.slow
def test_local_judge_scores_both_orders_and_reports_its_bias(tmp_path: Path) -> None:
    with LocalLlamaServer(n_threads=1) as url:
        client = ChatClient(LOCAL_MODEL_ID, url, cache_path=tmp_path / "llm.sqlite")
        pairs = [
            J.judge_pair(client, q, notes, good, bad, names=("faithful", "fabricated"))
            for q, notes, good, bad in PAIRS
        ]
    for pair in pairs:
        assert [o.a_name for o in pair.orders] == [pair.orders[1].b_name, pair.orders[0].b_name]
        assert pair.complete, [o.status for o in pair.orders]  # the schema held the model
    out = J.judge_summary(pairs)
    assert out.n_complete == 3 and out.errors == {}
    assert out.usable == (out.flip_rate <= J.DEFAULT_MAX_POSITION_BIAS)
    assert out.verdict.startswith("usable" if out.usable else "unusable: position bias")
    assert (out.per_name != {}) == out.usable
