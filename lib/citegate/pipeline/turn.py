"""One turn: a question through retrieval, the coverage gate, the composer, the claim check and,
when the corpus is insufficient, the corpus fallback (`fallback`) or "I don't know".

The composer (`PipelineConfig.composer`) writes the grounded answer from the numbered notes:
`extractive` (the notes' own sentences, no model), `generative` (the closed-book composer on the
composer role's model) or `outline` (the outline planner's theses). Every grounded answer then
goes through the claim check (`claimcheck`): each claim against the notes it cites, verdicts kept
on the turn and shown, the policy deciding whether an unsupported claim is flagged or removed.
A composer that abstains, or an answer the check leaves empty, makes the corpus insufficient.

A failed model call (server down, HTTP error) is model *error*, not model behaviour: the turn's
branch is `error` and its reason `model error (...): ...`, never "corpus insufficient"; `citegate
ask` exits non-zero on it. Every entry point takes the question through `clean_question` first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.errors import is_model_error
from citegate.core.text import detect_language
from citegate.core.types import Branch, CallStatus, Candidate, Decision, RetrievalResult, Status
from citegate.models.embed import Embedder
from citegate.models.llm import ChatClient
from citegate.models.rerank import Reranker
from citegate.pipeline.claimcheck import AnswerCheck, check_answer, shown_text
from citegate.pipeline.compose import Composed, abstention, compose_closed_book
from citegate.pipeline.extractive import MAX_NOTES, extract
from citegate.pipeline.fallback import NOT_FOUND, FallbackAnswer, fallback_turn, supported
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions
from citegate.pipeline.outline import Outline, outline_call
from citegate.pipeline.plan import clean_question
from citegate.pipeline.render import where
from citegate.pipeline.retrieve import retrieve
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.support import support_scores


@dataclass
class Turn:
    """One question through the whole flow. `branch`: grounded | fallback | decline | error
    (a model call failed; `model_error` says which and why). `composed` is the composer's text
    with bare note numbers; `check` the claim check of the answer shown (grounded or fallback)."""

    question: str
    lang: str
    branch: Branch
    corpus_insufficient: bool
    reason: str
    decision: Decision
    notes: tuple[Candidate, ...]
    theses: tuple[str, ...]
    text: str
    disclaimer: str = ""
    probes: tuple[str, ...] = ()
    admitted: tuple[Candidate, ...] = ()
    fallback: FallbackAnswer | None = None
    outline_status: str = ""
    usage: dict[str, float] = field(default_factory=dict)
    retrieval: RetrievalResult | None = None
    model_error: str = ""
    composer: str = ""
    composed: str = ""
    composed_status: str = ""
    abstained: str = ""  # "exact" | "inexact" when the composer abstained (`compose.abstention`)
    check: AnswerCheck | None = None
    models: dict[str, str] = field(default_factory=dict)

    def fail(self, stage: str, status: str) -> None:
        """Mark the turn as failed by a model call of `stage` (its `llm_error: ...` status)."""
        self.model_error = f"{stage}: {Status.parse(status).detail}"
        self.branch, self.reason = Branch.ERROR, f"model error ({self.model_error})"
        self.text = ""


def note_labels(notes: Sequence[Candidate]) -> dict[str, str]:
    """Note number (as the composer saw it) -> the address the server shows for it."""
    return {str(n): where(c) for n, c in enumerate(notes, 1)}


def _usage_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Usage counters spent between two snapshots of `RoleClients.usage()`."""
    return {k: after[k] - before.get(k, 0.0) for k in after}


