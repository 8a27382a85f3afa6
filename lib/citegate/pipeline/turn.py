"""One turn: a question through retrieval, the coverage gate, the composer, the claim check and,
when the corpus is insufficient, the corpus fallback (`fallback`) or "I don't know".

The composer (`PipelineConfig.composer`) writes the grounded answer from the numbered notes:
`extractive` (the notes' own sentences, no model), `generative` (the closed-book composer on the
composer role's model) or `outline` (the outline planner's theses). Every grounded answer then
goes through the claim check (`claimcheck`): each claim against the notes it cites, in the
support mode certified for what its writer's claims are (`core.config.COMPOSER_CLAIMS`: the
extractive composer quotes; the generative and outline composers and the fallback model
paraphrase), verdicts kept on the turn and shown, the policy deciding whether an unsupported
claim is flagged or removed.
A composer that abstains, or an answer the check leaves empty, makes the corpus insufficient.

On an insufficient corpus the fallback model runs only when the config enables it and names the
notebook 04 run whose bar its model passed (`PipelineConfig.fallback_bar`), or when a caller asks
for it on one call; otherwise the turn says "I don't know" in the user's language with the
nearest notes as pointers (`pointers`), never numbered as an answer's citations. A fallback probe
that cannot be searched (empty, symbols only: model output is untrusted) is dropped and recorded
on the turn (`dropped`), never raised as the user's question.

A failed model call (server down, HTTP error) is model *error*, not model behaviour: the turn's
branch is `error` and its reason `model error (...): ...`, never "corpus insufficient"; `citegate
ask` exits non-zero on it. Every entry point takes the question through `clean_question` first.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import psycopg

from citegate.core.config import COMPOSER_CLAIMS, FALLBACK_CLAIMS, PipelineConfig
from citegate.core.errors import QuestionError, is_model_error
from citegate.core.inputs import clean_question
from citegate.core.text import detect_language
from citegate.core.types import (
    Branch,
    CallStatus,
    Candidate,
    Decision,
    RetrievalResult,
    RewriteRule,
    Status,
)
from citegate.models.embed import Embedder
from citegate.models.llm import ChatClient
from citegate.models.rerank import Reranker
from citegate.pipeline.claimcheck import AnswerCheck, check_answer, shown_text
from citegate.pipeline.compose import Composed, abstention, compose_closed_book
from citegate.pipeline.extractive import MAX_NOTES, extract
from citegate.pipeline.fallback import (
    NOT_FOUND,
    FallbackAnswer,
    FallbackTurn,
    fallback_turn,
    fixed_strings_language,
)
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions
from citegate.pipeline.outline import Outline, outline_call
from citegate.pipeline.plan import Planner
from citegate.pipeline.pointers import nearest, pointer_line
from citegate.pipeline.render import where
from citegate.pipeline.retrieve import retrieve
from citegate.pipeline.rewrite import RewriteResult, resolve_verse_followup, rewrite_query
from citegate.pipeline.roles import RoleClients, unvetted_composer
from citegate.pipeline.support import support_scores


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One question through the whole flow, built once when the turn ends (`turn_events`).
    `branch`: grounded | fallback | decline | error (a model call failed; `model_error` says
    which and why). `composed` is the composer's text with bare note numbers; `check` the claim
    check of the answer shown (grounded or fallback)."""

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
    pointers: tuple[Candidate, ...] = ()  # "I don't know": the nearest notes, never cited
    fallback_skipped: str = ""  # why the fallback model did not run on an insufficient corpus
    fallback_unvetted: bool = False  # it ran on a caller's request with no passing bar
    dropped: tuple[str, ...] = ()  # model output dropped before it re-entered the pipeline
    composer_skipped: str = ""  # why the configured composer did not answer (no bar passed)
    # In a conversation: the query searched and composed for (the follow-up rewritten into a
    # standalone question, or the question as written), and why (`RewriteResult`).
    rewrite: RewriteResult | None = None

    @property
    def searched(self) -> str:
        """The question retrieval and the composer took: the accepted rewrite, else the question."""
        return self.rewrite.query_used if self.rewrite is not None else self.question


