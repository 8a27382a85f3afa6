"""Notebook 05's goals (the experiment spec's `GOALS`, parsed and checked), the goals table and the
conclusion: every claim follows from a value (the MLflow metrics: `compute.headline`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import ConfigError
from citegate.research.tables import first_row, rows_where
from citegate.studies.gate_signals.compute import (
    ADDRESS_STRATA,
    ALL,
    LEVEL_GROUP,
    LEVEL_QUESTION,
    LEVEL_UNIT,
    NEGATIVES,
    PRODUCTION_GATE,
    RAW,
    SUBSET_AUDITED,
    SUBSET_RAW,
    best_signals,
    min_clean_n,
)

ASSUMPTION = (
    "The per-unit certificate treats each question group (a gita verse, an XQuAD article) as "
    "one exchangeable unit, answered falsely when any of its negative questions is answered; "
    "questions inside a group may depend on each other in any way."
)
GOAL_KINDS = ("answer_rate", "audited_auroc", "language_gap")
GOAL_KEYS = ("name", "corpus", "alpha", "target", "kind", "labels")


@dataclass(frozen=True)
class Goal:
    """One goal of the experiment spec (`GOALS`): a metric of one corpus compared with a target."""

    name: str
    corpus: str
    alpha: float
    target: float
    kind: str  # "answer_rate" | "audited_auroc" | "language_gap"
    labels: str = RAW  # the label view the value is measured on


def goals_from(params: Sequence[Mapping[str, Any]]) -> list[Goal]:
    """The goals of notebook 05's `GOALS` parameter (the experiment spec's list of plain dicts with
    `name`, `corpus`, `alpha`, `target`, `kind` and optionally `labels`, raw by default), checked:
    an unknown or missing key, a kind or label view outside the known ones, or a non-numeric α or
    target is a ConfigError naming the goal and the key."""
    return [_goal(i, p) for i, p in enumerate(params)]


def _goal(i: int, p: Mapping[str, Any]) -> Goal:
    """One `GOALS` entry as a Goal (see `goals_from`)."""
    name = p.get("name", "unnamed") if isinstance(p, Mapping) else p
    where = f"GOALS[{i}] ({name!r})"
    if not isinstance(p, Mapping):
        raise ConfigError(f"{where}: a goal is a mapping of {', '.join(GOAL_KEYS)}")
    unknown = sorted(set(p) - set(GOAL_KEYS))
    missing = [k for k in GOAL_KEYS[:-1] if k not in p]
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; a goal has {list(GOAL_KEYS)}")
    if missing:
        raise ConfigError(f"{where}: missing key {missing[0]!r}; a goal has {list(GOAL_KEYS)}")
    for key, known in (("kind", GOAL_KINDS), ("labels", (RAW, SUBSET_RAW, SUBSET_AUDITED))):
        if p.get(key, RAW) not in known:
            raise ConfigError(f"{where}: {key} {p[key]!r} is not one of {list(known)}")
    for key in ("alpha", "target"):
        if isinstance(p[key], bool) or not isinstance(p[key], int | float):
            raise ConfigError(f"{where}: {key} must be a number, got {p[key]!r}")
    return Goal(
        str(p["name"]),
        str(p["corpus"]),
        float(p["alpha"]),
        float(p["target"]),
        str(p["kind"]),
        str(p.get("labels", RAW)),
    )


def goal_alphas(alpha: float, goals: Sequence[Goal]) -> list[float]:
    """Every α the goals need certified, with the run's own."""
    return sorted({alpha, *(g.alpha for g in goals)})


def _answer_row(
    realised: pd.DataFrame, corpus: str, gate: str, alpha: float, lang: str, labels: str = RAW
) -> dict[str, Any] | None:
    """The realised row of one gate point vs out_of_corpus (answer rate is the same per kind)."""
    if realised.empty:
        return None
    return first_row(
        realised,
        corpus=corpus,
        gate=gate,
        alpha=alpha,
        language=lang,
        labels=labels,
        negatives=NEGATIVES[0],
    )


