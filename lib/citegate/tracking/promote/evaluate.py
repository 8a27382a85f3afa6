"""Evaluating a config for promotion: its guard metrics on the test split (cached traces, replayed),
and the certificate guard, the certified false-answer bounds a recommendation carries.

Every answerable question the gate answers is also composed and checked as the turn does
(`turn.grounded_answer` over its replayed final notes, the config's extractive composer and claim
check), so `wrong_source_rate` (the share of answerable questions answered citing no gold
source) is guarded like the false-answer rates: a config that answers from the wrong source more
often is refused. A config whose composer
needs a model (generative, outline) is not composed here: the metric is then absent."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.text import detect_language
from citegate.core.types import Candidate
from citegate.models.embed import Embedder, default_embedder
from citegate.models.gate_model import LearnedGate
from citegate.pipeline.decide import learned_decision
from citegate.pipeline.fallback import fixed_strings_language
from citegate.pipeline.retrieve import replay
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.signals import index_facts
from citegate.pipeline.turn import grounded_answer
from citegate.research.study import StudySet, load_study
from citegate.store.db import connect
from citegate.store.production import load_gate
from citegate.store.tables import fragment_texts
from citegate.tracking.promote import production_file
from citegate.tracking.promote.guards import EvalRow, compute_metrics


def evaluate(
    cfg: PipelineConfig,
    evaluation: dict[str, Any],
    n_boot: int = 500,
    gate: LearnedGate | None = None,
) -> dict[str, dict[str, float]]:
    """Guard metrics of a config on the test split (cached traces; replay where possible):
    metric -> {value, low, high, n} (see `compute_metrics`).

    The coverage and two-scale gates replay through the vectorised path (per-language thresholds
    included). A learned gate cannot be decided there: its signals need the final notes' texts
    and the index's addresses, so each question is replayed in full and decided by `gate` (the
    model `cfg` names, loaded next to the production file when not given), and the AUROC is that
    of p(answerable), the signal the learned gate thresholds."""
    study = load_study(
        evaluation["sets"],
        cfg,
        limit=int(evaluation.get("limit", 0)),
        split="test",
        reranker=cfg.reranker,
        progress=False,
    )
    if cfg.gate == "learned" and gate is None:
        gate = load_gate(cfg, production_file.PRODUCTION.parent)
    rows = []
    for s in study.sets.values():
        if gate is not None:
            outcomes = _learned_outcomes(s, cfg, gate, study.embedder_id)
        else:
            outcomes = {
                qid: Outcome(r.decision == "answer", r.max_score, tuple(r.notes))
                for qid, r in s.replay_summaries(cfg).items()
            }
        wrong = _wrong_sources(s, cfg, outcomes)
        for q in s.questions:
            o = outcomes[q.id]
            gold = set(s.gold.get(q.id, ()))
            hit = any(fid in gold for fid in o.notes) if gold else None
            rows.append(
                EvalRow(
                    q.label, q.language, q.group, o.answered, o.signal, hit,
                    wrong.get(q.id), q.mentions_address,
                )
            )  # fmt: skip
    return compute_metrics(rows, n_boot=n_boot)


def _wrong_sources(
    s: StudySet, cfg: PipelineConfig, outcomes: Mapping[str, Outcome]
) -> dict[str, bool]:
    """Answerable question id -> whether the turn gives a wrong-source answer: answered, and
    the extractive answer (composed and checked as the turn does) cites only other sources than
    its gold (False when the gate declines it); empty for a composer that needs a model."""
    if cfg.composer != "extractive":
        return {}
    cfg = cfg.replace(corpora=[s.corpus])
    asked = [q for q in s.questions if q.label == "answerable" and outcomes[q.id].answered]
    results = {q.id: replay(s.traces[q.id], cfg) for q in asked}
    need = sorted({n.fragment_id for r in results.values() for n in r.notes if not n.text})
    with connect() as conn:
        texts = fragment_texts(conn, need) if need else {}
    emb = default_embedder()
    out = {q.id: False for q in s.questions if q.label == "answerable"}
    with RoleClients(cfg) as roles:  # the extractive composer starts no model
        for q in asked:
            notes = [_with_text(n, texts) for n in results[q.id].notes]
            gold = set(s.gold.get(q.id, ()))
            out[q.id] = not _cites_gold(q.text, notes, gold, cfg, emb, roles)
    return out


def _with_text(c: Candidate, texts: Mapping[int, str]) -> Candidate:
    return c if c.text else replace(c, text=texts.get(c.fragment_id, ""))


def _cites_gold(
    question: str,
    notes: list[Candidate],
    gold: set[int],
    cfg: PipelineConfig,
    emb: Embedder,
    roles: RoleClients,
) -> bool:
    """Whether a kept claim of the turn's answer over `notes` cites a gold fragment."""
    lang = fixed_strings_language(detect_language(question))
    g, _ = grounded_answer(question, lang, notes, cfg, emb, roles)
    if g.check is None:
        return False
    by_number = {str(n): c.fragment_id for n, c in enumerate(notes, 1)}
    return any(by_number.get(k) in gold for v in g.check.kept for k in v.cited)


