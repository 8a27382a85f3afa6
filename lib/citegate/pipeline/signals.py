"""Gate signals: what one replayed retrieval tells about whether the corpus can answer.

Max cosine alone is one of them; the others look at the shape of the final notes' cosines, at
verse addresses the question names (and whether the index holds them), at the question's rare
words (are they in the notes?), at the lexical lane, the LTR reranker and the two-scale arm. All
are computed from a `RetrievalResult` (a replay of a cached trace, no new retrieval) plus two
small facts fetched once from the database: `IndexFacts` (the searched corpora's addresses and
document frequencies) and the final notes' texts (`store.tables.fragment_texts`: cached traces are
slim).

The raw signals, in `SIGNALS` order (a NaN means "not defined here"; the learned gate reads NaN
as the training mean):

- `max_cosine`: max cosine of the final notes (the coverage gate's signal), 0 without notes;
- `topk_mean_cosine`: mean cosine of the best 3 final notes (fewer when fewer), 0 without notes;
- `margin_top1_top2`: best minus second-best note cosine, NaN with fewer than 2 notes;
- `address_named`: 1 when the question names at least one verse (`named_verses`);
- `address_found`: 1 when it names verses and EVERY named verse is in the index;
- `address_absent`: 1 when it names verses and NONE of them is in the index (a partial match
  leaves both found and absent at 0);
- `lexical_coverage`: the idf-weighted share of the question's rare content terms that occur
  in the final notes' text (see `rare_terms`), 0 when the question has no rare term;
- `lexical_rank`: 1 / the best lexical-lane rank among the final notes (1.0 = the top full-text
  hit is a note), 0 when no note came from the lexical lane;
- `ltr_max_prob`: max rerank score of the final notes when the trace was reranked, else NaN;
- `two_scale_score`: the two-scale arm's gate value (`fusion.gate_signal` under arm=rrf_hybrid,
  gate=two_scale) replayed from the same trace.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.types import Candidate, RetrievalResult
from citegate.corpus.sources.address import named_verses, verse_label
from citegate.models.gate_model import SIGNALS
from citegate.pipeline.fusion import gate_signal, rrf_replay
from citegate.pipeline.lanes import lexical_query

TOP_K_MEAN = 3  # notes averaged by topk_mean_cosine
RARE_MAX_SHARE = 0.10  # a term in more than this share of the documents is not rare

FACTS_SQL = """
SELECT addr_label, text FROM fragments
WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s)
"""


# --------------------------------------------------------------------------- index facts


@dataclass(frozen=True)
class IndexFacts:
    """What the searched index holds, fetched once per (corpora, embedder): its address labels
    ("BG 3.5", "Rhine ¶5") and, for rare-term weighting, how many of its `n_docs` fragments
    contain each term (`doc_freq`, terms as `tokens` makes them)."""

    corpora: tuple[str, ...]
    addresses: frozenset[str]
    doc_freq: Mapping[str, int]
    n_docs: int
    seconds: float = field(default=0.0, compare=False)  # how long index_facts took


def tokens(text: str) -> list[str]:
    """Lower-cased words of a text, split like the lexical lane splits a question (anything not
    alphanumeric separates words)."""
    return "".join(c.lower() if c.isalnum() else " " for c in text).split()


def index_facts(conn: psycopg.Connection, corpora: Sequence[str], embedder_id: str) -> IndexFacts:
    """Addresses and document frequencies of the fragments of `corpora` for `embedder_id`, in one
    query (document frequencies are counted here in Python with `tokens`, so they use exactly
    the normalisation the coverage signal matches with)."""
    clock = time.perf_counter()
    rows = conn.execute(FACTS_SQL, {"eid": embedder_id, "corpora": list(corpora)}).fetchall()
    df: Counter[str] = Counter()
    for _, text in rows:
        df.update(set(tokens(text or "")))
    labels = frozenset(r[0] for r in rows if r[0])
    return IndexFacts(tuple(corpora), labels, dict(df), len(rows), time.perf_counter() - clock)


# --------------------------------------------------------------------------- signals


def content_terms(question: str) -> list[str]:
    """The question's content terms: the lexical lane's own query words (stopwords and words
    under 3 characters dropped, at most 32), lower-cased, without repeats."""
    query = lexical_query(question)
    words = query.split(" or ") if query else []
    return list(dict.fromkeys(w.lower() for t in words for w in tokens(t)))


def term_weight(term: str, facts: IndexFacts) -> float:
    """idf = log(n_docs / (1 + df)) of a term; 0 for a term in more than 10% of the documents
    (not rare) and never negative. A term the index lacks (df 0) gets the largest weight."""
    df = facts.doc_freq.get(term, 0)
    if facts.n_docs == 0 or df > RARE_MAX_SHARE * facts.n_docs:
        return 0.0
    return max(0.0, math.log(facts.n_docs / (1 + df)))


def rare_terms(question: str, facts: IndexFacts) -> dict[str, float]:
    """The question's rare content terms and their idf weights (weight > 0 only)."""
    weights = {t: term_weight(t, facts) for t in content_terms(question)}
    return {t: w for t, w in weights.items() if w > 0}


