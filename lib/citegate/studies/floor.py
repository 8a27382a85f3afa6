"""Notebook 01: recall before and after the cosine pre-floor, and where gold fragments are lost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.config import PipelineConfig
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


def waterfall(study: Study, cfg: PipelineConfig) -> pd.DataFrame:
    """For each answerable question, the furthest stage its best gold fragment reached."""
    rows = []
    for name, s in study.sets.items():
        results = s.replay_all(cfg)
        for q in answerable(s):
            stage = results[q.id].stage
            losses = [_STAGE_TO_LOSS.get(stage.get(g, ""), LOSS_ORDER[0]) for g in s.gold[q.id]]
            best = max(losses, key=LOSS_ORDER.index)
            rows.append({"set": name, "language": q.language, "outcome": best})
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


def plot_recall(frame: pd.DataFrame, marks: Sequence[float] = (0.18, 0.45)) -> Any:
    """Recall and lost-at-floor against the floor, one line per set; design floors marked."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    for name, g in frame.groupby("set"):
        axes[0].plot(g["floor"], g["recall"], marker="o", ms=3, label=name)
        axes[1].plot(g["floor"], g["lost_at_floor"], marker="o", ms=3, label=name)
    for ax, title in zip(axes, ("recall of final notes", "gold lost at the floor"), strict=True):
        for m in marks:
            ax.axvline(m, color="grey", ls="--", lw=1)
            ax.text(m, 1.02, f"{m:g}", ha="center", fontsize=8, transform=ax.get_xaxis_transform())
        ax.set_xlabel("cosine pre-floor")
        ax.set_title(title, pad=14)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_waterfall(table: pd.DataFrame) -> Any:
    """Stacked bars: share of answerable questions by the stage that lost (or kept) their gold."""
    import matplotlib.pyplot as plt

    shares = table.div(table.sum(axis=1), axis=0)
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.6 * len(shares)))
    left = np.zeros(len(shares))
    colors = plt.cm.tab10(np.linspace(0, 1, len(LOSS_ORDER)))
    for col, color in zip(LOSS_ORDER, colors, strict=True):
        ax.barh(shares.index, shares[col], left=left, color=color, label=col)
        left += shares[col].to_numpy()
    ax.set_xlabel("share of answerable questions")
    ax.legend(ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    ax.set_xlim(0, 1)
    fig.tight_layout()
    return fig


def plot_cosines(frame: pd.DataFrame, marks: Sequence[float] = (0.18, 0.45)) -> Any:
    """Histogram of gold vs other candidate cosines: where the floors sit on this embedder."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 3.5))
    bins = np.linspace(0, 1, 101)
    for gold, label in ((False, "other candidates"), (True, "gold fragments")):
        vals = frame.loc[frame["gold"] == gold, "cosine"]
        ax.hist(vals, bins=bins, alpha=0.6, density=True, label=f"{label} (n={len(vals)})")
    for m in marks:
        ax.axvline(m, color="grey", ls="--", lw=1)
    ax.set_xlabel("cosine to the question")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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


def conclusion(
    metrics: dict[str, float], overall: pd.DataFrame, low: float = 0.18, high: float = 0.45
) -> str:
    """A Markdown conclusion whose every number comes from this run, and whose every claim
    follows from those numbers."""
    lines = ["## Conclusion", ""]
    for name, g in overall.groupby("set"):
        at = g.set_index("floor")
        drop_floor = _first_floor_losing(g, 0.01)
        lines.append(
            f"- **{name}**: recall of the final notes is {at.loc[low, 'recall']:.3f} at the "
            f"{low:g} floor and {at.loc[high, 'recall']:.3f} at {high:g}"
            f" (n={int(at.loc[low, 'questions'])} answerable questions). "
            + (
                f"Recall first falls by more than 1 point at floor {drop_floor:g}."
                if drop_floor is not None
                else "No floor in the grid costs more than 1 point."
            )
        )
    killed = int(metrics.get("gold_killed_by_high_floor", 0))
    lines.append(f"- Gold fragments that {high:g} drops and {low:g} keeps: **{killed}**.")
    if "gold_cosine_p05" in metrics:
        lines.append(
            f"- Gold cosines with this embedder: 5th percentile {metrics['gold_cosine_p05']:.3f}, "
            f"minimum {metrics['gold_cosine_min']:.3f}. "
            + _gold_floor_sentence(metrics["gold_cosine_min"], killed, overall, low, high)
        )
    return "\n".join(lines)


def _gold_floor_sentence(
    gold_min: float, killed: int, overall: pd.DataFrame, low: float, high: float
) -> str:
    """Where the floors sit relative to the gold cosines, and whether the higher one costs recall."""
    if gold_min >= high:
        return (
            "Both floors sit at or below every retrieved gold fragment, so on this embedder "
            "neither floor removes a relevant fragment."
        )
    where = (
        f"Some gold fragments sit below even the {low:g} floor"
        if gold_min < low
        else f"Some gold fragments sit between {low:g} and {high:g}"
    )
    cost = _recall_cost(overall, low, high)
    if cost > 0:
        return f"{where}; the {high:g} floor costs up to {cost:.3f} recall here."
    if killed:
        return (
            f"{where}; the {high:g} floor drops {killed} of them but costs no recall here "
            "(another gold fragment of each question survives)."
        )
    return f"{where}; the {high:g} floor costs no recall here."


def _recall_cost(overall: pd.DataFrame, low: float, high: float) -> float:
    """The largest recall drop from the low to the high floor over the sets (0 when none)."""
    drops = [
        float(g.set_index("floor").loc[low, "recall"] - g.set_index("floor").loc[high, "recall"])
        for _, g in overall.groupby("set")
    ]
    return max([0.0, *drops])


def _first_floor_losing(g: pd.DataFrame, points: float) -> float | None:
    g = g.sort_values("floor")
    base = float(g["recall"].iloc[0])
    worse = g[g["recall"] < base - points]
    return float(worse["floor"].iloc[0]) if len(worse) else None


def at_floors(frame: pd.DataFrame, floors: Sequence[float]) -> pd.DataFrame:
    """Recall by set, language and gold kind at the given floors, side by side."""
    sub = frame[frame["floor"].isin([float(f) for f in floors])]
    table = sub.pivot_table(
        index=["set", "language", "gold_kind"], columns="floor", values="recall"
    ).round(3)
    counts = sub[sub["floor"] == float(floors[0])].set_index(["set", "language", "gold_kind"])
    table.columns = [f"recall @ {c:g}" for c in table.columns]
    return table.assign(questions=counts["questions"]).reset_index()


def arm_table(study: Study, arms: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Per set and arm (name -> config overrides): recall of the final notes, notes and characters
    of context per question, and the share of questions the arm's gate answers."""
    rows = []
    for name, s in study.sets.items():
        for arm, overrides in arms.items():
            results = s.replay_all(study.config.replace(**overrides))
            qs = answerable(s)
            kept = [_fate(results[q.id].stage, s.gold[q.id])["kept"] for q in qs]
            notes = [results[q.id].notes for q in s.questions]
            rows.append(
                {
                    "set": name,
                    "arm": arm,
                    "questions": len(qs),
                    "recall": float(np.mean(kept)) if kept else float("nan"),
                    "notes per question": float(np.mean([len(n) for n in notes])),
                    "context chars per question": float(
                        np.mean([sum(c.text_len for c in n) for n in notes])
                    ),
                    "answered": float(
                        np.mean([results[q.id].decision == "answer" for q in s.questions])
                    ),
                }
            )
    return pd.DataFrame(rows)
