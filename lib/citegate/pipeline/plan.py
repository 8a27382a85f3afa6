"""Query plan: a question becomes 1–4 typed sub-questions with up to two paraphrases each.

Offline the plan is deterministic: the question itself. With an LLM planner configured (the
planner role's chat model, `planner_model`, else `llm`: `pipeline.roles`), the model proposes
sub-questions; the plan is part of the trace.
What the model writes is untrusted: a sub-question or paraphrase that retrieval could not take
(`model_output.check_query`) is dropped, and the plan's notes say which and why.
The plan's types (`QueryPlan`, `SubQuestion`) live in `citegate.core.types`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from citegate.core.errors import ConfigError
from citegate.core.text import STOPWORDS
from citegate.core.types import QueryPlan, SubQuestion
from citegate.models.llm import ChatClient, first_json_object, is_remote, remote_client
from citegate.pipeline.model_output import Dropped, check_query, keep_queries, summary


class Planner(Protocol):
    """Turns a question into a `QueryPlan`."""

    id: str

    def plan(self, question: str) -> QueryPlan: ...


def keywords(question: str) -> str:
    """The question's content words: the second-round fanout form of a question."""
    words = re.findall(r"[\w.:]+", question.lower())
    kept = [
        w.strip(".:") for w in words if w.strip(".:") not in STOPWORDS and len(w.strip(".:")) > 1
    ]
    return " ".join(dict.fromkeys(kept)) or question


class OfflinePlanner:
    """The deterministic plan: one `main` sub-question, the question itself."""

    id = "offline"

    def plan(self, question: str) -> QueryPlan:
        """Plan for one question (no model involved)."""
        return QueryPlan(question, (SubQuestion("main", question),), self.id)


PLAN_PROMPT = (
    "You plan searches for a question-answering assistant over a library of Bhagavad Gita texts "
    "and lectures. Split the user's question into 1 to 4 sub-questions that can each be searched "
    "on their own, each with a kind (main, definition, example, context or comparison) and at most "
    "two paraphrases. Reply with JSON only: "
    '{"subquestions": [{"kind": "main", "text": "...", "paraphrases": ["..."]}]}'
)
KINDS = ("main", "definition", "example", "context", "comparison")


MAX_SUBQUESTIONS = 4
MAX_PARAPHRASES = 2


def read_plan(text: str) -> tuple[tuple[SubQuestion, ...] | None, tuple[Dropped, ...], str]:
    """Typed sub-questions from a model reply, the parts dropped (each with why), and the status:
    "ok", or why no sub-question is usable (the sub-questions are then None). A sub-question
    or paraphrase that retrieval could not take (`check_query`, with the prompt as what it must
    not echo), a repeat, or one over the limits (4 sub-questions, 2 paraphrases each) is dropped;
    the rest of the reply is kept."""
    obj, why = first_json_object(text or "")
    subs = obj.get("subquestions") if obj else None
    if not isinstance(subs, list) or not subs:
        return None, (), why or "expected 'subquestions': a list of 1 to 4 items"
    out: list[SubQuestion] = []
    dropped: list[Dropped] = []
    seen: set[str] = set()
    for item in subs:
        sub, lost = _read_subquestion(item)
        dropped.extend(lost)
        if sub is None:
            continue
        if sub.text.casefold() in seen:
            dropped.append(Dropped.of(sub.text, "repeats an earlier sub-question"))
        elif len(out) >= MAX_SUBQUESTIONS:
            dropped.append(Dropped.of(sub.text, f"over the limit of {MAX_SUBQUESTIONS}"))
        else:
            seen.add(sub.text.casefold())
            out.append(sub)
    if not out:
        first = f" (first: {dropped[0]})" if dropped else ""
        return None, tuple(dropped), f"no usable sub-question{first}"
    return tuple(out), tuple(dropped), "ok"