@dataclass(frozen=True)
class Ending:
    """How a turn ends: the grounded answer (`branch` grounded), or on an insufficient corpus the
    fallback model's answer under its painted disclaimer (`fallback`: what `fallback_turn`
    returned, `check` its answer's claim check, `dropped` the model output dropped before it
    re-entered the pipeline, `unvetted` when it ran with no passing bar on a caller's request),
    or "I don't know" (`skipped`: why the fallback model did not run; `pointers`: the nearest
    notes, never cited). `text` is what the user is shown."""

    branch: Branch
    text: str
    fallback: FallbackTurn | None = None
    check: AnswerCheck | None = None
    dropped: tuple[str, ...] = ()
    unvetted: bool = False
    skipped: str = ""
    pointers: tuple[Candidate, ...] = ()


def note_labels(notes: Sequence[Candidate]) -> dict[str, str]:
    """Note number (as the composer saw it) -> the address the server shows for it."""
    return {str(n): where(c) for n, c in enumerate(notes, 1)}


def _usage_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Usage counters spent between two snapshots of `RoleClients.usage()`."""
    return {k: after[k] - before.get(k, 0.0) for k in after}


class EventKind(StrEnum):
    """What a streamed event carries, in the order a turn sends them: the gate's `decision`, the
    final `notes`, on the fallback branch the painted `disclaimer` before anything the model
    wrote, each `claim` shown with its verdict, the `text` the user is shown, then `done` with
    the whole `Turn`."""

    DECISION = "decision"
    NOTES = "notes"
    DISCLAIMER = "disclaimer"
    CLAIM = "claim"
    TEXT = "text"
    DONE = "done"


@dataclass(frozen=True)
class TurnEvent:
    """One streamed event: its kind, milliseconds since the turn began, its plain data (what a
    client shows: addresses, never fragment ids alone), and on `done` the whole turn."""

    kind: EventKind
    at_ms: float
    data: Mapping[str, object]
    turn: Turn | None = None


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
    planner: Planner | None = None,
    history: Sequence[Mapping[str, str]] = (),
) -> Turn:
    """Retrieve, gate, compose, check; on `corpus_insufficient` take the fallback (if enabled,
    per call or by `cfg.enable_corpus_fallback`) or say "I don't know". `client` is one chat
    client for every role, or `RoleClients` (a client per role, made when first needed).
    `planner` plans the question's searches as `retrieve` does (None: the offline plan; a
    service passes the one its config names); the fallback's probes are searched as the
    fallback model wrote them.
    A composer or planner call that fails ends the turn as branch `error` (no fallback: the
    corpus was not judged); so does a failed fallback call. `QuestionError` for an unusable
    question (`clean_question`). The turn `turn_events` streams, whole."""
    events = turn_events(
        conn, question, cfg, embedder, reranker, client,
        enable_fallback=enable_fallback, options=options, planner=planner, history=history,
    )  # fmt: skip
    for event in events:
        if event.turn is not None:
            return event.turn
    raise AssertionError("a turn's events end with done")  # turn_events always ends so


def turn_events(
    conn: psycopg.Connection | None,
    question: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    client: ChatClient | RoleClients,
    *,
    enable_fallback: bool | None = None,
    options: CallOptions = DEFAULT_OPTIONS,
    planner: Planner | None = None,
    history: Sequence[Mapping[str, str]] = (),
) -> Iterator[TurnEvent]:
    """`answer_turn` as it happens (`EventKind` says the order): the decision and the notes as
    soon as the gate has decided, the answer's claims with their verdicts once the claim check
    has scored them (in one batch: the extractive composer's sentences are complete at once, a
    model composer's when its reply is), the painted disclaimer first on the fallback branch,
    then the text shown and the whole turn. The question is checked before anything runs.

    In a conversation (`history`: the earlier turns as {"role", "content"} messages, oldest
    first), a follow-up is rewritten into a standalone question (`live_rewrite`) and that is
    what retrieval and the composer take; the turn keeps the question as asked and the rewrite
    with its reason."""
    clock = time.perf_counter()

    def event(kind: EventKind, data: Mapping[str, object], turn: Turn | None = None) -> TurnEvent:
        return TurnEvent(kind, (time.perf_counter() - clock) * 1000.0, data, turn)

    question = clean_question(question)
    composer_skipped = unvetted_composer(cfg)
    if composer_skipped:
        cfg = cfg.replace(composer="extractive")
    roles = client if isinstance(client, RoleClients) else RoleClients.single(client, cfg)
    before = roles.usage()
    lang = fixed_strings_language(detect_language(question))
    rewrite = live_rewrite(question, history, cfg, roles) if history else None
    searched = rewrite.query_used if rewrite is not None else question
    res = retrieve(conn, searched, cfg, embedder, reranker, planner)  # type: ignore[arg-type]
    yield event(EventKind.DECISION, {**decision_data(res), **rewrite_data(rewrite)})
    yield event(EventKind.NOTES, {"notes": notes_data(res.notes)})
    g, plan = None, None
    if res.decision != Decision.INSUFFICIENT:
        framing = res.memory.framing if res.memory is not None else ()
        g, plan = grounded_answer(searched, lang, res.notes, cfg, embedder, roles, options, framing)
        if not g.why and g.check is not None:
            for data in claims_data(g.check, res.notes):
                yield event(EventKind.CLAIM, data)
    why = gate_insufficient(res) if g is None else g.why
    skipped = fallback_skipped(cfg, enable_fallback) if why else ""
    if not why:
        ending = Ending(Branch.GROUNDED, g.text if g is not None else "")
    elif skipped:
        ending = not_found(res.notes, lang, cfg, skipped)
    else:
        ending = _fall_back(searched, lang, conn, cfg, embedder, reranker, roles, options)
        if ending.fallback is not None and ending.fallback.disclaimer:
            yield event(EventKind.DISCLAIMER, {"text": ending.fallback.disclaimer})
        check = _shown_check(g, ending)
        if check is not None and ending.fallback is not None:
            for data in claims_data(check, ending.fallback.admitted):
                yield event(EventKind.CLAIM, data)
    turn = _turn(
        question=question, lang=lang, rewrite=rewrite, res=res, composer=cfg.composer,
        composer_skipped=composer_skipped, grounded=g, plan=plan, why=why, ending=ending,
        usage=_usage_delta(before, roles.usage()),
    )  # fmt: skip
    yield event(EventKind.TEXT, {"text": turn.text})
    yield event(EventKind.DONE, {"branch": str(turn.branch), "reason": turn.reason}, turn)


def _failure(grounded: Grounded | None, ending: Ending) -> str:
    """The failed model call of a turn as `model_error` says it ("" when none failed): the
    composer's (or outline planner's), or the fallback model's."""
    if grounded is not None and grounded.failed:
        stage, status = grounded.failed, grounded.composed.status
    elif ending.fallback is not None and ending.fallback.branch == Branch.ERROR:
        stage, status = "fallback", ending.fallback.answer.status
    else:
        return ""
    return f"{stage}: {Status.parse(status).detail}"


