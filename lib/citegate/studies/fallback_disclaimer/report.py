"""Notebook 04's conclusion: every sentence that states a fact is chosen by the value it reports."""

from __future__ import annotations

import numpy as np
import pandas as pd

from citegate.studies.fallback_disclaimer.compute import NOT_MEASURED, bar_failures, bar_verdicts


def conclusion(
    adherence: pd.DataFrame,
    scope: pd.DataFrame,
    probes: pd.DataFrame,
    cost: pd.DataFrame,
    painted: float,
    errors: pd.DataFrame | None = None,
    bar: pd.DataFrame | None = None,
) -> str:
    """Markdown conclusion from this run's numbers: every sentence that states a fact is chosen
    by the measured value it reports; with `bar` (`bar_table`), each model's bar verdict."""
    n = int(adherence["n"].sum())
    pooled = _pooled_adherence(adherence)
    lines = ["## Conclusion", "", _painted_line(painted, n), *_error_lines(errors)]
    for (model, variant), r in pooled.iterrows():
        lines.append(
            f"- **{model}**, prompt `{variant}`: the model's own output carried the disclaimer "
            f"verbatim in {r['exact']:.0%} and in a normalized form in {r['norm']:.0%} of "
            f"{int(r['n'])} answers."
        )
    asked = adherence[adherence["variant"] != "not_asked"]
    for r in asked.sort_values("model exact").head(1).to_dict("records"):
        lines.append(
            f"- Worst cell where the disclaimer was asked for: {r['model']} / `{r['variant']}` / "
            f"{r['language']}: exact "
            f"{r['model exact']:.0%} (95% CI {r['model exact lo']:.0%}–{r['model exact hi']:.0%})."
        )
    for model, g in scope.groupby("model"):
        w = g["n"]
        lines.append(
            f"- {model}: replies parsed {np.average(g['parsed'], weights=w):.0%}; in-scope "
            f"verdict right {np.average(g['in-scope accuracy'], weights=w):.0%}; answer in the "
            f"user's language {np.average(g['language match'], weights=w):.0%}."
        )
    lines += _probe_lines(probes) + _cost_lines(cost) + _extreme_cell_lines(adherence)
    lines.append(_guarantee_line(pooled, painted))
    if bar is not None:
        lines += ["", "### The fallback bar", "", *bar_lines(bar)]
    return "\n".join(lines)


def _criterion_text(r: dict[str, object]) -> str:
    """One failed criterion: its label and what was measured against the threshold."""
    return f"{r['label']}: {r['reason']}"


def bar_lines(bar: pd.DataFrame) -> list[str]:
    """Per model, whether it passed the fallback bar and, when not, each failed criterion with its
    measured value and threshold (an unmeasured one says so); computed from the bar table."""
    if bar.empty:
        return ["- No model was judged against the fallback bar."]
    failures = bar_failures(bar)
    lines = []
    for model, passed in bar_verdicts(bar).items():
        if passed:
            lines.append(
                f"- **{model} passed the fallback bar**: every required criterion held (each "
                "rate on its Wilson 95% lower bound); it may hold the fallback role."
            )
            continue
        if all(r["reason"] == NOT_MEASURED for r in failures[model]):
            lines.append(
                f"- **{model} failed the fallback bar**: nothing was measured (no scored answer "
                "on production's prompt variant, no judged citation). The fallback role does not "
                "run on it."
            )
            continue
        failed = "; ".join(_criterion_text(r) for r in failures[model])
        lines.append(
            f"- **{model} failed the fallback bar**: {failed}. The fallback role does not run "
            "on it: its offline default answers instead."
        )
    return lines


def _pooled_adherence(adherence: pd.DataFrame) -> pd.DataFrame:
    """Exact and normalized rates per model and variant, pooled over languages (weights n)."""
    if adherence.empty:
        return pd.DataFrame(columns=["exact", "norm", "n"])
    return adherence.groupby(["model", "variant"]).apply(
        lambda g: pd.Series(
            {
                "exact": np.average(g["model exact"], weights=g["n"]),
                "norm": np.average(g["model normalized"], weights=g["n"]),
                "n": g["n"].sum(),
            }
        ),
        include_groups=False,
    )