def goals_table(
    realised: pd.DataFrame,
    learned: pd.DataFrame,
    goals: Sequence[Goal],
    gates: Sequence[str] = (PRODUCTION_GATE, "max_cosine"),
) -> pd.DataFrame:
    """One row per goal (`goals_from`) and gate: the measured value, the target and whether it is
    met."""
    rows = []
    for goal in goals:
        for gate in gates:
            value, detail = _goal_value(goal, gate, realised, learned)
            met = _met(goal, value, realised, gate)
            rows.append(
                {
                    "goal": goal.name,
                    "corpus": goal.corpus,
                    "gate": gate,
                    "α": goal.alpha,
                    "value": value,
                    "target": goal.target,
                    "met": met,
                    "detail": detail,
                }
            )
    return pd.DataFrame(rows)


def _goal_value(
    goal: Goal, gate: str, realised: pd.DataFrame, learned: pd.DataFrame
) -> tuple[float, str]:
    """The goal's measured value for one gate and how it was measured."""
    if goal.kind == "audited_auroc":
        if learned.empty:
            return math.nan, "not measured"
        r = first_row(
            learned,
            corpus=goal.corpus,
            labels=SUBSET_AUDITED,
            negatives=NEGATIVES[0],
            language=ALL,
            signal=gate,
        )
        if r is None:
            return math.nan, "no audited labels in this run"
        return float(
            r["AUROC"]
        ), f"95% CI {r['CI low']:.3f}–{r['CI high']:.3f}, n={r['answerable']}+{r['negative']}"
    if goal.kind == "answer_rate":
        r = _answer_row(realised, goal.corpus, gate, goal.alpha, ALL, goal.labels)
        if r is None:
            return math.nan, f"not measured on {goal.labels} labels in this run"
        return float(r["answer rate"]), (
            f"{goal.labels} labels, n={r['answerable']}, 95% CI {r['AR low']:.3f}–{r['AR high']:.3f};"
            " bounds " + _bounds_text(realised, goal.corpus, gate, goal.alpha)
        )
    en = _answer_row(realised, goal.corpus, gate, goal.alpha, "en")
    ru = _answer_row(realised, goal.corpus, gate, goal.alpha, "ru")
    if en is None or ru is None:
        return math.nan, "no Russian or English answerable questions"
    gap = float(ru["answer rate"]) - float(en["answer rate"])
    return abs(gap), (
        f"ru {ru['answer rate']:.3f} (n={ru['answerable']}) vs en {en['answer rate']:.3f} "
        f"(n={en['answerable']})"
    )


def _bounds_text(realised: pd.DataFrame, corpus: str, gate: str, alpha: float) -> str:
    """Each kind's certified bound of the gate at α, as text (raw labels)."""
    parts = []
    for neg in NEGATIVES:
        r = first_row(
            realised, corpus=corpus, gate=gate, alpha=alpha, language=ALL, labels=RAW, negatives=neg
        )
        if r is not None:
            parts.append(f"{neg} {r['bound']:.3f}")
    return ", ".join(parts) or "none"


def _bounds_ok(realised: pd.DataFrame, corpus: str, gate: str, alpha: float) -> bool:
    """Whether every kind's certified bound of the gate at α is within α (raw labels)."""
    rows = rows_where(realised, corpus=corpus, gate=gate, alpha=alpha, labels=RAW, language=ALL)
    return bool(len(rows)) and bool((rows["bound"] <= rows["alpha"] + 1e-12).all())


def _met(goal: Goal, value: float, realised: pd.DataFrame, gate: str) -> str:
    """The verdict ("met", "not met" or "not measured"): the value against the target and bounds."""
    if not math.isfinite(value):
        return "not measured"
    if goal.kind == "language_gap":
        ok = value <= goal.target + 1e-12
    elif goal.kind == "answer_rate":
        ok = value >= goal.target - 1e-12 and _bounds_ok(realised, goal.corpus, gate, goal.alpha)
    else:
        ok = value >= goal.target - 1e-12
    return "met" if ok else "not met"


# ---------------------------------------------------------------- conclusion


def _ci(r: dict[str, Any]) -> str:
    """An AUROC with its 95% CI, as text."""
    return f"{r['AUROC']:.3f} [{r['CI low']:.3f}, {r['CI high']:.3f}]"


