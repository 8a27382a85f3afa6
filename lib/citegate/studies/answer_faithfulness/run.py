"""Running notebook 06's answer part: answerable TEST questions through the cached production
retrieval, then each composer's answer through `turn.grounded_answer` (the code a turn runs), so
the claims measured are the claims `citegate ask --answer` would show.

Composers are named `extractive` or `generative:<model>` (`research.models`: a bundled GGUF, or
`remote:<id>` with keys); a model that cannot run here is skipped with its reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from citegate.core.config import PipelineConfig
from citegate.core.errors import MODEL_ERROR, ConfigError
from citegate.core.progress import bar
from citegate.corpus.questions import load_set
from citegate.models.embed import Embedder
from citegate.pipeline.extractive import MAX_NOTES
from citegate.pipeline.fallback import fixed_strings_language
from citegate.pipeline.llm_calls import CallOptions
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.turn import Grounded, grounded_answer
from citegate.research.models import model_client, resolve_models
from citegate.research.study import sample
from citegate.studies.answer_faithfulness.answers import AnswerRow, claim_records
from citegate.studies.answer_faithfulness.judge import PairJudgement, judge_pair
from citegate.studies.fallback_disclaimer.citation.compute import GroundedItem
from citegate.studies.fallback_disclaimer.compute import FallbackQuestions, Item

EXTRACTIVE = "extractive"


def answerable_test(set_corpora: dict[str, str], per_language: dict[str, int]) -> FallbackQuestions:
    """Up to `per_language[lang]` answerable questions of the TEST split in each language of
    each set (`set -> corpus build`), deterministically sampled: thresholds were tuned on the
    other split."""
    sets, items = {}, []
    for name, corpus in set_corpora.items():
        qset = load_set(name)
        sets[name] = qset
        for lang, limit in per_language.items():
            pool = [
                q
                for q in qset.questions
                if q.language == lang and q.label == "answerable" and q.split == "test"
            ]
            items += [Item(name, corpus, q) for q in sample(pool, limit)]
    return FallbackQuestions(sets, dict(set_corpora), items)


def first_per_language(items: Sequence[GroundedItem], n: int) -> list[GroundedItem]:
    """The first `n` items of each language, in order (a smaller sample of the same questions)."""
    seen: dict[str, int] = {}
    out = []
    for item in items:
        lang = item.question.language
        if seen.get(lang, 0) < n:
            out.append(item)
            seen[lang] = seen.get(lang, 0) + 1
    return out


def composer_kind(name: str) -> tuple[str, str]:
    """("extractive", "") or ("generative", model) from a composer's name; a ConfigError for
    anything else."""
    if name == EXTRACTIVE:
        return EXTRACTIVE, ""
    kind, _, model = name.partition(":")
    if kind != "generative" or not model:
        raise ConfigError(f"composer {name!r}: expected 'extractive' or 'generative:<model>'")
    return kind, model


@contextmanager
def composer_roles(name: str, cfg: PipelineConfig) -> Iterator[RoleClients | None]:
    """The role clients a composer needs (none for the extractive one; None when its model
    cannot run here)."""
    kind, model = composer_kind(name)
    if kind == EXTRACTIVE:
        with RoleClients(cfg) as roles:
            yield roles
        return
    usable, _ = resolve_models([model])
    if model not in usable:
        yield None
        return
    with model_client(model, usable[model]) as client:
        yield RoleClients.single(client, cfg)


def outcome(g: Grounded) -> str:
    """answered | abstained | no_answer | llm_error (a failed call: no model behaviour)."""
    if g.failed:
        return MODEL_ERROR
    if g.abstained:
        return "abstained"
    return "no_answer" if g.why else "answered"


def answer_one(
    item: GroundedItem,
    name: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    roles: RoleClients,
    options: CallOptions,
) -> AnswerRow:
    """One composer's checked answer to one question (outcome "gate" when the gate bailed)."""
    q = item.question
    base = {"composer": name, "qid": q.id, "question": q.text, "language": q.language}
    base["group"] = q.group or q.id
    if item.decision == "insufficient":
        return AnswerRow(**base, outcome="gate", status="gate: bail out", abstained="",
                         composed="", shown="", claims=(), seconds=0.0)  # fmt: skip
    kind, _ = composer_kind(name)
    start = time.perf_counter()
    g, _ = grounded_answer(
        q.text, fixed_strings_language(q.language), item.notes, cfg.replace(composer=kind), embedder,
        roles, options,
    )  # fmt: skip
    return AnswerRow(
        **base,
        outcome=outcome(g),
        status=g.composed.status,
        abstained=g.abstained,
        composed=g.composed.text,
        shown=g.text,
        claims=claim_records(g.check),
        seconds=time.perf_counter() - start,
    )


