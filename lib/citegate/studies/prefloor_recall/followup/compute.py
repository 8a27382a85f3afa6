"""The follow-up study's pure part: conversations from labeled questions, rewrite rows, the arms'
queries, hit scoring, and the recall, rejection and paired tables and metrics made from them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import MAX_MODEL_ERROR_SHARE, MODEL_ERROR
from citegate.core.errors import check_model_errors as check_statuses
from citegate.core.verdicts import VERDICT_NOTEBOOKS, RoleVerdict
from citegate.corpus.questions import Question
from citegate.corpus.sources.address import find_verse_refs, verse_label
from citegate.evaluation.bars import Criterion, judge, judge_rate, verdict
from citegate.evaluation.metrics import rate_ci_or_nan
from citegate.evaluation.sampling import salted_hash
from citegate.pipeline.rewrite import (
    RewriteResult,
    code_tokens,
    echoes_prompt,
    quoted_strings,
    resolve_verse_followup,
)
from citegate.research.models import role_model_id

ARMS = ("raw", "concat", "rule", "rewrite")
NOTEBOOK = VERDICT_NOTEBOOKS["rewrite"]
SAMPLE_SALT = "citegate-followup-v1"

_DIGITS = str.maketrans("०१२३४५६७८९", "0123456789")
# "Chapter 2, Verse 66" / "Глава 6, стих 5" / "अध्याय १, श्लोक २" (digits normalized first).
_CHAPTER_VERSE = re.compile(
    r"\b(?:chapter|глав[аеыу]?)\s*(\d{1,2})\s*[,:;]?\s*(?:verse|стих[аеу]?)\s*(\d{1,2})\b"
    r"|अध्याय\s*(\d{1,2})\s*[,:;]?\s*श्लोक\s*(\d{1,2})",
    re.IGNORECASE,
)
# A verse word with a number after it ("as mentioned in Verse 9"): a partial address.
_VERSE_NUMBER = re.compile(r"(?:\bverses?|\bстих\w*|श्लोक)\s*\d", re.IGNORECASE)
# The elliptical back-reference a follow-up must carry (no number may follow: see above).
ELLIPTICAL = re.compile(
    r"\b(?:the|this|that)\s+(?:verse|text|passage|shloka|sloka)\b"
    r"|\bстих\w*|\bэтом\s+тексте\b"
    r"|श्लोक",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------- conversations


@dataclass(frozen=True)
class Conversation:
    """Two user turns about one verse: `first` names it, `followup` refers back to it."""

    first: Question
    followup: Question

    @property
    def id(self) -> str:
        """A stable id from both question ids."""
        return f"{self.first.id}>{self.followup.id}"

    @property
    def language(self) -> str:
        """The language of both turns."""
        return self.followup.language

    @property
    def history(self) -> list[dict[str, str]]:
        """What the rewriter sees as history: the first user turn only (no assistant answer)."""
        return [{"role": "user", "content": self.first.text}]

    def concat(self) -> str:
        """The naive baseline query: turn 1 and turn 2 joined by a space."""
        return f"{self.first.text} {self.followup.text}"


def named_verses(text: str) -> list[tuple[int, int]]:
    """Verse addresses a text names: `find_verse_refs` forms (BG 2.13, 2:13) plus "Chapter C,
    Verse V" in English, Russian and Hindi (Devanagari digits too), in order, unique."""
    norm = text.translate(_DIGITS)
    out = list(find_verse_refs(norm))
    for m in _CHAPTER_VERSE.finditer(norm):
        groups = [g for g in m.groups() if g is not None]
        ref = (int(groups[0]), int(groups[1]))
        if ref not in out:
            out.append(ref)
    return out


def names_a_verse(text: str) -> bool:
    """True when a text names any verse, even partially ("in Verse 9")."""
    return bool(named_verses(text) or _VERSE_NUMBER.search(text.translate(_DIGITS)))


def gold_ref(q: Question) -> tuple[int, int] | None:
    """The (chapter, verse) of a question's single gold verse, or None (no or several golds)."""
    refs = [r for g in q.gold for r in find_verse_refs(g)]
    return refs[0] if len(refs) == 1 else None


def is_first_turn(q: Question) -> bool:
    """Turn-1 rule: flagged `mentions_address` AND the text names the question's own gold verse."""
    ref = gold_ref(q)
    return q.mentions_address and ref is not None and ref in named_verses(q.text)


