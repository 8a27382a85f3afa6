"""Notebook 01's query planner arm: the model plans each sampled answerable question, the plan
is searched through production's retrieval, and the gold verse is looked for among the final
notes, beside the offline plan (the question itself) on the same questions. The planner role's
bar (`PLANNER_BAR`) is judged on those rows and written as a verdict per model.

The pure part (`planner_rows` → `planner_table`, `planner_verdicts`) is unit-tested; `run_planner`
calls the models (every call cached on disk) and the database. A failed call is no plan: it is
left out of every rate, and the run fails when a model's failed share exceeds the spec's
`MAX_MODEL_ERROR_SHARE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import psycopg

from citegate.core.config import PipelineConfig
from citegate.core.errors import MODEL_ERROR, check_model_errors, is_model_error
from citegate.core.progress import bar
from citegate.core.types import QueryPlan
from citegate.core.verdicts import VERDICT_NOTEBOOKS, RoleVerdict
from citegate.corpus.questions import Question, QuestionSet, resolve_gold
from citegate.evaluation.bars import Criterion, judge, judge_rate, verdict
from citegate.evaluation.metrics import rate_ci_or_nan
from citegate.evaluation.sampling import salted_hash
from citegate.models.embed import Embedder, default_embedder
from citegate.models.llm import LLMError
from citegate.models.protocols import Reranker
from citegate.pipeline.plan import LLMPlanner
from citegate.pipeline.retrieve import retrieve
from citegate.research.models import model_client, resolve_models, role_model_id
from citegate.store.db import connect
from citegate.store.production import load_reranker

SAMPLE_SALT = "citegate-planner-v1"
NOTEBOOK = VERDICT_NOTEBOOKS["planner"]
# The planner role's bar. The model must plan (its reply parsed into sub-questions) nearly every
# question, and its plan must keep what the offline plan finds: of the questions whose gold verse
# the question alone finds, the plan must find it too (Wilson 95% low >= 0.8; with 40 questions
# and the offline plan finding ~30, one loss in 30 still passes, three do not). What it finds
# that the question alone misses is shown, not required: a planner that only keeps recall still
# costs a model call per question.
PLAN_RATE_MIN = 0.8
KEPT_MIN = 0.8
PLANNER_BAR = (
    Criterion("plan_rate", "questions the model planned (reply parsed)", PLAN_RATE_MIN, "wilson_low>="),
    Criterion("recall_kept", "gold verses the offline plan finds that the plan keeps", KEPT_MIN, "wilson_low>="),
    Criterion("recall_gained", "gold verses the plan finds that the offline plan misses", 0.0, "info", required=False),
)  # fmt: skip
COLUMNS = ["model", "question", "language", "status", "subquestions", "offline_hit", "plan_hit"]


@dataclass(frozen=True)
class FixedPlanner:
    """A plan already made, handed to retrieval (so each question is asked of the model once)."""

    plan_: QueryPlan
    id: str = "fixed"

    def plan(self, question: str) -> QueryPlan:
        """The plan made for `question`."""
        return self.plan_


def sample_questions(qset: QuestionSet, limit: int, split: str | None = None) -> list[Question]:
    """`limit` answerable questions of `qset` (0: all) within `split`, in a salted-hash order
    that does not depend on the file's order."""
    qs = [q for q in qset.questions if q.label == "answerable" and split in (None, "all", q.split)]
    qs.sort(key=lambda q: salted_hash(SAMPLE_SALT, q.id))
    return qs[:limit] if limit else qs


def planned(status: str) -> bool:
    """Whether a plan's status says the model's reply was read (parsed or repaired)."""
    return status in ("ok", "repaired")


def planner_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model: questions, failed calls, plan rate, recall of the offline plan and of the
    model's plan with 95% Wilson intervals, and the paired losses and gains."""
    out = []
    for model, g in rows.groupby("model", sort=True):
        ok = g[~g["status"].map(is_model_error)]
        kept = ok[ok["offline_hit"]]
        out.append(
            {
                "model": model,
                "questions": len(g),
                "model errors": len(g) - len(ok),
                "plan rate": rate_ci_or_nan(ok["status"].map(planned))[0],
                "offline recall": rate_ci_or_nan(ok["offline_hit"])[0],
                "plan recall": rate_ci_or_nan(ok["plan_hit"])[0],
                "plan recall lo": rate_ci_or_nan(ok["plan_hit"])[1],
                "plan recall hi": rate_ci_or_nan(ok["plan_hit"])[2],
                "losses": int((kept["plan_hit"] == False).sum()),  # noqa: E712
                "gains": int((ok["plan_hit"] & ~ok["offline_hit"]).sum()),
            }
        )
    return pd.DataFrame(out)


