"""One turn: a question through retrieval, the coverage gate, the outline planner and, when the
corpus is insufficient, the corpus fallback (`fallback`) or "I don't know".

A failed model call (server down, HTTP error) is model *error*, not model behaviour: the turn's
branch is `error` and its reason `model error (...): ...`, never "corpus insufficient"; `citegate
ask` exits non-zero on it. Every entry point takes the question through `clean_question` first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.errors import is_model_error
from citegate.core.text import detect_language
from citegate.core.types import Branch, CallStatus, Candidate, Decision, RetrievalResult, Status
from citegate.models.embed import Embedder
from citegate.models.llm import ChatClient
from citegate.models.llm_server import LOCAL_MODEL_ID, LocalLlamaServer
from citegate.models.rerank import Reranker
from citegate.pipeline.fallback import NOT_FOUND, FallbackAnswer, fallback_turn, supported
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions
from citegate.pipeline.outline import Outline, outline_call
from citegate.pipeline.plan import clean_question
from citegate.pipeline.render import where
from citegate.pipeline.retrieve import retrieve


@dataclass
class Turn:
    """One question through the whole flow. `branch`: grounded | fallback | decline | error
    (a model call failed; `model_error` says which and why)."""

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

    def fail(self, stage: str, status: str) -> None:
        """Mark the turn as failed by a model call of `stage` (its `llm_error: ...` status)."""
        self.model_error = f"{stage}: {Status.parse(status).detail}"
        self.branch, self.reason = Branch.ERROR, f"model error ({self.model_error})"
        self.text = ""


def grounded_text(
    theses: Sequence[str], cited: Sequence[Sequence[int]], notes: Sequence[Candidate]
) -> str:
    """The grounded reply: one line per thesis with the addresses of the notes it cites."""
    lines = []
    for thesis, refs in zip(theses, cited, strict=True):
        labels = ", ".join(where(notes[r - 1]) for r in refs)
        lines.append(f"- {thesis} [{labels}]")
    return "\n".join(lines)


@contextmanager
def chat_client(model: str | None = None) -> Iterator[ChatClient]:
    """The fallback/planner model: a remote one from the environment when keys are set
    (`ChatClient.from_env`), else the bundled SmolLM2 on a local llama.cpp server (one thread)."""
    remote = ChatClient.from_env(model)
    if remote is not None:
        yield remote
        return
    with LocalLlamaServer(n_threads=1) as url:
        yield ChatClient(LOCAL_MODEL_ID, url)


def _usage_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Usage counters spent between two snapshots of `client.usage.as_dict()`."""
    return {k: after[k] - before.get(k, 0.0) for k in after}


def answer_turn(
    conn: psycopg.Connection | None,
    question: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    client: ChatClient,
    *,
    enable_fallback: bool | None = None,
    options: CallOptions = DEFAULT_OPTIONS,
) -> Turn:
    """Retrieve, gate, outline; on `corpus_insufficient` take the fallback (if enabled, per call
    or by `cfg.enable_corpus_fallback`) or say "I don't know". `options` go to both model calls.
    A planner call that fails ends the turn as branch `error` (no fallback: the corpus was not
    judged); so does a failed fallback call. `QuestionError` for an unusable question
    (`clean_question`)."""
    question = clean_question(question)
    before = client.usage.as_dict()
    lang = supported(detect_language(question))
    res = retrieve(conn, question, cfg, embedder, reranker)  # type: ignore[arg-type]
    plan = (
        Outline((), (), f"{CallStatus.SKIPPED}: gate bailed out")
        if res.decision == Decision.INSUFFICIENT
        else outline_call(client, question, res.notes, options)
    )
    turn = Turn(
        question, lang, Branch.GROUNDED, False, "", res.decision, res.notes, plan.theses, ""
    )
    turn.outline_status, turn.retrieval = plan.status, res
    if is_model_error(plan.status):
        turn.fail("outline planner", plan.status)
    elif plan.theses:
        turn.text = grounded_text(plan.theses, plan.cited, res.notes)
    else:
        turn.corpus_insufficient = True
        bailed = res.decision == Decision.INSUFFICIENT
        turn.reason = "gate: bail out" if bailed else "outline: no theses"
        enabled = cfg.enable_corpus_fallback if enable_fallback is None else enable_fallback
        if enabled:
            _take_fallback(turn, conn, cfg, embedder, reranker, client, options)
        else:
            turn.branch, turn.text = Branch.DECLINE, NOT_FOUND[lang]
    turn.usage = _usage_delta(before, client.usage.as_dict())
    return turn


def _take_fallback(
    turn: Turn,
    conn: psycopg.Connection | None,
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    client: ChatClient,
    options: CallOptions,
) -> None:
    """Fill the turn from `fallback_turn`, searching probes with the production retrieval."""

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


__all__ = ["Turn", "answer_turn", "chat_client", "grounded_text"]
