"""Notebook 01's numbers: recall by pre-floor, the loss waterfall, gold cosines, arms.

Pure functions of a loaded `Study` (traces replayed in memory: no database, no model, no file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.config import PipelineConfig
from citegate.evaluation.clustered import cluster_rate_ci
from citegate.research.study import Study, StudySet

# The order in which the pipeline can lose a gold fragment (best = kept).
LOSS_ORDER = (
    "not retrieved",
    "ANN miss (exact search finds it)",
    "round 2 not run",
    "pre-floor",
    "cap 60",
    "rerank top-k",
    "dedup",
    "kept",
)
_STAGE_TO_LOSS = {
    "ann_missed": LOSS_ORDER[1],
    "unused:later_round": LOSS_ORDER[2],
    "dropped:pre_floor": LOSS_ORDER[3],
    "dropped:cap": LOSS_ORDER[4],
    "dropped:top_k": LOSS_ORDER[5],
    "dropped:dedup": LOSS_ORDER[6],
    "kept:top_k": LOSS_ORDER[7],
    "kept:reserve": LOSS_ORDER[7],
    "kept:grouped": LOSS_ORDER[7],
}


def answerable(s: StudySet) -> list[Any]:
    """The sampled questions that have gold fragments in the searched build."""
    return [q for q in s.questions if s.gold.get(q.id)]


def recall_by_floor(study: Study, floors: Sequence[float]) -> pd.DataFrame:
    """Per set, language and floor: recall@final notes (any gold fragment kept) and the share of
    questions whose every retrieved gold fragment died at the floor."""
    rows = []
    for name, s in study.sets.items():
        qs = answerable(s)
        for floor in floors:
            results = s.replay_all(study.config.replace(pre_floor=float(floor)))
            for q in qs:
                rows.append(
                    {
                        "set": name,
                        "language": q.language,
                        "floor": float(floor),
                        "gold_kind": _gold_kind(s, q.id),
                        **_fate(results[q.id].stage, s.gold[q.id]),
                    }
                )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    keys = ["set", "language", "gold_kind", "floor"]
    return frame.groupby(keys, as_index=False).agg(
        questions=("kept", "size"), recall=("kept", "mean"), lost_at_floor=("lost_at_floor", "mean")
    )


def _fate(stage: dict[int, str], gold: Sequence[int]) -> dict[str, bool]:
    fates = [stage.get(g, "") for g in gold]
    kept = any(f.startswith("kept") for f in fates)
    at_floor = not kept and any(f == "dropped:pre_floor" for f in fates)
    return {"kept": kept, "lost_at_floor": at_floor}


def _gold_kind(s: StudySet, qid: str) -> str:
    trace = s.traces[qid]
    kinds = {c.kind for c in trace.candidates if c.fragment_id in set(s.gold[qid])}
    return "verse" if "verse" in kinds else (sorted(kinds)[0] if kinds else "unretrieved")


def overall_recall(frame: pd.DataFrame) -> pd.DataFrame:
    """Recall per set and floor over all languages (question-weighted)."""
    f = frame.assign(
        hits=frame["recall"] * frame["questions"],
        floor_lost=frame["lost_at_floor"] * frame["questions"],
    )
    g = f.groupby(["set", "floor"], as_index=False)[["questions", "hits", "floor_lost"]].sum()
    return g.assign(
        recall=g["hits"] / g["questions"], lost_at_floor=g["floor_lost"] / g["questions"]
    )[["set", "floor", "questions", "recall", "lost_at_floor"]]


def _outcome(stage: dict[int, str], gold: Sequence[int]) -> str:
    """The furthest stage of `LOSS_ORDER` any of the question's gold fragments reached."""
    losses = [_STAGE_TO_LOSS.get(stage.get(g, ""), LOSS_ORDER[0]) for g in gold]
    return max(losses, key=LOSS_ORDER.index)


def waterfall(study: Study, cfg: PipelineConfig) -> pd.DataFrame:
    """For each answerable question, the furthest stage its best gold fragment reached."""
    rows = []
    for name, s in study.sets.items():
        results = s.replay_all(cfg)
        for q in answerable(s):
            rows.append(
                {
                    "set": name,
                    "language": q.language,
                    "outcome": _outcome(results[q.id].stage, s.gold[q.id]),
                }
            )
    frame = pd.DataFrame(rows)
    table = (
        frame.groupby(["set", "outcome"])
        .size()
        .unstack(fill_value=0)
        .reindex(columns=list(LOSS_ORDER), fill_value=0)
    )
    return table