def _shown_check(grounded: Grounded | None, ending: Ending) -> AnswerCheck | None:
    """The claim check the turn keeps: the fallback answer's when it answered, else the grounded
    answer's (None when neither was checked)."""
    if ending.check is not None:
        return ending.check
    return grounded.check if grounded is not None else None


def _turn(
    *,
    question: str,
    lang: str,
    rewrite: RewriteResult | None,
    res: RetrievalResult,
    composer: str,
    composer_skipped: str,
    grounded: Grounded | None,
    plan: Outline | None,
    why: str,
    ending: Ending,
    usage: dict[str, float],
) -> Turn:
    """The turn from its stages: the retrieval, the grounded answer (None when the gate found
    the corpus insufficient), why the corpus is insufficient ("" when the answer stands) and
    how the turn ended; a failed model call makes it branch error, with no text."""
    failed, fb = _failure(grounded, ending), ending.fallback
    if plan is not None:
        theses, outline_status = plan.theses, plan.status
    else:
        theses, outline_status = (), f"{CallStatus.SKIPPED}: {why}" if grounded is None else ""
    return Turn(
        question=question, lang=lang, corpus_insufficient=bool(why), decision=res.decision,
        branch=Branch.ERROR if failed else ending.branch, text="" if failed else ending.text,
        reason=f"model error ({failed})" if failed else why, model_error=failed,
        notes=res.notes, retrieval=res, usage=usage, rewrite=rewrite,
        theses=theses, outline_status=outline_status,
        composer=composer, composer_skipped=composer_skipped,
        composed=grounded.composed.text if grounded is not None else "",
        composed_status=grounded.composed.status if grounded is not None else "",
        abstained=grounded.abstained if grounded is not None else "",
        check=_shown_check(grounded, ending),
        disclaimer=fb.disclaimer if fb is not None else "",
        probes=fb.probes if fb is not None else (),
        admitted=fb.admitted if fb is not None else (),
        fallback=fb.answer if fb is not None else None,
        dropped=ending.dropped, fallback_unvetted=ending.unvetted,
        pointers=ending.pointers, fallback_skipped=ending.skipped,
    )  # fmt: skip


