"""Notebook 01's conclusion: every number from the run, every claim following from them."""

from __future__ import annotations

import pandas as pd


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


def arm_conclusion(table: pd.DataFrame, baseline: str, recommended: str) -> str:
    """Markdown lines comparing the recommended arm with the baseline arm on every set: recall
    with its interval, each language, notes and context per question; every number from `table`
    (`arm_table`)."""
    lines = ["### Arms: what the recommendation changes", ""]
    for name, g in table.groupby("set", sort=False):
        rows = g.set_index(["arm", "language"])
        if (baseline, "all") not in rows.index or (recommended, "all") not in rows.index:
            continue
        b, r = rows.loc[(baseline, "all")], rows.loc[(recommended, "all")]
        langs = g[(g["arm"] == recommended) & (g["language"] != "all")]
        per_language = ", ".join(
            f"{x['language']} {x['recall']:.3f} (n={int(x['questions'])})"
            for x in langs.to_dict("records")
        )
        lowest = langs.sort_values("recall").head(1).to_dict("records")
        lines.append(
            f"- **{name}**: `{recommended}` keeps a gold fragment for {r['recall']:.3f} of "
            f"{int(r['questions'])} questions (95% interval {r['recall lo']:.3f}–"
            f"{r['recall hi']:.3f}) against {b['recall']:.3f} for `{baseline}` "
            f"({r['recall'] - b['recall']:+.3f}); by language {per_language}"
            + (f"; lowest {lowest[0]['language']}." if lowest else ".")
            + f" Notes per question {r['notes per question']:.2f} vs {b['notes per question']:.2f},"
            f" context characters {r['context chars per question']:.0f} vs "
            f"{b['context chars per question']:.0f}."
        )
    return "\n".join(lines)