def lexical_coverage(question: str, note_text: Sequence[str], facts: IndexFacts) -> float:
    """Σ weights of the rare terms found in any note / Σ weights of all rare terms (0..1); 0 when
    the question has no rare term. Terms match whole lower-cased words (no stemming)."""
    rare = rare_terms(question, facts)
    total = sum(rare.values())
    if total == 0:
        return 0.0
    present = set().union(*(set(tokens(t)) for t in note_text)) if note_text else set()
    return sum(w for t, w in rare.items() if t in present) / total


def _cosines(notes: Sequence[Candidate]) -> list[float]:
    return sorted((float(c.score) for c in notes), reverse=True)


def cosine_signals(notes: Sequence[Candidate]) -> dict[str, float]:
    """`max_cosine`, `topk_mean_cosine` and `margin_top1_top2` of the final notes: the signals
    that read the notes' cosines alone."""
    cos = _cosines(notes)
    return {
        "max_cosine": cos[0] if cos else 0.0,
        "topk_mean_cosine": sum(cos[:TOP_K_MEAN]) / len(cos[:TOP_K_MEAN]) if cos else 0.0,
        "margin_top1_top2": cos[0] - cos[1] if len(cos) > 1 else math.nan,
    }


def _address_signals(named: Sequence[str], facts: IndexFacts) -> dict[str, float]:
    found = [a in facts.addresses for a in named]
    return {
        "address_named": float(bool(named)),
        "address_found": float(bool(named) and all(found)),
        "address_absent": float(bool(named) and not any(found)),
    }


def _ltr_max_prob(result: RetrievalResult) -> float:
    if result.trace.reranker_id == "none":
        return math.nan
    probs = [c.rerank_score for c in result.notes if c.rerank_score is not None]
    return max(probs) if probs else math.nan


def two_scale_score(result: RetrievalResult, cfg: PipelineConfig) -> float:
    """The two-scale arm's gate value for the same trace (rrf_hybrid cut, two_scale gate)."""
    arm = cfg.replace(arm="rrf_hybrid", gate="two_scale")
    return float(gate_signal(rrf_replay(result.trace, arm), arm))


def named_labels(question: str) -> list[str]:
    """The address labels ("BG 3.5") of the verses a question names."""
    return [verse_label(c, v) for c, v in named_verses(question)]


def signals(
    result: RetrievalResult,
    cfg: PipelineConfig,
    facts: IndexFacts,
    texts: Mapping[int, str],
) -> dict[str, float]:
    """One question's raw signals (`SIGNALS`, in order) from a replayed result; `texts` holds the
    final notes' texts by fragment id (`tables.fragment_texts`; a note's own text is used when
    present)."""
    question = result.trace.question
    lex = [c.lex_rank for c in result.notes if c.lex_rank is not None]
    note_text = [texts.get(c.fragment_id) or c.text for c in result.notes]
    out = {
        **cosine_signals(result.notes),
        **_address_signals(named_labels(question), facts),
        "lexical_coverage": lexical_coverage(question, note_text, facts),
        "lexical_rank": 1.0 / min(lex) if lex else 0.0,
        "ltr_max_prob": _ltr_max_prob(result),
        "two_scale_score": two_scale_score(result, cfg),
    }
    return {k: float(out[k]) for k in SIGNALS}


# --------------------------------------------------------------------------- explanation


def _listing(labels: Sequence[str]) -> str:
    return ", ".join(labels)


def _address_reason(named: Sequence[str], facts: IndexFacts) -> str:
    absent = [a for a in named if a not in facts.addresses]
    present = [a for a in named if a in facts.addresses]
    if not named:
        return ""
    if not absent:
        noun = "address" if len(present) == 1 else "addresses"
        return (
            f"named {noun} {_listing(present)} {'is' if len(present) == 1 else 'are'} in the index"
        )
    noun = "address" if len(absent) == 1 else "addresses"
    verb = "is" if len(absent) == 1 else "are"
    text = f"named {noun} {_listing(absent)} {verb} not in the index"
    return (
        f"{text} ({_listing(present)} {'is' if len(present) == 1 else 'are'})" if present else text
    )


def explain(sig: Mapping[str, float], named: Sequence[str], facts: IndexFacts) -> str:
    """A short human reason from the signals, address evidence first, e.g. "named address BG 3.5
    is not in the index; max cosine 0.812, rare-term coverage 0.00"."""
    numbers = [f"max cosine {sig.get('max_cosine', math.nan):.3f}"]
    cover = sig.get("lexical_coverage", math.nan)
    if math.isfinite(cover):
        numbers.append(f"rare-term coverage {cover:.2f}")
    ltr = sig.get("ltr_max_prob", math.nan)
    if math.isfinite(ltr):
        numbers.append(f"reranker max {ltr:.2f}")
    return "; ".join(p for p in (_address_reason(named, facts), ", ".join(numbers)) if p)


__all__ = [
    "SIGNALS",
    "IndexFacts",
    "content_terms",
    "cosine_signals",
    "explain",
    "index_facts",
    "lexical_coverage",
    "named_labels",
    "rare_terms",
    "signals",
    "term_weight",
    "tokens",
    "two_scale_score",
]
