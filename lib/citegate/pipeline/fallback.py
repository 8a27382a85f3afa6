"""The corpus fallback: what a turn does when the trusted sources cannot support an answer.

A turn is `retrieve` → coverage gate → outline planner (an LLM over the retrieved notes). The
corpus is *insufficient* when the gate bails out or the planner finds no thesis the notes support.
Then, behind `enable_corpus_fallback` (a `PipelineConfig` field, overridable per call):

- the fallback model answers from general knowledge in the user's language, as a `MemoryAnswer
  {answer, search_queries, disclaimer, in_scope}` (one repair round-trip on bad JSON);
- `in_scope` false → a polite decline, and nothing is searched again;
- otherwise the 3–5 probes (`search_queries`) are searched through the same retrieval code and
  only chunks with cosine ≥ `fallback_admission` are admitted as optional citations;
- the disclaimer the user sees is painted by the server from a fixed per-language string,
  whatever the model wrote: models were seen to drop it (notebook 04 measures how often).

Bad model output is recorded on the result, never raised. A failed model call (server down,
HTTP error) is model *error*, not model behaviour: the turn's branch is `error` and its reason
`model error (...): ...`, never "corpus insufficient"; `citegate ask` exits non-zero on it.
Every entry point takes the question through `clean_question` first.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.errors import is_model_error
from citegate.core.text import detect_language
from citegate.core.types import (
    Branch,
    CallStatus,
    Candidate,
    Decision,
    RetrievalResult,
    Status,
)
from citegate.models.embed import Embedder
from citegate.models.llm import (
    LOCAL_MODEL_ID,
    ChatClient,
    ChatResult,
    LLMError,
    LocalLlamaServer,
    MemoryAnswer,
    first_json_object,
    parse_memory_answer,
)
from citegate.models.rerank import Reranker
from citegate.pipeline.plan import clean_question
from citegate.pipeline.render import where
from citegate.pipeline.retrieve import retrieve

DISCLAIMERS = {
    "en": "This answer is not from the trusted sources: it comes from general knowledge "
    "and may be wrong.",
    "ru": "Этот ответ не из проверенных источников: он основан на общих знаниях "
    "и может быть неточным.",
}
# Content words (prefixes, so Russian inflection passes) that a paraphrase must keep.
DISCLAIMER_KEYS = {
    "en": ("not", "trusted", "source", "general", "knowledge"),
    "ru": ("не", "проверен", "источник", "общ", "знани"),
}
DECLINES = {
    "en": "Sorry, this question is outside what this assistant covers ({scope}), so I cannot "
    "answer it here.",
    "ru": "Извините, этот вопрос выходит за рамки этого помощника ({scope}), поэтому я не могу "
    "на него ответить.",
}
NOT_FOUND = {
    "en": "I don't know: the trusted sources do not cover this question.",
    "ru": "Я не знаю: проверенные источники не отвечают на этот вопрос.",
}
NO_ANSWER = {
    "en": "The model could not produce a usable answer.",
    "ru": "Модель не смогла дать пригодный ответ.",
}
SCOPE = {
    "en": "the Bhagavad Gita, its verses and commentaries, and the Hindu philosophy and "
    "spiritual practice it teaches",
    "ru": "Бхагавад-гита, её стихи и комментарии, индийская философия и духовная практика",
}
LANGUAGE_NAMES = {"en": "English", "ru": "Russian"}
PROMPT_VARIANTS = ("asked", "asked_painted", "not_asked")
BRANCHES = tuple(Branch)
JSON_MODES = ("schema", "json", "off")
MAX_PROBES = 5
Search = Callable[[str], Sequence[Candidate]]


# --------------------------------------------------------------------------- the question


# --------------------------------------------------------------------------- language, disclaimer


def supported(lang: str) -> str:
    """The language itself when it has fixed strings, else 'en'."""
    return lang if lang in DISCLAIMERS else "en"


def disclaimer_for(lang: str) -> str:
    """The mandated disclaimer of a language (English for any other language)."""
    return DISCLAIMERS[supported(lang)]


def normalize(text: str) -> str:
    """Casefolded, punctuation and symbols turned into spaces, whitespace collapsed."""
    chars = (" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in (text or "").casefold())
    return " ".join("".join(chars).split())


def disclaimer_present(model_text: str, lang: str) -> tuple[bool, bool]:
    """(exact, normalized): the disclaimer verbatim in the text; or, after `normalize`, as a
    substring, or every key content word of it present (as a word prefix)."""
    want = disclaimer_for(lang)
    exact = want in (model_text or "")
    norm_text = normalize(model_text)
    words = norm_text.split()
    keys = DISCLAIMER_KEYS[supported(lang)]
    keyed = all(any(w.startswith(k) for w in words) for k in keys)
    return exact, exact or normalize(want) in norm_text or keyed


def paint(answer: str, lang: str) -> str:
    """What the user sees for a memory answer: the fixed disclaimer, a blank line, the answer
    (a verbatim copy of the disclaimer at the answer's start is dropped, so it shows once)."""
    disclaimer = disclaimer_for(lang)
    body = (answer or "").strip()
    if body.startswith(disclaimer):
        body = body[len(disclaimer) :].strip()
    return f"{disclaimer}\n\n{body}" if body else disclaimer


def decline_text(lang: str) -> str:
    """The polite out-of-scope decline in the user's language."""
    lang = supported(lang)
    return DECLINES[lang].format(scope=SCOPE[lang])


# --------------------------------------------------------------------------- fallback prompt


def memory_schema(variant: str) -> dict[str, Any]:
    """JSON schema of the reply (no `disclaimer` field when the variant does not ask for one).
    Scope and disclaimer come first, so a reply cut by `max_tokens` loses probes, not those;
    lengths are bounded so a small model cannot run on inside one string."""
    props: dict[str, Any] = {
        "in_scope": {"type": "boolean"},
        "disclaimer": {"type": "string", "maxLength": 140},
        "answer": {"type": "string", "maxLength": 240},
        "search_queries": {
            "type": "array",
            "items": {"type": "string", "maxLength": 48},
            "minItems": 3,
            "maxItems": MAX_PROBES,
        },
    }
    if variant == "not_asked":
        del props["disclaimer"]
    return {"type": "object", "properties": props, "required": list(props)}


_CONTROL = re.compile(r"[\x00-\x1f]")


def parse_reply(text: str) -> tuple[MemoryAnswer | None, str]:
    """`parse_memory_answer`, retried with raw control characters (a newline inside a string,
    which llama.cpp's JSON grammar lets through) turned into spaces."""
    value, status = parse_memory_answer(text)
    if value is None and _CONTROL.search(text or ""):
        value, again = parse_memory_answer(_CONTROL.sub(" ", text))
        status = again if value is not None else status
    return value, status


def fallback_messages(question: str, lang: str, variant: str) -> list[dict[str, str]]:
    """System + user messages of one prompt variant: `asked` (copy the disclaimer),
    `asked_painted` (copy it; the server already shows it), `not_asked` (no disclaimer)."""
    if variant not in PROMPT_VARIANTS:
        raise ValueError(f"unknown prompt variant {variant!r}; known: {PROMPT_VARIANTS}")
    lang = supported(lang)
    fields = '"in_scope": true|false'
    if variant != "not_asked":
        fields += ', "disclaimer": string'
    fields += ', "answer": string, "search_queries": [3 to 5 short search queries]'
    lines = [
        f"You help with questions about {SCOPE['en']}. The trusted sources had nothing on this "
        "question, so answer briefly from general knowledge.",
        f"Reply with ONLY one JSON object: {{{fields}}}.",
        f"Write the answer and the search queries in {LANGUAGE_NAMES[lang]}.",
        "in_scope is false when the question is not about that subject (cooking, sport, code, "
        "news, celebrities, general trivia).",
    ]
    if variant != "not_asked":
        lines.append(f'Set "disclaimer" to exactly: "{disclaimer_for(lang)}"')
    if variant == "asked_painted":
        lines.append("The server already shows this disclaimer to the user above your answer.")
    return [
        {"role": "system", "content": "\n".join(lines)},
        {"role": "user", "content": question},
    ]


def response_format(
    client: ChatClient, schema: Mapping[str, Any], mode: str
) -> dict[str, Any] | None:
    """Constrained output: llama.cpp takes a JSON schema inside `json_object` (a grammar);
    OpenAI-compatible remote APIs take `json_schema`. `json`: any JSON object; `off`: none."""
    if mode not in JSON_MODES:
        raise ValueError(f"unknown json mode {mode!r}; known: {JSON_MODES}")
    if mode == "off":
        return None
    if mode == "json":
        return {"type": "json_object"}
    if client.kind == "local":
        return {"type": "json_object", "schema": dict(schema)}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": dict(schema)}}


@dataclass(frozen=True)
class FallbackAnswer:
    """One fallback call: the parsed `MemoryAnswer` (None on failure), the parse status (ok,
    repaired, parse_failure: ..., llm_error: ...; `outcome` reads its kind and detail), the
    model's final raw text, and its calls."""

    question: str
    lang: str
    variant: str
    model: str
    value: MemoryAnswer | None
    status: str
    text: str
    calls: tuple[ChatResult, ...] = ()

    @property
    def outcome(self) -> Status:
        """The status as kind (`CallStatus`) and detail."""
        return Status.parse(self.status)

    @property
    def ok(self) -> bool:
        """Whether the reply parsed (first try or after repair)."""
        return self.value is not None

    @property
    def in_scope(self) -> bool | None:
        """The model's scope verdict (None when the reply did not parse)."""
        return None if self.value is None else self.value.in_scope

    @property
    def probes(self) -> tuple[str, ...]:
        """Up to five distinct non-empty search queries."""
        if self.value is None:
            return ()
        clean = (" ".join(q.split()) for q in self.value.search_queries)
        return tuple(dict.fromkeys(q for q in clean if q))[:MAX_PROBES]

    @property
    def answer(self) -> str:
        """The answer text: the parsed field; else an `"answer"` string salvaged from broken JSON;
        else the raw reply when it holds no JSON at all; else a fixed 'no usable answer'."""
        if self.value is not None:
            return self.value.answer.strip()
        found = re.search(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)"', self.text)
        if found:
            return _json_string(found.group(1)).strip() or NO_ANSWER[supported(self.lang)]
        if self.text.strip() and "{" not in self.text:
            return self.text.strip()
        return NO_ANSWER[supported(self.lang)]

    @property
    def model_text(self) -> str:
        """What the model itself wrote for the user: disclaimer field and answer when parsed,
        else the raw reply (where adherence to the disclaimer is judged)."""
        if self.value is None:
            return self.text
        return "\n".join(t for t in (self.value.disclaimer, self.value.answer) if t)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens over every call (repair included)."""
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        """Completion tokens over every call."""
        return sum(c.completion_tokens for c in self.calls)

    @property
    def latency_s(self) -> float:
        """Wall time over every call (0 for cache hits)."""
        return sum(c.latency_s for c in self.calls)


def _json_string(body: str) -> str:
    """A JSON string body decoded (escapes resolved); the raw body if it does not decode."""
    try:
        return str(json.loads(f'"{body}"'))
    except json.JSONDecodeError:
        return body


def ask_fallback(
    client: ChatClient,
    question: str,
    lang: str | None = None,
    variant: str = "asked_painted",
    *,
    max_tokens: int = 160,
    json_mode: str = "schema",
) -> FallbackAnswer:
    """Ask the fallback model (one repair on bad JSON). Never raises on model output; a call
    that fails for good is recorded as status `llm_error: ...`."""
    lang = supported(lang or detect_language(question))
    messages = fallback_messages(question, lang, variant)
    fmt = response_format(client, memory_schema(variant), json_mode)
    try:
        res = client.structured(messages, parse_reply, max_tokens=max_tokens, response_format=fmt)
    except LLMError as exc:
        failed = f"{CallStatus.LLM_ERROR}: {exc}"
        return FallbackAnswer(question, lang, variant, client.model, None, failed, "")
    return FallbackAnswer(
        question, lang, variant, client.model, res.value, res.status, res.text, res.calls
    )


# --------------------------------------------------------------------------- outline planner


OUTLINE_SCHEMA = {
    "type": "object",
    "properties": {
        "theses": {
            "type": "array",
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 200},
                    "notes": {"type": "array", "items": {"type": "integer"}, "maxItems": 4},
                },
                "required": ["text", "notes"],
            },
        }
    },
    "required": ["theses"],
}


@dataclass(frozen=True)
class Outline:
    """The planner's theses (each cites ≥ 1 note by 1-based number), parse status, calls."""

    theses: tuple[str, ...]
    cited: tuple[tuple[int, ...], ...]
    status: str
    calls: tuple[ChatResult, ...] = ()
    dropped: int = 0  # note numbers cited that no note carries (fabricated, dropped by the parser)

    @property
    def outcome(self) -> Status:
        """The status as kind (`CallStatus`) and detail."""
        return Status.parse(self.status)


def outline_messages(
    question: str, notes: Sequence[Candidate], max_notes: int, chars: int
) -> list[dict[str, str]]:
    """The planner prompt: numbered note snippets, then the question."""
    shown = "\n".join(
        f"[{i}] {' '.join(c.text.split())[:chars]}" for i, c in enumerate(notes[:max_notes], 1)
    )
    system = (
        "You plan an answer that uses ONLY the numbered notes. Reply with ONLY one JSON object: "
        '{"theses": [{"text": string, "notes": [note numbers]}]}. Each thesis must be stated '
        'by the notes it cites. If the notes do not answer the question, reply {"theses": []}.'
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Notes:\n{shown}\n\nQuestion: {question}"},
    ]


def parse_outline(text: str, n_notes: int) -> tuple[Outline | None, str]:
    """Theses that cite at least one existing note; (None, 'parse_failure: ...') on bad JSON."""
    obj, why = first_json_object(text or "")
    if obj is None and _CONTROL.search(text or ""):
        obj, _ = first_json_object(_CONTROL.sub(" ", text))
    if obj is None:
        return None, f"{CallStatus.PARSE_FAILURE}: {why}"
    items = obj.get("theses")
    if not isinstance(items, list):
        return None, f"{CallStatus.PARSE_FAILURE}: 'theses' must be a list"
    theses, cited, dropped = [], [], 0
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        given = item.get("notes") if isinstance(item.get("notes"), list) else []
        refs = [r for r in given if isinstance(r, int) and 1 <= r <= n_notes]
        dropped += len({r for r in given if isinstance(r, int)} - set(refs))
        if item["text"].strip() and refs:
            theses.append(item["text"].strip())
            cited.append(tuple(dict.fromkeys(refs)))
    ok = CallStatus.OK.value
    return Outline(tuple(theses), tuple(cited), ok, dropped=dropped), ok


def outline_call(
    client: ChatClient,
    question: str,
    notes: Sequence[Candidate],
    *,
    max_notes: int = 5,
    chars: int = 300,
    max_tokens: int = 160,
    json_mode: str = "schema",
) -> Outline:
    """Run the planner over the top notes; no notes, bad JSON or a failed call give no theses."""
    if not notes:
        return Outline((), (), CallStatus.NO_NOTES.value)
    shown = list(notes[:max_notes])
    fmt = response_format(client, OUTLINE_SCHEMA, json_mode)
    try:
        res = client.structured(
            outline_messages(question, shown, max_notes, chars),
            lambda t: parse_outline(t, len(shown)),
            max_tokens=max_tokens,
            response_format=fmt,
        )
    except LLMError as exc:
        return Outline((), (), f"{CallStatus.LLM_ERROR}: {exc}")
    if res.value is None:
        return Outline((), (), res.status, res.calls)
    return Outline(res.value.theses, res.value.cited, res.status, res.calls, res.value.dropped)


def outline(client: ChatClient, question: str, notes: Sequence[Candidate]) -> list[str]:
    """The planner's theses over the notes; an empty list means `corpus_insufficient`."""
    return list(outline_call(client, question, notes).theses)


# --------------------------------------------------------------------------- the fallback branch


def admit(hits: Sequence[Candidate], threshold: float) -> list[Candidate]:
    """Probe hits admitted as optional citations: cosine ≥ threshold, one per fragment (its best
    cosine), best first."""
    best: dict[int, Candidate] = {}
    for c in hits:
        if c.score >= threshold and (
            c.fragment_id not in best or c.score > best[c.fragment_id].score
        ):
            best[c.fragment_id] = c
    return sorted(best.values(), key=lambda c: (-c.score, c.fragment_id))


@dataclass(frozen=True)
class FallbackTurn:
    """The fallback branch of a turn: decline or painted answer, probes and admitted citations;
    `error` (no text) when the model call failed."""

    branch: Branch  # fallback | decline | error
    text: str
    disclaimer: str
    probes: tuple[str, ...]
    hits: tuple[Candidate, ...]
    admitted: tuple[Candidate, ...]
    answer: FallbackAnswer


def fallback_turn(
    client: ChatClient,
    question: str,
    search: Search,
    *,
    admission: float,
    lang: str | None = None,
    variant: str = "asked_painted",
    max_tokens: int = 160,
    json_mode: str = "schema",
) -> FallbackTurn:
    """Ask the fallback model; decline (no search) when it says out of scope; else search every
    probe with `search` and admit hits at cosine ≥ `admission`; paint the disclaimer. A failed
    call gives branch `error` with no text: there is no answer to paint."""
    lang = supported(lang or detect_language(question))
    fa = ask_fallback(client, question, lang, variant, max_tokens=max_tokens, json_mode=json_mode)
    if is_model_error(fa.status):
        return FallbackTurn(Branch.ERROR, "", "", (), (), (), fa)
    if fa.in_scope is False:
        return FallbackTurn(Branch.DECLINE, decline_text(lang), "", (), (), (), fa)
    hits = tuple(c for probe in fa.probes for c in search(probe))
    admitted = tuple(admit(hits, admission))
    return FallbackTurn(
        Branch.FALLBACK,
        paint(fa.answer, lang),
        disclaimer_for(lang),
        fa.probes,
        hits,
        admitted,
        fa,
    )


# --------------------------------------------------------------------------- one turn


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
    variant: str = "asked_painted",
    max_tokens: int = 160,
    json_mode: str = "schema",
) -> Turn:
    """Retrieve, gate, outline; on `corpus_insufficient` take the fallback (if enabled, per call
    or by `cfg.enable_corpus_fallback`) or say "I don't know". A planner call that fails ends the
    turn as branch `error` (no fallback: the corpus was not judged); so does a failed fallback
    call. `QuestionError` for an unusable question (`clean_question`)."""
    question = clean_question(question)
    before = client.usage.as_dict()
    lang = supported(detect_language(question))
    res = retrieve(conn, question, cfg, embedder, reranker)  # type: ignore[arg-type]
    plan = (
        Outline((), (), f"{CallStatus.SKIPPED}: gate bailed out")
        if res.decision == Decision.INSUFFICIENT
        else outline_call(client, question, res.notes, max_tokens=max_tokens, json_mode=json_mode)
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
            _take_fallback(
                turn, conn, cfg, embedder, reranker, client, variant, max_tokens, json_mode
            )
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
    variant: str,
    max_tokens: int,
    json_mode: str,
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
        variant=variant,
        max_tokens=max_tokens,
        json_mode=json_mode,
    )
    turn.branch, turn.text, turn.disclaimer = fb.branch, fb.text, fb.disclaimer
    turn.probes, turn.admitted, turn.fallback = fb.probes, fb.admitted, fb.answer
    if fb.branch == Branch.ERROR:
        turn.fail("fallback", fb.answer.status)


__all__ = [
    "DISCLAIMERS",
    "PROMPT_VARIANTS",
    "BRANCHES",
    "FallbackAnswer",
    "FallbackTurn",
    "Outline",
    "Turn",
    "admit",
    "answer_turn",
    "ask_fallback",
    "detect_language",
    "disclaimer_present",
    "fallback_turn",
    "outline",
    "paint",
]