def is_followup(q: Question) -> bool:
    """Turn-2 rule: names no verse at all (not even "Verse 9") but refers back elliptically
    ("the verse", "this verse", "that text", "в этом стихе", "इस श्लोक"). The data's
    `mentions_address` flag is set by the bare word "verse", so the rule reads the text instead."""
    return gold_ref(q) is not None and not names_a_verse(q.text) and bool(ELLIPTICAL.search(q.text))


def _order(seed: int, key: str) -> str:
    return salted_hash(SAMPLE_SALT, seed, key)


def candidate_conversations(questions: Sequence[Question], seed: int = 0) -> list[Conversation]:
    """At most one conversation per (verse group, language): among the group's answerable
    questions, the first turn-1 and the first follow-up in a seeded hash order (deterministic, and
    stable when unrelated questions are added). Sorted by conversation id."""
    pools: dict[tuple[str, str], list[Question]] = {}
    for q in sorted(questions, key=lambda q: q.id):
        if q.label == "answerable" and q.group:
            pools.setdefault((q.group, q.language), []).append(q)
    out = []
    for qs in pools.values():
        ranked = sorted(qs, key=lambda q: _order(seed, q.id))
        first = next((q for q in ranked if is_first_turn(q)), None)
        follow = next((q for q in ranked if is_followup(q)), None)
        if first is not None and follow is not None:
            out.append(Conversation(first, follow))
    return sorted(out, key=lambda c: c.id)


def sample_conversations(
    conversations: Sequence[Conversation], languages: Sequence[str], limit: int, seed: int = 0
) -> list[Conversation]:
    """Up to `limit` conversations per language (0 = all), in a seeded hash order of their ids."""
    out: list[Conversation] = []
    for lang in languages:
        pool = sorted(
            (c for c in conversations if c.language == lang), key=lambda c: _order(seed, c.id)
        )
        out += pool[:limit] if limit else pool
    return out