def answer_rows(
    items: Sequence[GroundedItem],
    composers: Sequence[str],
    cfg: PipelineConfig,
    embedder: Embedder,
    *,
    max_tokens: int = 160,
    progress: bool = False,
) -> tuple[list[AnswerRow], dict[str, str]]:
    """Every composer's answer to every item, and the composers skipped with their reason.
    Every model call is cached; the claim check runs at `cfg.support_threshold`."""
    options = CallOptions(max_tokens=max_tokens)
    rows: list[AnswerRow] = []
    skipped: dict[str, str] = {}
    for name in composers:
        with composer_roles(name, cfg) as roles:
            if roles is None:
                model = composer_kind(name)[1]
                skipped[name] = resolve_models([model])[1].get(model, "cannot run here")
                continue
            for item in bar(items, desc=name, unit="q", disable=not progress):
                rows.append(answer_one(item, name, cfg, embedder, roles, options))
    return rows, skipped


def judge_pairs(
    items: Sequence[GroundedItem],
    rows: Sequence[AnswerRow],
    judge: str,
    *,
    limit: int,
    max_tokens: int = 160,
    progress: bool = False,
) -> tuple[list[PairJudgement], str]:
    """The blind pairwise judge (`judge`, model `judge`) on the extractive answer
    against each generative composer's, over up to `limit` questions both answered (in the
    items' order), both orders each. Returns the judgements and "" or why the judge was
    skipped (its model cannot run here, or no question has two answers)."""
    usable, skipped = resolve_models([judge])
    if judge not in usable:
        return [], skipped.get(judge, "cannot run here")
    answered = {(r.composer, r.qid): r for r in rows if r.outcome == "answered"}
    rivals = sorted({r.composer for r in rows if r.composer != EXTRACTIVE})
    work = [
        (item, answered[(EXTRACTIVE, item.question.id)], answered[(rival, item.question.id)])
        for rival in rivals
        for item in items
        if (EXTRACTIVE, item.question.id) in answered and (rival, item.question.id) in answered
    ]
    if not work:
        return [], "no question was answered by the extractive and a generative composer"
    taken: dict[str, int] = {}
    chosen = []
    for w in work:
        if taken.get(w[2].composer, 0) < limit:
            chosen.append(w)
            taken[w[2].composer] = taken.get(w[2].composer, 0) + 1
    options = CallOptions(max_tokens=max_tokens)
    out: list[PairJudgement] = []
    with model_client(judge, usable[judge]) as client:
        for item, x, y in bar(chosen, desc=f"judge {judge}", unit="pair", disable=not progress):
            notes = [c.text for c in item.notes[:MAX_NOTES]]
            out.append(
                judge_pair(client, item.question.text, notes, x.composed, y.composed,
                           names=(x.composer, y.composer), options=options)
            )  # fmt: skip
    return out, ""


__all__ = [
    "EXTRACTIVE",
    "answer_one",
    "answer_rows",
    "answerable_test",
    "composer_kind",
    "first_per_language",
    "judge_pairs",
    "outcome",
]
