"""Gate signals against the real demo database: the index facts of a split build, note texts for
slim traces, and a named verse that the split build holds out."""

from __future__ import annotations

import psycopg
import pytest

from citegate.core.config import PipelineConfig
from citegate.corpus.builds import heldout_gita_chapters
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import signals as sg
from citegate.pipeline.retrieve import replay, retrieve
from citegate.store.tables import fragment_texts

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def emb():  # noqa: ANN201
    return default_embedder()


def _kept_chapter() -> int:
    return min(set(range(1, 19)) - heldout_gita_chapters())


def test_index_facts_hold_the_split_builds_addresses_and_document_counts(
    demo: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    facts = sg.index_facts(demo, ["gita-split"], emb.id)
    held = min(heldout_gita_chapters())
    n = demo.execute(
        "SELECT count(*) FROM fragments WHERE corpus = 'gita-split' AND embedder_id = %s",
        (emb.id,),
    ).fetchone()[0]
    assert facts.n_docs == n > 0 and facts.corpora == ("gita-split",)
    assert f"BG {_kept_chapter()}.1" in facts.addresses
    assert not any(a.startswith(f"BG {held}.") for a in facts.addresses)
    assert f"BG {held}.1" in sg.index_facts(demo, ["gita"], emb.id).addresses
    with_arjuna = demo.execute(
        "SELECT count(*) FROM fragments WHERE corpus = 'gita-split' AND embedder_id = %s "
        "AND text ~* '(^|[^[:alnum:]])arjuna([^[:alnum:]]|$)'",
        (emb.id,),
    ).fetchone()[0]
    assert facts.doc_freq["arjuna"] == with_arjuna > 0


def test_fragment_texts_return_the_stored_text_of_slim_candidates(
    demo: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    cfg = PipelineConfig(embedder=emb.id, corpora=("gita-split",))
    res = retrieve(demo, "Why should one act without attachment?", cfg, emb, CosineReranker())
    slim = replay(res.trace.slim(), cfg)
    ids = [c.fragment_id for c in slim.notes]
    texts = fragment_texts(demo, [*ids, -1])
    assert set(texts) == set(ids) and -1 not in texts
    assert [texts[c.fragment_id] for c in res.notes] == [c.text for c in res.notes]
    facts = sg.index_facts(demo, cfg.corpora, emb.id)
    assert sg.signals(slim, cfg, facts, texts) == sg.signals(res, cfg, facts, {})


def test_a_named_verse_held_out_of_the_index_is_absent(demo: psycopg.Connection, emb) -> None:  # noqa: ANN001
    cfg = PipelineConfig(embedder=emb.id, corpora=("gita-split",))
    facts = sg.index_facts(demo, cfg.corpora, emb.id)
    held, kept = min(heldout_gita_chapters()), _kept_chapter()
    q_absent = f"In Chapter {held}, Verse 1, what does Krishna teach?"
    q_found = f"In Chapter {kept}, Verse 1, what does Krishna teach?"
    rows = []
    for q in (q_absent, q_found):
        res = retrieve(demo, q, cfg, emb, CosineReranker())
        texts = fragment_texts(demo, [c.fragment_id for c in res.notes])
        sig = sg.signals(res, cfg, facts, texts)
        rows.append((sig, sg.explain(sig, sg.named_labels(q), facts)))
    (absent, why), (found, _) = rows
    assert absent["address_named"] == 1.0 and absent["address_absent"] == 1.0
    assert absent["address_found"] == 0.0 and f"BG {held}.1" not in facts.addresses
    assert why.startswith(f"named address BG {held}.1 is not in the index")
    assert found["address_found"] == 1.0 and found["address_absent"] == 0.0
    assert 0.0 <= found["lexical_coverage"] <= 1.0