def yield_table(
    questions: Sequence[Question],
    conversations: Sequence[Conversation],
    sampled: Sequence[Conversation],
    languages: Sequence[str],
) -> pd.DataFrame:
    """Per language: answerable questions, turn-1 and follow-up candidates, the conversations
    the data yields (one per verse) and how many were sampled."""
    ans = [q for q in questions if q.label == "answerable"]
    rows = []
    for lang in languages:
        qs = [q for q in ans if q.language == lang]
        rows.append(
            {
                "language": lang,
                "answerable questions": len(qs),
                "turn-1 candidates": sum(is_first_turn(q) for q in qs),
                "follow-up candidates": sum(is_followup(q) for q in qs),
                "conversations available": sum(c.language == lang for c in conversations),
                "conversations sampled": sum(c.language == lang for c in sampled),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- rewriting


def identifiers(text: str) -> list[str]:
    """What a rewrite must keep of a follow-up: code tokens, verse addresses, quoted strings."""
    refs = [verse_label(c, v) for c, v in find_verse_refs(text)]
    return code_tokens(text) + refs + quoted_strings(text)


def identifiers_kept(original: str, rewritten: str | None) -> bool | None:
    """Whether a model's text keeps every identifier of the original (None: no identifier to keep
    or no model text). Verse addresses compare as (chapter, verse) pairs, the rest verbatim."""
    if rewritten is None or not identifiers(original):
        return None
    kept_refs = set(find_verse_refs(rewritten))
    if any(r not in kept_refs for r in find_verse_refs(original)):
        return False
    return all(t in rewritten for t in code_tokens(original) + quoted_strings(original))


REWRITE_COLUMNS = (
    "model",
    "conversation",
    "language",
    "group",
    "first_turn",
    "followup",
    "rewritten",
    "accepted",
    "reason",
    "rule",
    "query_used",
    "identifiers_kept",
    "echoes_prompt",
)


def rewrite_row(conv: Conversation, model: str, res: RewriteResult) -> dict[str, Any]:
    """One rewrite: the conversation, what the model wrote, the verdict and the query used."""
    return {
        "model": model,
        "conversation": conv.id,
        "language": conv.language,
        "group": conv.followup.group,
        "first_turn": conv.first.text,
        "followup": conv.followup.text,
        "rewritten": res.rewritten,
        "accepted": res.accepted,
        "reason": res.reason,
        "rule": res.rule,
        "query_used": res.query_used,
        "identifiers_kept": identifiers_kept(conv.followup.text, res.rewritten),
        "echoes_prompt": echoes_prompt(res.rewritten),
    }


def answered(rewrites: pd.DataFrame) -> pd.DataFrame:
    """The rewrites the model actually wrote: rows whose call failed (`llm_error`) removed."""
    return rewrites[rewrites["rule"] != MODEL_ERROR] if len(rewrites) else rewrites


def check_model_errors(
    rewrites: pd.DataFrame, max_share: float = MAX_MODEL_ERROR_SHARE
) -> dict[str, int]:
    """Failed rewrite calls per model; `ModelFailure` when a model's failed share exceeds
    `max_share` (an outage must not be scored as rewrites that fell back to the raw query)."""
    statuses: dict[str, list[str]] = {}
    for model, reason in zip(rewrites["model"], rewrites["reason"], strict=True):
        statuses.setdefault(str(model), []).append(str(reason))
    return check_statuses(statuses, max_share, "rewrite calls")


# --------------------------------------------------------------------------- searching


def arm_queries(conversations: Sequence[Conversation], rewrites: pd.DataFrame) -> pd.DataFrame:
    """One row per (conversation, arm, model): the text searched for the follow-up. `raw`,
    `concat` and `rule` have model ""; `rule` is what the live turn searches before any model
    (`pipeline.rewrite.resolve_verse_followup`: the verse the follow-up points at written as
    its address, else the follow-up as written); `rewrite` has one row per model (its
    query_used), none where the model call failed."""
    rows = []
    for conv in conversations:
        base = {"conversation": conv.id, "language": conv.language, "group": conv.followup.group}
        rows.append({**base, "arm": "raw", "model": "", "query": conv.followup.text})
        rows.append({**base, "arm": "concat", "model": "", "query": conv.concat()})
        rows.append({**base, "arm": "rule", "model": "", "query": rule_query(conv)})
    for r in answered(rewrites).to_dict("records"):
        rows.append(
            {
                "conversation": r["conversation"],
                "language": r["language"],
                "group": r["group"],
                "arm": "rewrite",
                "model": r["model"],
                "query": r["query_used"],
                "accepted": r["accepted"],
            }
        )
    return pd.DataFrame(rows)


def rule_query(conv: Conversation) -> str:
    """The follow-up as the live turn's rule makes it standalone from the first turn, or as
    written when the rule finds no verse to point at."""
    history = [{"role": "user", "content": conv.first.text}]
    return resolve_verse_followup(conv.followup.text, history) or conv.followup.text


def score_hits(
    queries: pd.DataFrame, notes: dict[str, Sequence[int]], gold: dict[str, Sequence[int]]
) -> pd.DataFrame:
    """Add `hit` (any gold fragment of the conversation among the final notes of its query) and
    `names_verse` (the searched text names the conversation's verse) to the queries frame.
    `notes` maps query text -> note fragment ids; `gold` maps conversation id -> gold ids."""
    hits = [
        bool(set(gold[c]) & set(notes[q]))
        for c, q in zip(queries["conversation"], queries["query"], strict=True)
    ]
    return queries.assign(hit=hits, names_verse=[names_group(q, g) for q, g in _pairs(queries)])


def _pairs(queries: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(queries["query"], queries["group"], strict=True))


def names_group(text: str, group: str) -> bool:
    """Whether a searched text names the verse of a group label such as "BG 2.13"."""
    refs = find_verse_refs(group)
    return bool(refs) and refs[0] in named_verses(text)


@dataclass
class FollowupStudy:
    """Everything the section shows: yields, conversations, rewrites, models, scored searches."""

    yields: pd.DataFrame
    conversations: list[Conversation]
    rewrites: pd.DataFrame
    models: pd.DataFrame
    results: pd.DataFrame


def _share(values: Any) -> float:
    vals = [bool(v) for v in values if v is not None and not pd.isna(v)]
    return float(np.mean(vals)) if vals else np.nan


def recall_table(results: pd.DataFrame, rewrites: pd.DataFrame, n_boot: int = 1000) -> pd.DataFrame:
    """Per arm, model and language: conversations, recall of the follow-up's gold verse with a
    95% CI, the share of searched queries that name the verse, and for `rewrite` the acceptance
    rate and the share of model texts keeping the follow-up's identifiers (over follow-ups that
    have any), both over the rewrites written, and the failed calls ("model errors")."""
    rows = []
    order = {a: i for i, a in enumerate(ARMS)}
    for (arm, model, lang), g in results.groupby(["arm", "model", "language"], sort=False):
        rate, lo, hi = rate_ci_or_nan(g["hit"])
        every = rewrites[(rewrites["model"] == model) & (rewrites["language"] == lang)]
        rw = answered(every)
        is_rw = arm == "rewrite"
        rows.append(
            {
                "arm": arm,
                "model": model,
                "language": lang,
                "conversations": len(g),
                "recall": rate,
                "recall lo": lo,
                "recall hi": hi,
                "query names the verse": _share(g["names_verse"]),
                "accepted": _share(rw["accepted"]) if is_rw else np.nan,
                "identifiers kept": _share(rw["identifiers_kept"]) if is_rw else np.nan,
                "with identifiers": int(rw["identifiers_kept"].notna().sum()) if is_rw else 0,
                "model errors": len(every) - len(rw) if is_rw else 0,
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    key = frame["arm"].map(order)
    return frame.assign(_k=key).sort_values(["_k", "model", "language"]).drop(columns="_k")


def rejection_table(rewrites: pd.DataFrame) -> pd.DataFrame:
    """Per model: how many written rewrites each validator rule rejected (share of the rewrites
    written), with one example reason. Failed calls are no rejections."""
    rewrites = answered(rewrites)
    rejected = rewrites[~rewrites["accepted"].astype(bool)] if len(rewrites) else rewrites
    if rejected.empty:
        return pd.DataFrame(columns=["model", "rule", "rejections", "share of rewrites", "example"])
    totals = rewrites.groupby("model").size()
    rows = []
    for (model, rule), g in rejected.groupby(["model", "rule"]):
        rows.append(
            {
                "model": model,
                "rule": rule,
                "rejections": len(g),
                "share of rewrites": len(g) / totals[model],
                "example": str(g["reason"].iloc[0])[:160],
            }
        )
    return pd.DataFrame(rows).sort_values(["model", "rejections"], ascending=[True, False])


def examples(rewrites: pd.DataFrame, results: pd.DataFrame, per_model: int = 4) -> pd.DataFrame:
    """A few rewrites per model (accepted and rejected mixed, in conversation order): the
    follow-up, the model's text, the verdict, and whether raw and rewrite found the verse."""
    hit = results.set_index(["conversation", "arm", "model"])["hit"]
    rows = []
    for model, g in answered(rewrites).groupby("model"):
        picked = pd.concat(
            [g[g["accepted"]].head(per_model // 2 + per_model % 2), g[~g["accepted"]]]
        ).head(per_model)
        for r in picked.to_dict("records"):
            rows.append(
                {
                    "model": model,
                    "language": r["language"],
                    "follow-up": r["followup"],
                    "rewrite": (r["rewritten"] or "")[:200],
                    "accepted": r["accepted"],
                    "reason": r["reason"][:120],
                    "raw hit": bool(hit.get((r["conversation"], "raw", ""), False)),
                    "rewrite hit": bool(hit.get((r["conversation"], "rewrite", model), False)),
                }
            )
    return pd.DataFrame(rows)


def _pooled(results: pd.DataFrame) -> pd.DataFrame:
    return results.groupby(["arm", "model"], as_index=False).agg(
        n=("hit", "size"), recall=("hit", "mean")
    )


def headline(results: pd.DataFrame, rewrites: pd.DataFrame) -> dict[str, float]:
    """MLflow metrics over all languages: `followup_recall_raw`, `followup_recall_concat`,
    `followup_recall_rewrite.<model>`, `rewrite_accept_rate.<model>` (over rewrites written),
    `rewrite_model_error_share.<model>`, plus the conversation count and per-language recall
    (`followup_recall_<arm>[.<model>].<lang>`)."""
    out: dict[str, float] = {}
    if results.empty:
        return out
    out["followup_conversations"] = float(results["conversation"].nunique())
    for r in _pooled(results).to_dict("records"):
        out[_metric_name(r["arm"], r["model"])] = float(r["recall"])
    for (arm, model, lang), g in results.groupby(["arm", "model", "language"]):
        out[f"{_metric_name(arm, model)}.{lang}"] = float(g["hit"].mean())
    for model, g in rewrites.groupby("model"):
        out[f"rewrite_model_error_share.{model}"] = float((g["rule"] == MODEL_ERROR).mean())
        written = answered(g)
        if len(written):
            out[f"rewrite_accept_rate.{model}"] = float(written["accepted"].astype(bool).mean())
    return {k: v for k, v in out.items() if np.isfinite(v)}


def model_notes(models: pd.DataFrame) -> dict[str, str]:
    """Run facts for tags: the rewrite models used and the ones skipped (with why)."""
    if models.empty:
        return {"rewrite_models": "", "rewrite_skipped_models": ""}
    used = models[models["used"].astype(bool)]
    skipped = models[~models["used"].astype(bool)]
    return {
        "rewrite_models": ",".join(
            f"{m} ({w})" for m, w in zip(used["model"], used["why"], strict=True)
        ),
        "rewrite_skipped_models": "; ".join(
            f"{m}: {w}" for m, w in zip(skipped["model"], skipped["why"], strict=True)
        ),
    }


def paired_vs_raw(results: pd.DataFrame) -> pd.DataFrame:
    """Per non-raw arm, model and language, on the same conversations: how many the arm finds
    that raw misses (gains) and how many raw finds that the arm misses (losses)."""
    raw = results[results["arm"] == "raw"].set_index("conversation")["hit"]
    rows = []
    for (arm, model, lang), g in results[results["arm"] != "raw"].groupby(
        ["arm", "model", "language"], sort=False
    ):
        base = raw.reindex(g["conversation"]).to_numpy(dtype=bool)
        hit = g["hit"].to_numpy(dtype=bool)
        rows.append(
            {
                "arm": arm,
                "model": model,
                "language": lang,
                "gains": int((hit & ~base).sum()),
                "losses": int((~hit & base).sum()),
            }
        )
    return pd.DataFrame(rows, columns=["arm", "model", "language", "gains", "losses"])


# --------------------------------------------------------------------------- the rewrite role's bar

# The follow-up rewrite's bar. The validator must accept most of what the model writes (a model
# whose rewrites it rejects leaves every follow-up as written, at the price of a model call), and
# the follow-ups searched as the model rewrote them must find their verse more often than
# searched as written, with confidence: the Wilson 95% lower bound of the rewrite arm's recall at
# least the raw arm's recall on the same conversations.
ACCEPT_RATE_MIN = 0.8
REWRITE_BAR = (
    Criterion("accept_rate", "rewrites the validator accepts", ACCEPT_RATE_MIN, "wilson_low>="),
    Criterion("recall_over_raw", "recall of the follow-up's verse, rewritten", 0.0, "wilson_low>="),
    Criterion("model_errors", "calls that failed", 0.0, "info", required=False),
)


def rewrite_verdicts(results: pd.DataFrame, rewrites: pd.DataFrame, run: str) -> list[RoleVerdict]:
    """One verdict on the rewrite role per model that wrote rewrites (`REWRITE_BAR`), measured
    over every language, on the id a config's `rewrite_model` runs the model as
    (`research.models.role_model_id`). `run` is the run folder's
    name."""
    accept, recall, errors = REWRITE_BAR
    raw = results[results["arm"] == "raw"]["hit"]
    raw_recall = float(raw.mean()) if len(raw) else float("nan")
    floor = Criterion(
        recall.name, f"{recall.label} (raw: {raw_recall:.3f})", raw_recall, recall.rule
    )
    out = []
    for model, g in rewrites.groupby("model", sort=True):
        written = answered(g)
        hits = results[(results["arm"] == "rewrite") & (results["model"] == model)]["hit"]
        failed = len(g) - len(written)
        lines = [
            judge_rate(accept, list(written["accepted"].astype(bool))),
            judge_rate(floor, list(hits.astype(bool))) if np.isfinite(raw_recall) else
            judge(floor, float("nan"), float("nan"), float("nan"), 0),
            judge(errors, failed / len(g), float("nan"), float("nan"), len(g)),
        ]  # fmt: skip
        out.append(verdict("rewrite", role_model_id(str(model)), NOTEBOOK, run, lines))
    return out


def _metric_name(arm: str, model: str) -> str:
    return f"followup_recall_{arm}" + (f".{model}" if model else "")