def answer_turn(
    conn: psycopg.Connection | None,
    question: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    client: ChatClient | RoleClients,
    *,
    enable_fallback: bool | None = None,
    options: CallOptions = DEFAULT_OPTIONS,
) -> Turn:
    """Retrieve, gate, compose, check; on `corpus_insufficient` take the fallback (if enabled,
    per call or by `cfg.enable_corpus_fallback`) or say "I don't know". `client` is one chat
    client for every role, or `RoleClients` (a client per role, made when first needed).
    A composer or planner call that fails ends the turn as branch `error` (no fallback: the
    corpus was not judged); so does a failed fallback call. `QuestionError` for an unusable
    question (`clean_question`)."""
    question = clean_question(question)
    roles = client if isinstance(client, RoleClients) else RoleClients.single(client, cfg)
    before = roles.usage()
    lang = supported(detect_language(question))
    res = retrieve(conn, question, cfg, embedder, reranker)  # type: ignore[arg-type]
    turn = Turn(question, lang, Branch.GROUNDED, False, "", res.decision, res.notes, (), "")
    turn.retrieval, turn.composer = res, cfg.composer
    if res.decision == Decision.INSUFFICIENT:
        turn.outline_status = f"{CallStatus.SKIPPED}: gate bailed out"
        why = "gate: bail out"
    else:
        why = _answer(turn, cfg, embedder, roles, options)
    if why and not turn.model_error:
        turn.corpus_insufficient, turn.reason = True, why
        enabled = cfg.enable_corpus_fallback if enable_fallback is None else enable_fallback
        if enabled:
            _take_fallback(turn, conn, cfg, embedder, reranker, roles("fallback"), options)
        else:
            turn.branch, turn.text = Branch.DECLINE, NOT_FOUND[lang]
    turn.usage = _usage_delta(before, roles.usage())
    return turn


@dataclass(frozen=True)
class Grounded:
    """A composed and checked answer over a question's notes: the composer's text (bare note
    numbers) and status, how it abstained, the claim check, the text shown (addresses, flags),
    why the corpus is insufficient for it ("" when it stands), and the failed stage on a model
    error (`failed`: "" when no call failed)."""

    composed: Composed
    abstained: str
    check: AnswerCheck | None
    text: str
    why: str
    failed: str = ""


def _compose(
    question: str,
    lang: str,
    notes: Sequence[Candidate],
    cfg: PipelineConfig,
    embedder: Embedder,
    roles: RoleClients,
    options: CallOptions,
    framing: Sequence[str] = (),
) -> tuple[Composed, Outline | None]:
    """The composer's answer over the notes (numbers 1.. as shown to it), and the outline when
    the outline planner wrote it. Curated memory notes (`framing`) reach the generative
    composer as unnumbered background; the extractive and outline composers quote notes only."""
    if cfg.composer == "extractive":
        return extract(embedder, question, notes, sentences=cfg.extract_sentences), None
    if cfg.composer == "generative":
        texts = [c.text for c in notes]
        return compose_closed_book(
            roles("composer"), question, texts, lang, options,
            temperature=cfg.composer_temperature, max_notes=MAX_NOTES, framing=framing,
        ), None  # fmt: skip
    plan = outline_call(roles("outline"), question, notes, options, max_notes=MAX_NOTES)
    offered = {str(n): c.text for n, c in enumerate(notes[:MAX_NOTES], 1)}
    return Composed(outline_text(plan), offered, plan.status), plan


def outline_text(plan: Outline) -> str:
    """The outline as an answer with bare note numbers: one line per thesis, `- thesis [1, 2]`."""
    return "\n".join(
        f"- {t} [{', '.join(str(r) for r in refs)}]"
        for t, refs in zip(plan.theses, plan.cited, strict=True)
    )


def checked(
    composed_text: str,
    offered: Mapping[str, str],
    cfg: PipelineConfig,
    embedder: Embedder,
    *,
    policy: str | None = None,
) -> AnswerCheck:
    """The claim check of a composed text against the notes offered to its composer."""
    return check_answer(
        composed_text,
        offered,
        lambda claims, notes: support_scores(embedder, claims, notes, cfg.support_mode),
        cfg.support_threshold,
        policy=policy or cfg.unsupported_claims,
        scorer_id=f"{getattr(embedder, 'id', 'unknown')} {cfg.support_mode}",
    )