def killed_between(study: Study, low: float, high: float) -> pd.DataFrame:
    """Gold verses kept with pre-floor `low` that pre-floor `high` drops, with their cosines."""
    rows = []
    for name, s in study.sets.items():
        res_low = s.replay_all(study.config.replace(pre_floor=low))
        res_high = s.replay_all(study.config.replace(pre_floor=high))
        for q in answerable(s):
            by_id = {c.fragment_id: c for c in s.traces[q.id].candidates}
            for g in s.gold[q.id]:
                a, b = res_low[q.id].stage.get(g, ""), res_high[q.id].stage.get(g, "")
                if a.startswith("kept") and b == "dropped:pre_floor":
                    c = by_id[g]
                    rows.append(
                        {
                            "set": name,
                            "question": q.text[:90],
                            "address": c.addr_label,
                            "kind": c.kind,
                            "cosine": round(c.score, 4),
                        }
                    )
    return pd.DataFrame(rows, columns=["set", "question", "address", "kind", "cosine"])


def gold_cosines(study: Study) -> pd.DataFrame:
    """Cosine of every retrieved gold fragment and of every other candidate, for the histogram."""
    rows = []
    for name, s in study.sets.items():
        for q in answerable(s):
            gold = set(s.gold[q.id])
            rows += [
                {"set": name, "cosine": c.score, "gold": c.fragment_id in gold}
                for c in s.traces[q.id].candidates
                if not c.ann_missed
            ]
    return pd.DataFrame(rows)


def headline(
    overall: pd.DataFrame,
    waterfall_table: pd.DataFrame,
    killed: pd.DataFrame,
    cosines: pd.DataFrame,
    low: float = 0.18,
    high: float = 0.45,
) -> dict[str, float]:
    """The run's metrics: recall at both floors, loss at the floor, verses 0.45 kills."""
    out: dict[str, float] = {}
    for name, g in overall.groupby("set"):
        key = name.replace("-", "_")
        at = g.set_index("floor")
        out[f"recall_{key}_floor_{low:g}"] = float(at.loc[low, "recall"])
        out[f"recall_{key}_floor_{high:g}"] = float(at.loc[high, "recall"])
        out[f"lost_at_floor_{key}_floor_{high:g}"] = float(at.loc[high, "lost_at_floor"])
        shares = waterfall_table.loc[name] / waterfall_table.loc[name].sum()
        out[f"kept_share_{key}"] = float(shares["kept"])
        out[f"ann_miss_share_{key}"] = float(shares[LOSS_ORDER[1]])
    out["gold_killed_by_high_floor"] = float(len(killed))
    gold = cosines.loc[cosines["gold"], "cosine"]
    if len(gold):
        out["gold_cosine_p05"] = float(np.percentile(gold, 5))
        out["gold_cosine_min"] = float(gold.min())
    return out


def at_floors(frame: pd.DataFrame, floors: Sequence[float]) -> pd.DataFrame:
    """Recall by set, language and gold kind at the given floors, side by side."""
    sub = frame[frame["floor"].isin([float(f) for f in floors])]
    table = sub.pivot_table(
        index=["set", "language", "gold_kind"], columns="floor", values="recall"
    ).round(3)
    counts = sub[sub["floor"] == float(floors[0])].set_index(["set", "language", "gold_kind"])
    table.columns = [f"recall @ {c:g}" for c in table.columns]
    return table.assign(questions=counts["questions"]).reset_index()


@dataclass(frozen=True)
class Arm:
    """One pipeline variant of notebook 01: its config and the traces it is measured on (the
    run's own `Study`, or a re-collection of the same questions when its collection settings
    differ: `recollected`)."""

    name: str
    config: PipelineConfig
    study: Study
    recollected: bool


NAMES_VERSE, NAMES_NO_VERSE = "names a verse", "names no verse"


def naming(q: Any) -> str:
    """Whether a question names the verse it asks about ("BG 2.47", "Chapter 2, Verse 47"): a
    question that names none has to be found by its theme."""
    return NAMES_VERSE if q.mentions_address else NAMES_NO_VERSE


def _arm_rows(
    arm: Arm, n_boot: int, by: str = "language", key: Callable[[Any], str] | None = None
) -> list[dict[str, Any]]:
    """One row per set and value of the question attribute `by` ("all" first) of one arm; `key`,
    when given, computes that value from the question instead of reading the attribute."""
    value_of = key or (lambda q: getattr(q, by))
    rows = []
    for name, s in arm.study.sets.items():
        results = s.replay_all(arm.config)
        timings = [sum(s.traces[q.id].timings.values()) for q in s.questions]
        for value in ["all", *sorted({value_of(q) for q in s.questions})]:
            qs = [q for q in s.questions if value in ("all", value_of(q))]
            rows.append(
                {
                    "set": name,
                    "arm": arm.name,
                    by: value,
                    **_arm_cells(s, results, qs, n_boot),
                    "collection p50 ms": 1000 * float(np.median(timings)) if timings else np.nan,
                    "traces": "re-collected" if arm.recollected else "the run's",
                }
            )
    return rows