@dataclass(frozen=True)
class Outcome:
    """One replayed question as the guards see it: answered, the gate's signal, the note ids."""

    answered: bool
    signal: float
    notes: tuple[int, ...]


def _learned_outcomes(
    s: StudySet, cfg: PipelineConfig, gate: LearnedGate, embedder_id: str
) -> dict[str, Outcome]:
    """Each question of a set replayed in full and decided by the learned gate (`decide`)."""
    cfg = cfg.replace(corpora=[s.corpus])
    results = s.replay_all(cfg)
    with connect() as conn:
        facts = index_facts(conn, (s.corpus,), embedder_id)
        texts = fragment_texts(
            conn, sorted({n.fragment_id for r in results.values() for n in r.notes})
        )
    out = {}
    for qid, r in results.items():
        d = learned_decision(r, cfg, gate, facts, texts)
        assert d.decided_by is not None
        out[qid] = Outcome(
            d.decision == "answer", d.decided_by.signal, tuple(n.fragment_id for n in d.notes)
        )
    return out


# ---------------------------------------------------------------- the certificate guard


@dataclass(frozen=True)
class CertificateCheck:
    """One negative kind's certified false-answer bound (recommendation.json's `certified`):
    passes when the exact upper bound at confidence 1−delta is at most the target alpha (and the
    block does not say `feasible: false`, i.e. that no threshold could be certified)."""

    kind: str
    bound: float
    alpha: float
    delta: float
    n_neg: int
    feasible: bool = True
    counted: str = "negatives"  # what n_neg counts: "negative units" for a per-unit certificate

    @property
    def ok(self) -> bool:
        """bound ≤ alpha, with a certified threshold."""
        return self.feasible and self.bound <= self.alpha

    def line(self) -> str:
        """One line naming the kind, bound and alpha, and whether it passes."""
        rel = "≤" if self.bound <= self.alpha else ">"
        verdict = "OK" if self.ok else "FAILS"
        if not self.feasible:
            verdict += " (no threshold could be certified)"
        return (
            f"certificate {self.kind}: bound {self.bound:.4f} {rel} alpha {self.alpha:g} "
            f"(confidence {1 - self.delta:g}, {self.n_neg} {self.counted}): {verdict}"
        )


def certificate_checks(why: dict[str, Any] | None) -> list[CertificateCheck]:
    """The per-kind checks of a recommendation's `certified` block; none without the block (a
    recommendation that certifies nothing, e.g. notebook 03's, is not subject to this guard).

    The block is one {kind, alpha, delta, n_neg, bound} mapping, a list of them, or a mapping of
    kind → such a mapping (nested per corpus too: the kind is then "corpus.kind"), as experiment
    05 writes it ({gate, threshold, feasible, alpha, delta, kinds: {kind: {...}}}); `alpha`,
    `delta` and `feasible` given on an outer level hold for the blocks inside it."""
    if not why or "certified" not in why:
        return []
    checks = list(_certified_blocks(why["certified"], (), {}))
    if not checks:
        raise ConfigError("recommendation.json: the `certified` block certifies no kind")
    return checks


def _certified_blocks(
    node: Any, path: tuple[str, ...], outer: dict[str, Any]
) -> Iterator[CertificateCheck]:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _certified_blocks(item, (*path, str(i)), outer)
        return
    if not isinstance(node, dict):
        return
    keep = ("alpha", "delta", "feasible", "calibrated_on")
    here = {**outer, **{k: node[k] for k in keep if k in node}}
    if "bound" not in node:
        for k, v in node.items():
            yield from _certified_blocks(v, (*path, str(k)), here)
        return
    kind = node.get("kind")
    name = kind if isinstance(kind, str) and kind else ".".join(path) or "pooled"
    try:
        yield CertificateCheck(
            name,
            float(node["bound"]),
            float(here["alpha"]),
            float(here.get("delta", float("nan"))),
            int(node.get("n_neg", 0)),
            here.get("feasible") is not False,
            _counted(str(here.get("calibrated_on", ""))),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"recommendation.json: certified block {name!r} needs numeric alpha and bound "
            f"(and delta, n_neg): {exc!r}"
        ) from exc


def _counted(calibrated_on: str) -> str:
    """What a certificate's n counts, read from where it was calibrated (experiment 05 says
    "per unit" or "per question group" for a certificate over independent units)."""
    per_unit = "per unit" in calibrated_on or "per question group" in calibrated_on
    return "negative units" if per_unit else "negatives"