def _painted_line(painted: float, n: int) -> str:
    """The painted-disclaimer result, worded by whether it held on every answer."""
    if not np.isfinite(painted) or n == 0:
        return "- No answer was scored: nothing to say about the painted disclaimer."
    if painted == 1.0:
        return f"- The server-painted disclaimer was present in **100%** of the {n} answers."
    return (
        f"- The server-painted disclaimer was present in only **{painted:.0%}** of the {n} "
        "answers: the server's guarantee did not hold."
    )


def _error_lines(errors: pd.DataFrame | None) -> list[str]:
    """Failed calls per model (left out of every rate), or that none failed."""
    if errors is None or errors.empty:
        return []
    if not errors["failed"].any():
        return [f"- No fallback call failed ({int(errors['calls'].sum())} calls)."]
    return [
        f"- {r['model']}: {r['failed']} of {r['calls']} fallback calls failed "
        f"({str(r['first error'])[:160]}); they are left out of every rate here."
        for r in errors.to_dict("records")
        if r["failed"]
    ]


def _probe_lines(probes: pd.DataFrame) -> list[str]:
    """Declines, probes and admitted hits per model and variant."""
    lines = []
    for r in probes.to_dict("records"):
        adm = next(v for k, v in r.items() if k.startswith("admitted at"))
        if not r["fallback answers"]:
            lines.append(f"- {r['model']} / `{r['variant']}`: every answer declined.")
            continue
        share = (
            "no probe hits to admit"
            if np.isnan(adm)
            else f"{adm:.0%} of their hits pass the admission cosine"
        )
        lines.append(
            f"- {r['model']} / `{r['variant']}`: {r['declined']} declined; "
            f"{r['probes per answer']:.1f} probes per fallback answer; {share}."
        )
    return lines


def _cost_lines(cost: pd.DataFrame) -> list[str]:
    """Tokens and latency per call, per model."""
    lines = []
    for r in cost.to_dict("records"):
        lat = (
            "every call served from the cache (no latency measured)"
            if np.isnan(r["latency s/call"])
            else f"{r['latency s/call']:.1f} s per uncached call"
        )
        lines.append(
            f"- {r['model']}: {r['prompt tokens/call']:.0f} prompt + "
            f"{r['completion tokens/call']:.0f} completion tokens per call; {lat}."
        )
    return lines


def _extreme_cell_lines(adherence: pd.DataFrame) -> list[str]:
    """For the smallest cell at exactly 0% or 100% exact, what its interval still allows."""
    rate = adherence["model exact"] if len(adherence) else pd.Series(dtype=float)
    extreme = adherence[(rate == 0.0) | (rate == 1.0)]
    if extreme.empty:
        return []
    r = extreme.sort_values("n").iloc[0]
    return [
        f"- A rate of {r['model exact']:.0%} is not a certainty: {r['model']} / `{r['variant']}` / "
        f"{r['language']} has {int(r['n'])} answers, and its 95% interval runs "
        f"{r['model exact lo']:.0%}–{r['model exact hi']:.0%}."
    ]


def _guarantee_line(pooled: pd.DataFrame, painted: float) -> str:
    """What this run shows about painting versus prompting, from the measured rates."""
    dropped = int(round(float(((1.0 - pooled["exact"]) * pooled["n"]).sum()))) if len(pooled) else 0
    total = int(pooled["n"].sum()) if len(pooled) else 0
    if not np.isfinite(painted) or total == 0:
        return "- No answer was scored, so this run shows nothing about the guarantee."
    if painted < 1.0:
        return (
            "- Some answers were shown without the painted disclaimer: the server-side guarantee "
            "failed in this run and must be fixed before the prompt variants mean anything."
        )
    if dropped:
        return (
            f"- The models' own text lacked the verbatim disclaimer in {dropped} of {total} "
            "answers, yet every answer shown carried it: painting it on the server is what makes "
            "the guarantee, not the prompt."
        )
    return (
        f"- Every model kept the disclaimer verbatim in all {total} answers and the painted one "
        "was always present too: this run cannot tell the prompt's share of the guarantee from "
        "the server's."
    )