def grounded_answer(
    question: str,
    lang: str,
    notes: Sequence[Candidate],
    cfg: PipelineConfig,
    embedder: Embedder,
    roles: RoleClients,
    options: CallOptions = DEFAULT_OPTIONS,
    framing: Sequence[str] = (),
) -> tuple[Grounded, Outline | None]:
    """Compose (`cfg.composer`) and check the answer to `question` over its final notes: what
    a turn does once the gate lets it answer, and what notebook 06 measures per composer.
    `framing`: the bodies of the curated memory notes that took part (background, never
    offered to the claim check, so never citable)."""
    composed, plan = _compose(question, lang, notes, cfg, embedder, roles, options, framing)
    if is_model_error(composed.status):
        stage = "outline planner" if cfg.composer == "outline" else "composer"
        return Grounded(composed, "", None, "", "", stage), plan
    abstained = abstention(composed.text, lang) if cfg.composer == "generative" else ""
    if abstained:
        return Grounded(composed, abstained, None, "", "composer: abstained"), plan
    if not composed.text:
        why = "outline: no theses" if cfg.composer == "outline" else "composer: no answer"
        return Grounded(composed, "", None, "", why), plan
    check = checked(composed.text, composed.offered, cfg, embedder)
    if not check.kept:
        why = "claim check: no claim left" if check.verdicts else "composer: no claim"
        return Grounded(composed, "", check, "", why), plan
    text = shown_text(check, note_labels(notes[:MAX_NOTES]))
    return Grounded(composed, "", check, text, ""), plan


def _answer(
    turn: Turn, cfg: PipelineConfig, embedder: Embedder, roles: RoleClients, options: CallOptions
) -> str:
    """Fill the turn from `grounded_answer`; "" when the answer stands, else why the corpus is
    insufficient for it (the turn is marked failed instead on a model error)."""
    mem = turn.retrieval.memory if turn.retrieval is not None else None
    framing = mem.framing if mem is not None else ()
    g, plan = grounded_answer(
        turn.question, turn.lang, turn.notes, cfg, embedder, roles, options, framing
    )
    if plan is not None:
        turn.outline_status, turn.theses = plan.status, plan.theses
    turn.composed, turn.composed_status = g.composed.text, g.composed.status
    turn.abstained, turn.check, turn.text = g.abstained, g.check, g.text
    if g.failed:
        turn.fail(g.failed, g.composed.status)
    return g.why


def _take_fallback(
    turn: Turn,
    conn: psycopg.Connection | None,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    client: ChatClient,
    options: CallOptions,
) -> None:
    """Fill the turn from `fallback_turn`, searching probes with the production retrieval. The
    answer's claims are checked against the admitted citations and recorded (flag policy: the
    painted disclaimer already says the answer is not from the trusted sources)."""

    def search(probe: str) -> Sequence[Candidate]:
        return retrieve(conn, probe, cfg, embedder, reranker).notes  # type: ignore[arg-type]

    fb = fallback_turn(
        client,
        turn.question,
        search,
        admission=cfg.fallback_admission,
        lang=turn.lang,
        options=options,
    )
    turn.branch, turn.text, turn.disclaimer = fb.branch, fb.text, fb.disclaimer
    turn.probes, turn.admitted, turn.fallback = fb.probes, fb.admitted, fb.answer
    if fb.branch == Branch.ERROR:
        turn.fail("fallback", fb.answer.status)
    elif fb.branch == Branch.FALLBACK and fb.answer.answer:
        offered = {str(n): c.text for n, c in enumerate(fb.admitted, 1)}
        turn.check = checked(fb.answer.answer, offered, cfg, embedder, policy="flag")


__all__ = [
    "Grounded",
    "Turn",
    "answer_turn",
    "checked",
    "grounded_answer",
    "note_labels",
    "outline_text",
]