def _versus_chance(r: dict[str, Any]) -> str:
    """Where an AUROC's 95% CI lies against chance (0.5)."""
    if r["CI low"] > 0.5:
        return "above chance"
    if r["CI high"] < 0.5:
        return "below chance (inverted)"
    return "not distinguishable from chance"


def conclusion(
    aurocs: pd.DataFrame,
    learned: pd.DataFrame,
    transfer: pd.DataFrame,
    realised: pd.DataFrame,
    goals: pd.DataFrame,
    alpha: float,
    delta: float,
    sensitivity: pd.DataFrame | None = None,
) -> str:
    """Markdown conclusion from this run's numbers (`sensitivity`: `compute.group_sensitivity`,
    reported as what the certificate assumes, never as the certificate)."""
    lines = ["## Conclusion", ""]
    lines += _signal_lines(aurocs)
    lines += _learned_lines(learned)
    lines += _transfer_lines(transfer)
    lines += _certified_lines(realised, alpha, delta)
    if sensitivity is not None:
        lines += sensitivity_lines(sensitivity, alpha)
    met = int((goals["met"] == "met").sum()) if len(goals) else 0
    prod = goals[goals["gate"] == PRODUCTION_GATE] if len(goals) else goals
    lines.append(
        f"- Goals: the learned gate meets {int((prod['met'] == 'met').sum())} of {len(prod)} "
        f"goal rows ({met} of {len(goals)} counting max cosine alone); see the goals table."
    )
    return "\n".join(lines)


def _signal_lines(aurocs: pd.DataFrame) -> list[str]:
    """Which single signal wins per corpus × kind × language, with its CI, next to max cosine."""
    if aurocs.empty:
        return ["- No signal could be scored (too few questions per class)."]
    lines = []
    best = best_signals(aurocs)
    mc = aurocs[(aurocs["labels"] == RAW) & (aurocs["signal"] == "max_cosine")]
    for r in best.to_dict("records"):
        base = first_row(mc, corpus=r["corpus"], negatives=r["negatives"], language=r["language"])
        text = (
            f"- {r['corpus']}, vs {r['negatives']}, {r['language']} "
            f"(test, {r['answerable']} vs {r['negative']}): best single signal `{r['signal']}` "
            f"AUROC {_ci(r)}, {_versus_chance(r)}"
        )
        if base is not None and r["signal"] != "max_cosine":
            clear = "its CI lies above" if r["CI low"] > base["CI high"] else "its CI overlaps"
            text += f"; max cosine {_ci(base)} ({clear} max cosine's)"
        lines.append(text + _inverted(aurocs, r) + ".")
    return lines


def _inverted(aurocs: pd.DataFrame, best: dict[str, Any]) -> str:
    """A signal whose CI lies below 0.5 and whose reversed AUROC beats the best: named, since
    it carries evidence the other way round (e.g. a named address absent from the index)."""
    sub = aurocs[
        (aurocs["labels"] == RAW)
        & (aurocs["corpus"] == best["corpus"])
        & (aurocs["negatives"] == best["negatives"])
        & (aurocs["language"] == best["language"])
        & (aurocs["CI high"] < 0.5)
    ]
    if sub.empty:
        return ""
    r = sub.sort_values("AUROC", kind="stable").iloc[0].to_dict()
    if 1 - r["AUROC"] <= best["AUROC"]:
        return ""
    return (
        f"; `{r['signal']}` reversed does better: AUROC {r['AUROC']:.3f} "
        f"[{r['CI low']:.3f}, {r['CI high']:.3f}], i.e. 1 − AUROC = {1 - r['AUROC']:.3f} "
        "(a high value means the corpus is less likely to answer)"
    )