def _read_subquestion(item: object) -> tuple[SubQuestion | None, list[Dropped]]:
    """One reply item as a sub-question with its usable paraphrases, and what was dropped."""
    if not isinstance(item, dict):
        return None, [Dropped.of(item, "a sub-question must be an object with a 'text'")]
    query, reason = check_query(item.get("text"), prompt=PLAN_PROMPT)
    if query is None:
        return None, [Dropped.of(item.get("text"), reason)]
    given = item.get("paraphrases")
    if given is not None and not isinstance(given, list):
        return _subquestion(item, query), [Dropped.of(given, "paraphrases must be a list")]
    paras, dropped = keep_queries(given or [], limit=MAX_PARAPHRASES, prompt=PLAN_PROMPT)
    return _subquestion(item, query, paras), list(dropped)


def _subquestion(item: dict[str, object], text: str, paras: tuple[str, ...] = ()) -> SubQuestion:
    """The sub-question of a reply item: its kind when known (else main), text, paraphrases."""
    kind = item.get("kind")
    return SubQuestion(kind if isinstance(kind, str) and kind in KINDS else "main", text, paras)


def parse_plan(text: str) -> tuple[tuple[SubQuestion, ...] | None, str]:
    """Typed sub-questions from a model reply, or None and why (for one repair round-trip);
    unusable parts are left out (`read_plan` says which)."""
    subs, _, status = read_plan(text)
    return subs, status


class LLMPlanner:
    """Sub-questions from a chat model (the `openai` SDK client of `citegate.models.llm`). The user's
    question is always searched too, first; a reply that cannot be parsed falls back to it alone,
    and the plan records why (`notes["status"]`) and what it dropped (`notes["dropped"]`).

    `client` is a chat client, or `make_client` a function making one when the first question
    is planned (the bundled model's server then starts only if a question is planned); `model`
    names it in the plan (default: the client's model)."""

    def __init__(
        self,
        client: object | None = None,
        max_tokens: int = 200,
        *,
        make_client: Callable[[], Any] | None = None,
        model: str = "",
    ) -> None:
        if (client is None) == (make_client is None):
            raise ValueError("LLMPlanner takes a client or make_client, not both or neither")
        self._client, self._make = client, make_client
        self.max_tokens = max_tokens
        self.id = f"llm:{model or getattr(client, 'model', 'unknown')}"

    @property
    def client(self) -> Any:
        """The chat client (made on first use when given as `make_client`)."""
        return self._client if self._make is None else self._make()

    def plan(self, question: str) -> QueryPlan:
        """Ask the model; keep the question itself as the first sub-question."""
        messages = [
            {"role": "system", "content": PLAN_PROMPT},
            {"role": "user", "content": question},
        ]
        res = self.client.structured(messages, parse_plan, max_tokens=self.max_tokens)
        _, dropped, _ = read_plan(res.text or "")
        main = SubQuestion("main", question)
        subs = [s for s in (res.value or ()) if s.text.casefold() != question.casefold()]
        over = [Dropped.of(s.text, f"over the limit of {MAX_SUBQUESTIONS}") for s in subs[3:]]
        notes = {"status": res.status}
        if dropped or over:
            notes["dropped"] = summary((*dropped, *over))
        return QueryPlan(question, (main, *subs)[:MAX_SUBQUESTIONS], self.id, notes)


def make_planner(
    name: str, model: str = "", clients: Callable[[str], ChatClient] | None = None
) -> Planner:
    """`offline` (the question itself), or `llm` on `model`: the planner role's model
    (`roles.role_model`: `planner_model`, else `llm`), never one the environment picks. Its
    client comes from `clients(model)` (`RoleClients.client_for`, shared with the answer
    roles, so the bundled model's one server serves them all) when the first question is
    planned; without `clients`, a remote id's client is made here (`models.llm.remote_client`:
    a missing key is refused in one line), and the bundled model, whose server someone must
    own, is refused."""
    if name == "offline":
        return OfflinePlanner()
    if name != "llm":
        raise ConfigError(f"unknown planner {name!r} (offline, llm)")
    if clients is not None:
        return LLMPlanner(make_client=lambda: clients(model), model=model)
    if not is_remote(model):
        raise ConfigError(
            f"planner 'llm' on {model or 'the bundled model'!r} needs the role clients that "
            "start it (Service.open passes them); or name a remote planner_model "
            "(openrouter/<model>, openai/<model>)"
        )
    return LLMPlanner(remote_client(model, "planner_model"), model=model)
