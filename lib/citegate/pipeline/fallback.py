"""The corpus fallback: what a turn does when the trusted sources cannot support an answer.

A turn (`turn.answer_turn`) is `retrieve` → coverage gate → outline planner (`outline`). The
corpus is *insufficient* when the gate bails out or the planner finds no thesis the notes support.
Then, behind `enable_corpus_fallback` (a `PipelineConfig` field, overridable per call):

- the fallback model answers from general knowledge in the user's language, as a `FallbackReply
  {answer, search_queries, disclaimer, in_scope}` (one repair round-trip on bad JSON);
- `in_scope` false → a polite decline, and nothing is searched again;
- otherwise the 3–5 probes (`search_queries`) are checked as untrusted text (`model_output`:
  an unusable one is dropped with its reason, `FallbackAnswer.dropped_probes`, never searched),
  searched through the same retrieval code, and only chunks with cosine ≥ `fallback_admission`
  are admitted as optional citations;
- the disclaimer the user sees is painted by the server from a fixed per-language string,
  whatever the model wrote: a model may drop or reword it (notebook 04 measures how often).

Bad model output is recorded on the result, never raised. A failed model call (server down,
HTTP error) is model *error*, not model behaviour: the fallback branch is `error`, never
"corpus insufficient"; `citegate ask` exits non-zero on it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from citegate.core.errors import is_model_error
from citegate.core.text import detect_language
from citegate.core.types import Branch, CallStatus, Candidate, Status
from citegate.corpus.builds import parent_build
from citegate.models.llm import (
    ChatClient,
    ChatResult,
    FallbackReply,
    LLMError,
    parse_fallback_reply,
)
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions, parse_lenient, response_format
from citegate.pipeline.model_output import Dropped, keep_queries

DISCLAIMERS = {
    "en": "This answer is not from the trusted sources: it comes from general knowledge "
    "and may be wrong.",
    "ru": "Этот ответ не из проверенных источников: он основан на общих знаниях "
    "и может быть неточным.",
    "hi": "यह उत्तर विश्वसनीय स्रोतों से नहीं है: यह सामान्य ज्ञान पर आधारित है और गलत हो सकता है।",
}
DECLINES = {
    "en": "Sorry, this question is outside what this assistant covers ({scope}), so I cannot "
    "answer it here.",
    "ru": "Извините, этот вопрос выходит за рамки этого помощника ({scope}), поэтому я не могу "
    "на него ответить.",
    "hi": "क्षमा करें, यह प्रश्न इस सहायक के विषय-क्षेत्र ({scope}) से बाहर है, इसलिए यहाँ इसका "
    "उत्तर नहीं दिया जा सकता।",
}
NOT_FOUND = {
    "en": "I don't know: the trusted sources do not cover this question.",
    "ru": "Я не знаю: проверенные источники не отвечают на этот вопрос.",
    "hi": "मुझे नहीं पता: विश्वसनीय स्रोत इस प्रश्न का उत्तर नहीं देते।",
}
NO_ANSWER = {
    "en": "The model could not produce a usable answer.",
    "ru": "Модель не смогла дать пригодный ответ.",
    "hi": "मॉडल कोई उपयोगी उत्तर नहीं दे सका।",
}
SCOPE = {
    "en": "the Bhagavad Gita, its verses and commentaries, and the Hindu philosophy and "
    "spiritual practice it teaches",
    "ru": "Бхагавад-гита, её стихи и комментарии, индийская философия и духовная практика",
    "hi": "भगवद्गीता, उसके श्लोक और टीकाएँ, हिंदू दर्शन और आध्यात्मिक साधना",
}
# The scope each corpus's fixed strings describe, by its full build (`builds.parent_build`:
# gita-split and gita-fold3 are gita's). A decline names it only when every corpus searched has
# one; otherwise it names the corpora searched (`SEARCHED`), or says "the sources searched" when
# the caller names none (`SEARCHED_NONE`): a decline never claims a scope nobody searched.
CORPUS_SCOPES = {"gita": SCOPE}
SEARCHED = {
    "en": "the sources searched: {names}",
    "ru": "источники, по которым шёл поиск: {names}",
    "hi": "खोजे गए स्रोत: {names}",
}
SEARCHED_NONE = {
    "en": "the sources searched",
    "ru": "источники, по которым шёл поиск",
    "hi": "खोजे गए स्रोत",
}
LANGUAGE_NAMES = {"en": "English", "ru": "Russian", "hi": "Hindi"}
PROMPT_VARIANTS = ("asked", "asked_painted", "not_asked")
MAX_PROBES = 5
Search = Callable[[str], Sequence[Candidate]]


# --------------------------------------------------------------------------- language, disclaimer


def fixed_strings_language(lang: str) -> str:
    """The language whose fixed strings (disclaimer, decline, "I don't know") a reply in `lang`
    uses: `lang` itself when citegate has them (en, ru, hi), else 'en'."""
    return lang if lang in DISCLAIMERS else "en"


def disclaimer_for(lang: str) -> str:
    """The mandated disclaimer of a language (English for any other language)."""
    return DISCLAIMERS[fixed_strings_language(lang)]


def normalize(text: str) -> str:
    """Casefolded, punctuation and symbols turned into spaces, whitespace collapsed."""
    chars = (" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in (text or "").casefold())
    return " ".join("".join(chars).split())


def paint(answer: str, lang: str) -> str:
    """What the user sees for a fallback answer: the fixed disclaimer, a blank line, the answer
    (a verbatim copy of the disclaimer at the answer's start is dropped, so it shows once)."""
    disclaimer = disclaimer_for(lang)
    body = (answer or "").strip()
    if body.startswith(disclaimer):
        body = body[len(disclaimer) :].strip()
    return f"{disclaimer}\n\n{body}" if body else disclaimer


def decline_scope(lang: str, corpora: Sequence[str] = ()) -> str:
    """What a decline says the assistant covers, in `lang`: the described scope of the corpora
    searched when each has one (`CORPUS_SCOPES`), else their names (`SEARCHED`), else "the
    sources searched" (`SEARCHED_NONE`: no corpus named)."""
    lang = fixed_strings_language(lang)
    names = list(dict.fromkeys(corpora))
    if not names:
        return SEARCHED_NONE[lang]
    parents = list(dict.fromkeys(parent_build(c) for c in names))
    if all(p in CORPUS_SCOPES for p in parents):
        return "; ".join(CORPUS_SCOPES[p][lang] for p in parents)
    return SEARCHED[lang].format(names=", ".join(names))


def decline_text(lang: str, corpora: Sequence[str] = ()) -> str:
    """The polite out-of-scope decline in the user's language, naming what the searched
    `corpora` cover (`decline_scope`)."""
    lang = fixed_strings_language(lang)
    return DECLINES[lang].format(scope=decline_scope(lang, corpora))


# --------------------------------------------------------------------------- fallback prompt


def fallback_reply_schema(variant: str) -> dict[str, Any]:
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


def parse_reply(text: str) -> tuple[FallbackReply | None, str]:
    """`parse_fallback_reply`, retried with raw control characters turned into spaces
    (`parse_lenient`)."""
    return parse_lenient(parse_fallback_reply, text)


def fallback_messages(question: str, lang: str, variant: str) -> list[dict[str, str]]:
    """System + user messages of one prompt variant: `asked` (copy the disclaimer),
    `asked_painted` (copy it; the server already shows it), `not_asked` (no disclaimer)."""
    if variant not in PROMPT_VARIANTS:
        raise ValueError(f"unknown prompt variant {variant!r}; known: {PROMPT_VARIANTS}")
    lang = fixed_strings_language(lang)
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


@dataclass(frozen=True)
class FallbackAnswer:
    """One fallback call: the parsed `FallbackReply` (None on failure), the parse status (ok,
    repaired, parse_failure: ..., llm_error: ...; `outcome` reads its kind and detail), the
    model's final raw text, and its calls."""

    question: str
    lang: str
    variant: str
    model: str
    value: FallbackReply | None
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
        """Up to five distinct search queries that retrieval can take (`model_output.check_query`:
        cleaned of invisible characters; none empty, symbols only, a JSON fragment or a copy of
        the prompt)."""
        return self._checked_probes[0]

    @property
    def dropped_probes(self) -> tuple[Dropped, ...]:
        """The model's search queries that are not searched, each with why (unusable, a repeat,
        over the limit of five)."""
        return self._checked_probes[1]

    @cached_property
    def _checked_probes(self) -> tuple[tuple[str, ...], tuple[Dropped, ...]]:
        """The probes kept and dropped, checked once per answer."""
        if self.value is None:
            return (), ()
        return keep_queries(self.value.search_queries, limit=MAX_PROBES, prompt=self._prompt)

    @property
    def _prompt(self) -> str:
        """The system prompt the model saw ("" for an unknown variant): a probe copied from it
        is an echo, not a query."""
        if self.variant not in PROMPT_VARIANTS:
            return ""
        return fallback_messages(self.question, self.lang, self.variant)[0]["content"]

    @property
    def answer(self) -> str:
        """The answer text: the parsed field; else an `"answer"` string salvaged from broken JSON;
        else the raw reply when it holds no JSON at all; else a fixed 'no usable answer'."""
        if self.value is not None:
            return self.value.answer.strip()
        found = re.search(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)"', self.text)
        if found:
            return (
                _json_string(found.group(1)).strip() or NO_ANSWER[fixed_strings_language(self.lang)]
            )
        if self.text.strip() and "{" not in self.text:
            return self.text.strip()
        return NO_ANSWER[fixed_strings_language(self.lang)]

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
    options: CallOptions = DEFAULT_OPTIONS,
) -> FallbackAnswer:
    """Ask the fallback model (one repair on bad JSON) with `options` (prompt variant, token cap,
    JSON mode). Never raises on model output; a call that fails for good is recorded as status
    `llm_error: ...`."""
    lang = fixed_strings_language(lang or detect_language(question))
    variant = options.variant
    messages = fallback_messages(question, lang, variant)
    fmt = response_format(client, fallback_reply_schema(variant), options.json_mode)
    try:
        res = client.structured(
            messages, parse_reply, max_tokens=options.max_tokens, response_format=fmt
        )
    except LLMError as exc:
        failed = f"{CallStatus.LLM_ERROR}: {exc}"
        return FallbackAnswer(question, lang, variant, client.model, None, failed, "")
    return FallbackAnswer(
        question, lang, variant, client.model, res.value, res.status, res.text, res.calls
    )


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
    options: CallOptions = DEFAULT_OPTIONS,
    corpora: Sequence[str] = (),
) -> FallbackTurn:
    """Ask the fallback model (`options`: see `ask_fallback`); decline (no search) when it says
    out of scope, naming what the searched `corpora` cover (`decline_text`); else search every
    probe with `search` and admit hits at cosine ≥ `admission`; paint the disclaimer. A failed
    call gives branch `error` with no text: there is no answer to paint."""
    lang = fixed_strings_language(lang or detect_language(question))
    fa = ask_fallback(client, question, lang, options)
    if is_model_error(fa.status):
        return FallbackTurn(Branch.ERROR, "", "", (), (), (), fa)
    if fa.in_scope is False:
        return FallbackTurn(Branch.DECLINE, decline_text(lang, corpora), "", (), (), (), fa)
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


__all__ = [
    "CORPUS_SCOPES",
    "DECLINES",
    "DISCLAIMERS",
    "NOT_FOUND",
    "PROMPT_VARIANTS",
    "SEARCHED",
    "SEARCHED_NONE",
    "FallbackAnswer",
    "FallbackTurn",
    "Search",
    "admit",
    "ask_fallback",
    "decline_scope",
    "decline_text",
    "detect_language",
    "disclaimer_for",
    "fallback_messages",
    "fallback_reply_schema",
    "fallback_turn",
    "fixed_strings_language",
    "paint",
    "parse_reply",
]