def planner_verdicts(rows: pd.DataFrame, run: str) -> list[RoleVerdict]:
    """One verdict on the planner role per model (`PLANNER_BAR`), failed calls left out;
    each on the id a config's `planner_model` runs the model as (`research.models.role_model_id`)."""
    plan_rate, kept, gained = PLANNER_BAR
    out = []
    for model, g in rows.groupby("model", sort=True):
        ok = g[~g["status"].map(is_model_error)]
        missed = ok[~ok["offline_hit"].astype(bool)]
        lines = [
            judge_rate(plan_rate, list(ok["status"].map(planned))),
            judge_rate(kept, list(ok[ok["offline_hit"].astype(bool)]["plan_hit"].astype(bool))),
            judge(gained, float(missed["plan_hit"].mean()) if len(missed) else float("nan"),
                  float("nan"), float("nan"), len(missed)),
        ]  # fmt: skip
        out.append(verdict("planner", role_model_id(str(model)), NOTEBOOK, run, lines))
    return out


def run_planner(
    qset: QuestionSet,
    corpus: str,
    cfg: PipelineConfig,
    models: Sequence[str],
    *,
    limit: int,
    split: str | None = None,
    max_tokens: int = 200,
    max_error_share: float = 0.05,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Plan `limit` sampled answerable questions of `qset` with each installed model and search
    each plan and the question alone in `corpus` under `cfg`. Returns (rows, models table: used or skipped
    with why); raises `ModelFailure` when a model's failed calls exceed `max_error_share`."""
    usable, skipped = resolve_models(models)
    info: list[dict[str, Any]] = [{"model": m, "used": False, "why": w} for m, w in skipped.items()]
    questions = sample_questions(qset, limit, split)
    emb = default_embedder()
    cfg = cfg.replace(embedder=emb.id, corpora=[corpus])
    rr = load_reranker(cfg)
    rows: list[dict[str, Any]] = []
    with connect() as conn:
        gold = resolve_gold(conn, QuestionSet(qset.name, qset.corpus, tuple(questions)), emb.id)
        offline = {q.id: _hit(retrieve(conn, q.text, cfg, emb, rr), gold[q.id]) for q in questions}
        search = _Search(conn, cfg, emb, rr, gold, offline)
        for name, path in usable.items():
            with model_client(name, path) as client:
                planner = LLMPlanner(client, max_tokens, model=role_model_id(name))
                for q in bar(questions, desc=f"plan {name}", unit="q", disable=not progress):
                    rows.append(_row(search, q, name, planner))
            info.append({"model": name, "used": True, "why": f"{client.model} ({client.kind})"})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    statuses = {m: list(g["status"]) for m, g in frame.groupby("model")}
    check_model_errors(statuses, max_error_share, "planner calls")
    return frame, pd.DataFrame(info)


@dataclass(frozen=True)
class _Search:
    """What every question's search shares: the connection, config, embedder, reranker, the
    gold fragments by question and whether the question alone found them."""

    conn: psycopg.Connection
    cfg: PipelineConfig
    emb: Embedder
    rr: Reranker
    gold: dict[str, list[int]]
    offline: dict[str, bool]


def _row(s: _Search, q: Question, name: str, planner: LLMPlanner) -> dict[str, Any]:
    """One question planned by one model and searched (no search when the call failed)."""
    base = {"model": name, "question": q.id, "language": q.language, "offline_hit": s.offline[q.id]}
    try:
        plan = planner.plan(q.text)
    except LLMError as exc:
        return {**base, "status": f"{MODEL_ERROR}: {exc}", "subquestions": 0, "plan_hit": False}
    result = retrieve(s.conn, q.text, s.cfg, s.emb, s.rr, FixedPlanner(plan))
    status = str(plan.notes.get("status", ""))
    return {**base, "status": status, "subquestions": len(plan.subquestions),
            "plan_hit": _hit(result, s.gold[q.id])}  # fmt: skip


def _hit(result: Any, gold: Sequence[int]) -> bool:
    """Whether any gold fragment is among the final notes."""
    return bool({n.fragment_id for n in result.notes} & set(gold))


__all__ = [
    "PLANNER_BAR",
    "FixedPlanner",
    "planner_table",
    "planner_verdicts",
    "run_planner",
    "sample_questions",
]