def _arm_cells(s: StudySet, results: dict[str, Any], qs: list[Any], n_boot: int) -> dict:
    """Recall (with its 95% interval over verse groups), cost and answer share of some questions."""
    gold_qs = [q for q in qs if s.gold.get(q.id)]
    hits = np.array([_fate(results[q.id].stage, s.gold[q.id])["kept"] for q in gold_qs], float)
    lo, hi = cluster_rate_ci(hits, np.array([q.group or q.id for q in gold_qs]), n_boot)
    notes = [results[q.id].notes for q in qs]
    return {
        "questions": len(gold_qs),
        "recall": float(hits.mean()) if len(hits) else float("nan"),
        "recall lo": lo,
        "recall hi": hi,
        "notes per question": float(np.mean([len(n) for n in notes])) if notes else np.nan,
        "verse notes per question": float(np.mean([_verses(n) for n in notes]))
        if notes
        else np.nan,
        "context chars per question": float(np.mean([sum(c.text_len for c in n) for n in notes]))
        if notes
        else np.nan,
        "answered": float(np.mean([results[q.id].decision == "answer" for q in qs])),
    }


def _verses(notes: Sequence[Any]) -> int:
    return sum(c.kind == "verse" for c in notes)


def arm_table(arms: Sequence[Arm], n_boot: int = 1000) -> pd.DataFrame:
    """Per arm, set and language: recall of the final notes (any gold fragment kept, itself or
    through its verse's note) with a 95% interval resampling verse groups, the notes, verse
    notes and characters of context per question, the share the arm's gate answers, and the
    median collection time of its traces (plan, embed, lanes, fetch, rerank; measured when the
    traces were collected, the cut is replayed)."""
    return pd.DataFrame([row for arm in arms for row in _arm_rows(arm, n_boot)])


def arm_split_table(arms: Sequence[Arm], n_boot: int = 1000) -> pd.DataFrame:
    """`arm_table` by split (tune, test) instead of language: an arm whose model was fitted on
    tune-split questions (the LTR reranker) shows its held-out recall in the test rows."""
    return pd.DataFrame([row for arm in arms for row in _arm_rows(arm, n_boot, "split")])


def arm_naming_table(arms: Sequence[Arm], n_boot: int = 1000) -> pd.DataFrame:
    """`arm_table` by whether the question names its verse (`naming`) instead of language: a
    thematic question, which names none, is found by retrieval alone."""
    rows = [row for arm in arms for row in _arm_rows(arm, n_boot, "naming", naming)]
    return pd.DataFrame(rows)


def naming_metrics(table: pd.DataFrame) -> dict[str, float]:
    """`recall_<set>_<arm>.names_verse` and `.names_no_verse` from `arm_naming_table`; a group
    without a question that has gold (a small sample) has no recall and gives no metric."""
    out = {}
    for row in table.to_dict("records"):
        if row["naming"] != "all" and row["questions"] > 0:
            key = f"recall_{row['set']}_{row['arm']}".replace("-", "_")
            out[f"{key}.{row['naming'].replace(' a ', ' ').replace(' ', '_')}"] = row["recall"]
    return out


def arm_waterfall(arms: Sequence[Arm]) -> pd.DataFrame:
    """Per arm, set, language and gold kind: how many questions end at each stage of
    `LOSS_ORDER` (the furthest stage a gold fragment of the question reached)."""
    frames = []
    for arm in arms:
        for name, s in arm.study.sets.items():
            results = s.replay_all(arm.config)
            rows = [
                {
                    "arm": arm.name,
                    "set": name,
                    "language": q.language,
                    "gold_kind": _gold_kind(s, q.id),
                    "outcome": _outcome(results[q.id].stage, s.gold[q.id]),
                }
                for q in answerable(s)
            ]
            frames.append(pd.DataFrame(rows))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if frame.empty:
        return frame
    keys = ["arm", "set", "language", "gold_kind"]
    table = frame.groupby([*keys, "outcome"]).size().unstack(fill_value=0)
    return table.reindex(columns=list(LOSS_ORDER), fill_value=0).reset_index()


def arm_metrics(table: pd.DataFrame) -> dict[str, float]:
    """`recall_<set>_<arm>` (every language) and `recall_<set>_<arm>.<language>` of each arm."""
    out = {}
    for row in table.to_dict("records"):
        key = f"recall_{row['set']}_{row['arm']}".replace("-", "_")
        out[key if row["language"] == "all" else f"{key}.{row['language']}"] = row["recall"]
    return out