def _learned_lines(learned: pd.DataFrame) -> list[str]:
    """The learned gate against max cosine per corpus, label view and kind."""
    lines = []
    sub = learned[learned["language"] == ALL]
    for (corpus, view, neg), g in sub.groupby(["corpus", "labels", "negatives"], sort=False):
        lg = g[g["signal"] == PRODUCTION_GATE]
        mc = g[g["signal"] == "max_cosine"]
        if lg.empty or mc.empty:
            continue
        a, b = lg.iloc[0].to_dict(), mc.iloc[0].to_dict()
        if a["CI low"] > b["CI high"]:
            verdict = "better than max cosine (the intervals do not overlap)"
        elif a["CI high"] < b["CI low"]:
            verdict = "worse than max cosine (the intervals do not overlap)"
        else:
            verdict = "not distinguishable from max cosine (the intervals overlap)"
        lines.append(
            f"- Learned gate (logistic) on {corpus}, vs {neg}, {view} labels: AUROC {_ci(a)} "
            f"against max cosine {_ci(b)}: {verdict}."
        )
    return lines


def _transfer_lines(transfer: pd.DataFrame) -> list[str]:
    """Each gate tested on the other corpus, beside that corpus's own gate."""
    lines = []
    lg = transfer[transfer["model"] == "logistic"]
    for r in lg[lg["trained on"] != lg["tested on"]].to_dict("records"):
        home = first_row(
            lg,
            **{
                "trained on": r["tested on"],
                "tested on": r["tested on"],
                "negatives": r["negatives"],
            },
        )
        tail = f" (trained on {r['tested on']} itself: {_ci(home)})" if home else ""
        lines.append(
            f"- Transfer: the logistic gate trained on {r['trained on']} scores AUROC {_ci(r)} "
            f"on {r['tested on']} vs {r['negatives']}{tail}."
        )
    return lines


def _certified_lines(realised: pd.DataFrame, alpha: float, delta: float) -> list[str]:
    """Each corpus and gate certified at α: its answer rate and bounds, realised."""
    lines = []
    if realised.empty:
        return lines
    sub = realised[
        (realised["labels"] == RAW)
        & (realised["language"] == ALL)
        & np.isclose(realised["alpha"], alpha)
    ]
    for (corpus, gate), g in sub.groupby(["corpus", "gate"], sort=False):
        first = g.iloc[0]
        if not bool(first["feasible"]):
            bounds = ", ".join(f"{r['negatives']} {r['bound']:.3f}" for r in g.to_dict("records"))
            lines.append(
                f"- {corpus}, {gate}: no threshold is certified at α={alpha:g}, δ={delta:g} "
                f"(bounds {bounds}): it would answer nothing."
            )
            continue
        kinds = "; ".join(
            f"{r['negatives']}: bound {r['bound']:.3f} ({r['false answers cal']} of "
            f"{r['n_neg cal']} on tune), realised {r['false-answer rate']:.3f} "
            f"[{r['FA low']:.3f}, {r['FA high']:.3f}] on test"
            + (" (above the bound)" if r["false-answer rate"] > r["bound"] else "")
            for r in g.to_dict("records")
        )
        lines.append(
            f"- {corpus}, {gate}, certified at α={alpha:g}, δ={delta:g} (threshold "
            f"{first['threshold']:.4f}): answers {first['answer rate']:.1%} "
            f"[{first['AR low']:.1%}, {first['AR high']:.1%}] of answerable test questions; {kinds}."
        )
    return lines


def sensitivity_lines(sensitivity: pd.DataFrame, alpha: float) -> list[str]:
    """Per corpus and kind of the production gate at `alpha`: how many questions, groups and
    held-out units the certificate's negatives come from, and the bound with groups or units
    as the sample (a sensitivity check: the certificate treats questions as independent)."""
    sub = sensitivity[
        (sensitivity["gate"] == PRODUCTION_GATE) & np.isclose(sensitivity["alpha"], alpha)
    ]
    lines = []
    for (corpus, kind), g in sub.groupby(["corpus", "negatives"], sort=False):
        at = {r["level"]: r for r in g.to_dict("records")}
        q, grp, unit = at[LEVEL_QUESTION], at[LEVEL_GROUP], at[LEVEL_UNIT]
        if grp["n"] == q["n"]:
            continue  # one question per group: nothing to check
        lines.append(
            f"- Assumption of the certificate ({corpus}, vs {kind}): its {q['n']} calibration "
            f"negatives (bound {q['bound']:.3f}) come from {grp['n']} question groups and "
            f"{unit['n']} held-out units (chapters or articles), and the bound treats the "
            f"questions as exchangeable and independent. Sensitivity check, not the "
            f"certificate: counting each group once gives bound {_level(grp, alpha)}, each "
            f"held-out unit once {_level(unit, alpha)}; with no false answer at all, α = "
            f"{alpha:g} at δ = {q['delta (kind)']:g} needs ≥ {q['n needed']} independent units."
        )
    return lines