def live_rewrite(
    question: str, history: Sequence[Mapping[str, str]], cfg: PipelineConfig, roles: RoleClients
) -> RewriteResult:
    """A follow-up made standalone: a verse it points at through the conversation written as
    its address, by rule (`rewrite.resolve_verse_followup`: "and the next verse?" after BG
    2.47 searches "and BG 2.48?"); else as the rewrite role writes it, validated
    (`rewrite.rewrite_query`: a rejected or failed rewrite leaves the question as written, with
    the reason), asked only when the rewrite model has passed its bar
    (`PipelineConfig.rewrite_bar`, notebook 01)."""
    resolved = resolve_verse_followup(question, history)
    if resolved is not None:
        return RewriteResult(resolved, None, True, f"{RewriteRule.RESOLVED}: by rule, no model")
    if not cfg.rewrite_bar:
        why = f"{RewriteRule.NO_BAR}: the rewrite model has passed no bar (notebook 01)"
        return RewriteResult(question, None, False, why)
    return rewrite_query(roles("rewrite"), history, question, turn_index=len(history))


def rewrite_data(rewrite: RewriteResult | None) -> dict[str, object]:
    """The rewrite's part of the `decision` event: what was searched and why ({} off a
    conversation)."""
    if rewrite is None:
        return {}
    return {"searched": rewrite.query_used, "rewrite": rewrite.reason}


def decision_data(res: RetrievalResult) -> dict[str, object]:
    """The `decision` event: the decision, and which gate made it and why."""
    by = res.decided_by
    gate = {} if by is None else {"gate": str(by.kind), "reason": by.reason}
    return {"decision": str(res.decision), **gate}


def notes_data(notes: Sequence[Candidate]) -> list[dict[str, object]]:
    """The `notes` event: each final note's number (as the composer sees it), address, kind
    and score."""
    return [
        {"n": n, "address": where(c), "kind": c.kind, "score": round(float(c.score), 4)}
        for n, c in enumerate(notes, 1)
    ]


def claims_data(check: AnswerCheck, notes: Sequence[Candidate]) -> list[dict[str, object]]:
    """The `claim` events: each claim shown (removed ones are not), its verdict, support score
    and the addresses of the notes it cites."""
    labels = note_labels(notes[:MAX_NOTES])
    return [
        {
            "n": n,
            "text": v.text,
            "status": str(v.status),
            "score": None if v.score is None else round(v.score, 4),
            "cites": [labels.get(k, k) for k in v.cited],
        }
        for n, v in enumerate(check.kept, 1)
    ]


def gate_insufficient(res: RetrievalResult) -> str:
    """Why the gate found the corpus insufficient, as the gate that decided says it."""
    by = res.decided_by
    return f"gate ({by.kind}): {by.reason}" if by is not None else "gate: insufficient"


