"""Which gate makes a retrieval's final decision, and why, in words a person reads.

`replay` runs the coverage rounds (they decide the fanout, whatever the gate). Then:
- gate `coverage` / `two_scale`: the last round's verdict stands; `rule_reason` says which
  threshold decided it ("max cosine 0.842 ≥ sufficient 0.8852 (ru thresholds)");
- gate `learned`: the `LearnedGate` the config names decides over the question's signals
  (`pipeline.signals`): p(answerable) ≥ its threshold → answer, else insufficient, with the
  signal that explains it ("p(answerable)=0.12 < 0.43: named address BG 3.5 is not in the index").

`learned_decision` is pure (signals, facts and texts given), so promotion's evaluation and a study
decide exactly as `retrieve` does; `decide` fetches what it needs from the database. The index
facts (every fragment's text is read to count document frequencies: ~0.1–0.3 s) are cached per
process under the searched corpora, the embedder and their fragment sets' identity as the last
ingest stamped it (`tables.stamped_sets`, one primary-key read), so a re-ingest is seen at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace

import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.types import Decision, GateKind, GateReason, RetrievalResult
from citegate.models.gate_model import LearnedGate
from citegate.pipeline.fusion import gate_signal
from citegate.pipeline.gate import question_language
from citegate.pipeline.signals import (
    IndexFacts,
    explain,
    index_facts,
    named_labels,
    signals,
)
from citegate.store.production import load_gate
from citegate.store.tables import fragment_texts, stamped_sets


def compare(value: float, threshold: float, name: str = "", digits: int = 3) -> str:
    """ "value ≥ name threshold" or "value < name threshold", printed with enough digits that
    the printed numbers agree with the comparison (0.8851 < 0.8852, never "0.885 < 0.885")."""
    a, op, b = _printed(value, threshold, digits)
    return f"{a} {op} {name} {b}" if name else f"{a} {op} {b}"


def _printed(value: float, threshold: float, digits: int) -> tuple[str, str, str]:
    """The threshold as configured (up to 6 significant digits), the value with `digits`
    decimals or more, until the printed pair compares as the true pair does."""
    op = "≥" if value >= threshold else "<"
    b = f"{threshold:.6g}"
    for d in range(digits, 10):
        a = f"{value:.{d}f}"
        same = float(a) == float(b)
        if (float(a) >= float(b)) == (value >= threshold) and (not same or value == threshold):
            return a, op, b
    return repr(value), op, repr(threshold)


def rule_reason(result: RetrievalResult, cfg: PipelineConfig) -> GateReason:
    """Why the coverage (or two-scale) gate decided what it did on the last round."""
    language = question_language(result.trace.question)
    if cfg.arm == "rrf_hybrid" and cfg.gate == "two_scale":
        return _two_scale_reason(result, cfg, language)
    v = result.rounds[-1].gate
    t = cfg.thresholds(language)
    top = v.max_score
    if v.sufficient:
        threshold = t["sufficient_score"]
        why = f"max cosine {compare(top, threshold, 'sufficient')}"
        if cfg.sufficient_lectures:
            why += f" with {v.lectures} lecture notes ≥ {cfg.sufficient_lectures}"
    elif v.good_enough:
        threshold = t["good_enough_score"]
        why = f"max cosine {compare(top, threshold, 'good enough')}"
    elif v.bail_out:
        threshold = t["bail_out_score"]
        why = f"max cosine {compare(top, threshold, 'bail-out')}"
    else:
        threshold = t["good_enough_score"]
        why = (
            f"max cosine {top:.3f} between bail-out {t['bail_out_score']:g} and good enough "
            f"{threshold:g}: a weak answer"
        )
    if language in cfg.language_thresholds:
        why += f" ({language} thresholds)"
    if len(result.rounds) > 1:
        why += f", after fanout round {len(result.rounds)}"
    return GateReason(GateKind.COVERAGE, why, float(top), float(threshold), language)


def _two_scale_reason(result: RetrievalResult, cfg: PipelineConfig, language: str) -> GateReason:
    signal = gate_signal(result, cfg)
    if result.trace.reranker_id != "none":
        threshold, scale = cfg.two_scale_rerank, "reranker score"
    else:
        threshold, scale = cfg.two_scale_fusion, "fusion score"
    why = f"{scale} {compare(signal, threshold, digits=4)} (two-scale gate)"
    return GateReason(GateKind.TWO_SCALE, why, float(signal), float(threshold), language)


def learned_decision(
    result: RetrievalResult,
    cfg: PipelineConfig,
    gate: LearnedGate,
    facts: IndexFacts,
    texts: Mapping[int, str],
) -> RetrievalResult:
    """`result` decided by the learned gate: answer when p(answerable) ≥ its threshold, else
    insufficient (the notes stay those of the coverage rounds), with the reason recorded."""
    question = result.trace.question
    language = question_language(question)
    sig = signals(result, cfg, facts, texts)
    answer, p = gate.decide(sig, language)
    why = explain(sig, named_labels(question), facts)
    reason = f"p(answerable)={compare(p, gate.threshold, digits=2)}"
    reason += f": {why}" if why else ""
    decision = Decision.ANSWER if answer else Decision.INSUFFICIENT
    by = GateReason(GateKind.LEARNED, reason, float(p), float(gate.threshold), language)
    return replace(result, decision=decision, decided_by=by)


FACTS_CACHE_SIZE = 8  # (corpora, embedder, fragment sets) entries kept per process
_facts_cache: OrderedDict[tuple[object, ...], IndexFacts] = OrderedDict()
_facts_lock = threading.Lock()


def cached_index_facts(
    conn: psycopg.Connection, corpora: Sequence[str], embedder_id: str
) -> IndexFacts:
    """`index_facts` of `corpora` for `embedder_id`, computed once per process per fragment-set
    identity: the key holds each corpus's fragment-set digest as its last ingest stamped it
    (`tables.stamped_sets`, one primary-key read, as the BM25 lane names its index), so a
    re-ingest or removal misses the cache and the facts are read afresh. Counting the digests on
    every question instead took 1.2 s of a retrieve at 1M fragments (`citegate bench-scale`). At
    most `FACTS_CACHE_SIZE` entries are kept (least recently used dropped)."""
    sets = stamped_sets(conn, embedder_id, corpora)
    key = (tuple(corpora), embedder_id, tuple(sorted(sets.items())))
    with _facts_lock:
        if key in _facts_cache:
            _facts_cache.move_to_end(key)
            return _facts_cache[key]
    facts = index_facts(conn, tuple(corpora), embedder_id)
    with _facts_lock:
        _facts_cache[key] = facts
        while len(_facts_cache) > FACTS_CACHE_SIZE:
            _facts_cache.popitem(last=False)
    return facts


def clear_facts_cache() -> None:
    """Forget every cached `IndexFacts` (the next `decide` reads them afresh)."""
    with _facts_lock:
        _facts_cache.clear()


def decide(
    conn: psycopg.Connection,
    result: RetrievalResult,
    cfg: PipelineConfig,
    gate: LearnedGate | None = None,
) -> RetrievalResult:
    """The final decision of a replayed retrieval under `cfg`'s gate, with its reason. A learned
    gate reads the index's facts and the final notes' texts (from the notes when the trace kept
    them, else from the database); `gate` defaults to the model file `cfg` names
    (`store.production.load_gate`, digest checked)."""
    if cfg.gate != "learned":
        return replace(result, decided_by=rule_reason(result, cfg))
    model = gate or load_gate(cfg)
    facts = cached_index_facts(conn, tuple(cfg.corpora), result.trace.embedder_id)
    texts = {n.fragment_id: n.text for n in result.notes if n.text}
    missing = [n.fragment_id for n in result.notes if n.fragment_id not in texts]
    if missing:
        texts.update(fragment_texts(conn, missing))
    return learned_decision(result, cfg, model, facts, texts)


__all__ = [
    "cached_index_facts",
    "clear_facts_cache",
    "compare",
    "decide",
    "learned_decision",
    "rule_reason",
]