def _level(r: dict[str, Any], alpha: float) -> str:
    """A sensitivity level's bound, with how many of its n were answered, against α."""
    op = "≤" if r["bound ≤ α"] else ">"
    return f"{r['bound']:.3f} ({r['false answers']} of {r['n']} answered; {op} α = {alpha:g})"


def language_gap_lines(gap: pd.DataFrame, pushes: pd.DataFrame, language: str = "ru") -> list[str]:
    """The language gap of one certified gate, per address stratum, and the features that push
    `language`'s answerable questions down most against English (mean logit contribution)."""
    if gap.empty or language not in set(gap["language"]) or "en" not in set(gap["language"]):
        return []
    at = {(r["language"], r["questions"]): r for r in gap.to_dict("records")}
    head = gap.iloc[0]

    def cell(lang: str, stratum: str) -> str:
        """One language's answered / answerable count in one stratum."""
        r = at.get((lang, stratum))
        if r is None or not r["answerable"]:
            return f"{lang} none"
        return f"{lang} {r['answered']}/{r['answerable']} ({r['answer rate']:.3f})"

    strata = [f"{q}: {cell('en', q)} vs {cell(language, q)}" for q in ADDRESS_STRATA.values()]
    column = f"{language} − en"
    lines = [
        f"- Language gap ({head['corpus']}, {head['gate']}, α={head['alpha']:g}, answerable test "
        f"questions): {cell('en', 'all')} vs {cell(language, 'all')}; by question: "
        f"{'; '.join(strata)}."
    ]
    if column in pushes:
        worst = pushes.sort_values(column, kind="stable").head(3)
        named = ", ".join(f"`{r['feature']}` {r[column]:+.2f}" for r in worst.to_dict("records"))
        lines.append(
            f"- Features pushing {language} answerable questions down most against en (mean "
            f"logit contribution, {column}): {named}."
        )
    return lines


# ---------------------------------------------------------------- the certificate over units


def unit_lines(levels: pd.DataFrame, alpha: float, negative: str = NEGATIVES[0]) -> list[str]:
    """The assumption, then one computed sentence per corpus for the production gate at α: what
    each certificate allows, and how many independent units the per-unit one rests on."""
    if levels.empty:
        return []
    sel = levels[
        (levels["gate"] == PRODUCTION_GATE)
        & np.isclose(levels["alpha"], alpha)
        & (levels["negatives"] == negative)
    ]
    lines = [ASSUMPTION]
    for r in sel.to_dict("records"):
        kinds = levels.loc[levels["corpus"] == r["corpus"], "negatives"].nunique()
        lines.append(
            f"- **{r['corpus']}**, {PRODUCTION_GATE} vs {negative} at α = {alpha:g}: "
            + _level_text(r, "question", "questions", alpha)
            + "; "
            + _level_text(r, "unit", "question groups", alpha)
            + f" (a bound ≤ α needs at least {min_clean_n(alpha, r['delta'] / kinds)} units even "
            "with no false answer)."
        )
    return lines


def _level_text(r: Mapping[str, object], level: str, units: str, alpha: float) -> str:
    """One certificate's clause of a `unit_lines` sentence: certified or not, its bound and n."""
    bound = float(r[f"bound ({level})"])  # type: ignore[arg-type]
    ok = bound <= alpha + 1e-12
    answers = (
        f"test answer rate {float(r[f'answer rate ({level})']):.3f}"  # type: ignore[arg-type]
        if ok
        else "so the gate answers nothing"
    )
    n = int(r[f"n_neg cal ({level})"])  # type: ignore[call-overload]
    what = "bound" if ok else "the strictest threshold's bound"
    return f"per {level} {'certified' if ok else 'not certified'} ({what} {bound:.3f} over {n} {units}, {answers})"