def fallback_skipped(cfg: PipelineConfig, enable_fallback: bool | None) -> str:
    """Why the fallback model does not run on an insufficient corpus ("" when it runs): off for
    this call or in the config, or its model has passed no notebook 04 bar. A caller's explicit
    `enable_fallback=True` runs it whatever the bar (research: notebook 04 measures it so)."""
    if enable_fallback is not None:
        return "" if enable_fallback else "fallback off for this call"
    if not cfg.enable_corpus_fallback:
        return "fallback off in the config"
    if not cfg.fallback_bar:
        return "the fallback model has passed no bar (notebook 04)"
    return ""


def not_found(notes: Sequence[Candidate], lang: str, cfg: PipelineConfig, skipped: str) -> Ending:
    """The honest "I don't know" (`skipped`: why the fallback model did not run): the fixed
    sentence in the user's language, then the nearest notes at the certified floor as pointers
    (never numbered as citations)."""
    pointers = nearest(notes, cfg.fallback_admission)
    line = pointer_line(pointers, lang)
    text = f"{NOT_FOUND[lang]}\n{line}" if line else NOT_FOUND[lang]
    return Ending(Branch.DECLINE, text, skipped=skipped, pointers=pointers)


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
        composed = extract(
            embedder, question, notes, sentences=cfg.extract_sentences, policy=cfg.extract_policy
        )
        return composed, None
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
    claims: str | None = None,
) -> AnswerCheck:
    """The claim check of a composed text against the notes offered to its writer, in the
    support mode and at the threshold certified for what that writer's claims are (`claims`:
    "quote" or "paraphrase", `PipelineConfig.claim_check`; default: what the config's composer
    writes, `COMPOSER_CLAIMS`)."""
    mode, threshold = cfg.claim_check(claims or COMPOSER_CLAIMS[cfg.composer])
    return check_answer(
        composed_text,
        offered,
        lambda texts, notes: support_scores(embedder, texts, notes, mode),
        threshold,
        policy=policy or cfg.unsupported_claims,
        scorer_id=f"{getattr(embedder, 'id', 'unknown')} {mode}",
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


def _fall_back(
    searched: str,
    lang: str,
    conn: psycopg.Connection | None,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    roles: RoleClients,
    options: CallOptions,
) -> Ending:
    """The fallback model's part (`fallback_turn`), its probes searched with the production
    retrieval. The answer's claims are checked against the admitted citations (flag policy: the
    painted disclaimer already says the answer is not from the trusted sources)."""

    dropped: list[str] = []

    def search(probe: str) -> Sequence[Candidate]:
        try:
            return retrieve(conn, probe, cfg, embedder, reranker).notes  # type: ignore[arg-type]
        except QuestionError as exc:  # model output: dropped, never the user's question
            dropped.append(f"probe {probe[:40]!r}: {exc}")
            return ()

    fb = fallback_turn(
        roles("fallback"),
        searched,
        search,
        admission=cfg.fallback_admission,
        lang=lang,
        options=options,
        corpora=cfg.corpora,
    )
    check = None
    if fb.branch == Branch.FALLBACK and fb.answer.answer:
        offered = {str(n): c.text for n, c in enumerate(fb.admitted, 1)}
        check = checked(
            fb.answer.answer, offered, cfg, embedder, policy="flag", claims=FALLBACK_CLAIMS
        )
    checked_out = tuple(f"probe {d}" for d in fb.answer.dropped_probes)
    return Ending(
        fb.branch, fb.text, fb, check, (*checked_out, *dropped), unvetted=not cfg.fallback_bar
    )


__all__ = [
    "Ending",
    "EventKind",
    "Grounded",
    "Turn",
    "TurnEvent",
    "answer_turn",
    "checked",
    "fallback_skipped",
    "gate_insufficient",
    "grounded_answer",
    "not_found",
    "note_labels",
    "outline_text",
    "turn_events",
]