# ---------------------------------------------------------------- the cross-fitted folds


def crossfit_lines(table: pd.DataFrame, alpha: float, goals: Mapping[str, float]) -> list[str]:
    """One computed sentence per corpus, level and label view (vs the first kind): the pooled
    out-of-fold answer rate with its clustered interval and per language, the realised false
    answers, how many folds certified α and the deployable gate's bound; then each corpus's
    goal (`goals`: corpus -> answer rate wanted at a per-unit bound ≤ α) as met or not by how
    much."""
    lines = []
    sel = table[table["negatives"] == NEGATIVES[0]]
    for r in sel[sel["language"] == ALL].to_dict("records"):
        langs = sel[
            (sel["corpus"] == r["corpus"])
            & (sel["labels"] == r["labels"])
            & (sel["level"] == r["level"])
            & (sel["language"] != ALL)
        ]
        per_lang = ", ".join(
            f"{x['language']} {x['answer rate']:.3f} (n={x['answerable']})"
            for x in langs.to_dict("records")
        )
        lines.append(
            f"- **{r['corpus']}**, per {r['level']}, {r['labels']} labels: out of fold the gate "
            f"answers {r['answer rate']:.3f} of {r['answerable']} answerable questions "
            f"[{r['AR low (clustered)']:.3f}, {r['AR high (clustered)']:.3f} clustered] ({per_lang}); "
            f"false answers vs {r['negatives']} {r['false-answer rate']:.3f} "
            f"[{r['FA low']:.3f}, {r['FA high']:.3f} Wilson] of {r['negative']}; "
            f"{r['folds certified']} of {r['folds']} folds certified α = {alpha:g} "
            f"(largest bound {r['max fold bound']:.4f}, smallest n {r['min fold n']}); "
            f"the gate fit on every fold: bound {r['final bound']:.4f} over {r['final n']} "
            f"{'units' if r['level'] == 'unit' else 'questions'}."
        )
    for corpus, target in goals.items():
        best = sel[
            (sel["corpus"] == corpus) & (sel["level"] == "unit") & (sel["language"] == ALL)
        ].sort_values("labels")  # "audited" before "raw": the goal reads audited labels
        if best.empty:
            continue
        r = best.iloc[0].to_dict()
        ok = r["answer rate"] >= target - 1e-12 and r["max fold bound"] <= alpha + 1e-12
        gap = "" if ok else f", short by {target - r['answer rate']:.3f}"
        lines.append(
            f"- Goal {corpus}: answer rate ≥ {target:g} at a per-unit bound ≤ {alpha:g} "
            f"({r['labels']} labels): {'met' if ok else 'not met'} "
            f"({r['answer rate']:.3f}{gap})."
        )
    return lines


def language_address_lines(table: pd.DataFrame, baseline: str = "en") -> list[str]:
    """Per corpus and language other than `baseline`: the out-of-fold answer-rate gap to the
    baseline overall and inside each stratum of `crossfit.language_by_address`, computed."""
    lines = []
    for corpus, g in table.groupby("corpus", sort=False):
        base = g[g["language"] == baseline].set_index("questions")
        if base.empty:
            continue
        for lang, part in g[g["language"] != baseline].groupby("language", sort=True):
            p = part.set_index("questions")
            bits = [
                f"{stratum} {p.loc[stratum, 'answer rate']:.3f} vs {base.loc[stratum, 'answer rate']:.3f}"
                f" (gap {base.loc[stratum, 'answer rate'] - p.loc[stratum, 'answer rate']:+.3f},"
                f" n={int(p.loc[stratum, 'answerable'])})"
                for stratum in p.index
                if stratum in base.index and p.loc[stratum, "answerable"] > 0
            ]
            share = (
                p.loc["names indexed verses", "share"] if "names indexed verses" in p.index else 0
            )
            lines.append(
                f"- **{corpus}**, {lang} vs {baseline}: " + "; ".join(bits) + f". {share:.1%} of "
                f"{lang} questions name an indexed verse, "
                f"{base.loc['names indexed verses', 'share']:.1%} of {baseline} ones."
            )
    return lines
