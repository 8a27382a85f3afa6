"""Notebook 08's pure part: what each turn gave the user, the tables and headline metrics over
those outcomes, and the pointer floor certified to a precision.

A turn's outcome (`OUTCOMES`) is read from what the user was shown: `answered_gold` (a grounded
answer with a kept claim citing a gold source of the question), `answered_wrong_source` (a
grounded answer whose claims cite only other sources), `declined` ("I don't know", the decline),
`fallback` (the general-knowledge answer under the painted disclaimer) or `error` (the turn
raised or a model call failed: counted, never scored as behaviour). On a negative question
(`out_of_corpus`, `out_of_scope`) any grounded answer is a false answer.

Rates carry Wilson 95% intervals per stratum (corpus, language, names a source or not); the
headline's are the wider of Wilson's and a bootstrap over question groups (a verse's or an
article's questions move together).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from citegate.evaluation.certify import clopper_pearson_upper
from citegate.evaluation.clustered import cluster_rate_ci
from citegate.evaluation.metrics.operation import rate_ci_or_nan

OUTCOMES = ("answered_gold", "answered_wrong_source", "declined", "fallback", "error")
NEGATIVE_KINDS = ("out_of_corpus", "out_of_scope")
STRATA = ("names_source", "no_source")


@dataclass(frozen=True)
class TurnRow:
    """One question through the live turn: who it is (set, corpus build, split, language,
    label, group, whether it names a source), what the turn did (branch, gate decision,
    outcome), what its answer cited and what was gold (addresses joined by "; "), whether a
    gold source was among the final notes or the pointers, the outcome under each extractive
    policy on the same notes (`policies`: "policy=outcome;..." for a grounded turn), the time,
    and the error when it raised."""

    qid: str
    set: str
    corpus: str
    split: str
    language: str
    label: str
    group: str
    names_source: bool
    branch: str
    decision: str
    outcome: str
    cited: str
    gold: str
    gold_in_notes: bool
    gold_pointer: bool
    pointers: int
    policies: str
    ms: float
    error: str = ""


@dataclass(frozen=True)
class NoteRow:
    """One final note of a question the gate found insufficient: its rank, its cosine to the
    question and whether it is a gold source (a pointer candidate, labeled)."""

    qid: str
    split: str
    label: str
    language: str
    group: str
    rank: int
    address: str
    cosine: float
    gold: bool


def outcome(branch: str, cited_gold: Sequence[bool], errored: bool) -> str:
    """The outcome of one turn from its branch and, for a grounded answer, whether each source
    its kept claims cite is gold."""
    if errored or branch == "error":
        return "error"
    if branch == "grounded":
        return "answered_gold" if any(cited_gold) else "answered_wrong_source"
    return "fallback" if branch == "fallback" else "declined"


def frame(rows: Iterable[TurnRow]) -> pd.DataFrame:
    """The rows as a table with a `stratum` column (names_source / no_source)."""
    df = pd.DataFrame([asdict(r) for r in rows])
    if df.empty:
        return pd.DataFrame(columns=[*TurnRow.__dataclass_fields__, "stratum"])
    df["stratum"] = np.where(df["names_source"], STRATA[0], STRATA[1])
    return df


def _rate(hits: pd.Series) -> dict[str, float]:
    rate, lo, hi = rate_ci_or_nan(hits.tolist())
    return {"rate": rate, "ci_low": lo, "ci_high": hi, "n": float(len(hits))}


def outcome_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per set, label, language and stratum: the count of each outcome, and for answerable
    questions the gold-answer rate and the wrong-source share among answered (Wilson 95%)."""
    rows = []
    for (s, label, lang, stratum), g in df.groupby(["set", "label", "language", "stratum"]):
        counts = {o: int((g["outcome"] == o).sum()) for o in OUTCOMES}
        row: dict[str, object] = {
            "set": s, "label": label, "language": lang, "stratum": stratum, "n": len(g), **counts,
        }  # fmt: skip
        answered = g[g["outcome"].isin(OUTCOMES[:2])]
        if label == "answerable":
            gold = _rate(g["outcome"] == "answered_gold")
            wrong = _rate(answered["outcome"] == "answered_wrong_source")
            row |= {"gold_answer_rate": gold["rate"], "gold_ci": _ci(gold)}
            row |= {"wrong_source_share": wrong["rate"], "wrong_ci": _ci(wrong)}
        else:
            false = _rate(g["outcome"].isin(OUTCOMES[:2]))
            row |= {"false_answer_rate": false["rate"], "false_ci": _ci(false)}
        rows.append(row)
    return pd.DataFrame(rows)


def _ci(r: dict[str, float]) -> str:
    return "-" if np.isnan(r["rate"]) else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def _put(out: dict[str, float], name: str, hits: pd.Series, units: pd.Series, n_boot: int) -> None:
    """`name` (a rate), `name.ci_low/.ci_high` and `name.n`. The interval is the wider of the
    Wilson 95% interval and the bootstrap's over question groups: the bootstrap widens it where a
    verse's questions move together, Wilson where it cannot (0 of n resamples to [0, 0])."""
    if len(hits) == 0:  # a rate over nothing is no number: left out, its count kept
        out[f"{name}.n"] = 0.0
        return
    lo, hi = cluster_rate_ci(hits.to_numpy(float), units.to_numpy(), n_boot)
    _, w_lo, w_hi = rate_ci_or_nan(hits.tolist())
    out[name] = float(hits.mean())
    out[f"{name}.ci_low"], out[f"{name}.ci_high"] = min(lo, w_lo), max(hi, w_hi)
    out[f"{name}.n"] = float(len(hits))


def headline(df: pd.DataFrame, n_boot: int = 1000, sets: Sequence[str] = ()) -> dict[str, float]:
    """The run's metrics. Per answerable set (`<set>` its corpus name, e.g. gita): the
    wrong-source share among answered questions, overall and per stratum (`.named` / `.unnamed`)
    and language; the gold-answer rate likewise; the answer rate. Per negative kind and set: the
    false-answer rate. Overall: the error share and the turn time p50 / p95 (ms)."""
    out: dict[str, float] = {}
    for s in sets or sorted(df["set"].unique()):
        g = df[(df["set"] == s) & (df["label"] == "answerable")]
        if g.empty:
            continue
        _answer_metrics(out, _short(s), g, n_boot)
    for kind in NEGATIVE_KINDS:
        for s, g in df[df["label"] == kind].groupby("set"):
            name = f"false_answer_rate.{kind}" + ("" if kind == "out_of_scope" else f".{_short(s)}")
            _put(out, name, g["outcome"].isin(OUTCOMES[:2]), g["group"], n_boot)
    if len(df):
        out["error_share"] = float((df["outcome"] == "error").mean())
        ok = df[df["outcome"] != "error"]["ms"]
        out["turn_ms_p50"] = float(np.percentile(ok, 50)) if len(ok) else float("nan")
        out["turn_ms_p95"] = float(np.percentile(ok, 95)) if len(ok) else float("nan")
    return out


def _short(set_name: str) -> str:
    """The corpus a set is about: gita-split -> gita."""
    return set_name.removesuffix("-split")


def _answer_metrics(out: dict[str, float], name: str, g: pd.DataFrame, n_boot: int) -> None:
    """Wrong-source share, gold-answer rate and answer rate of one answerable set, overall, per
    stratum and per language."""
    slices = [("", g)]
    slices += [(".named", g[g["names_source"]]), (".unnamed", g[~g["names_source"]])]
    slices += [(f".{lang}", h) for lang, h in g.groupby("language")]
    for suffix, h in slices:
        answered = h[h["outcome"].isin(OUTCOMES[:2])]
        wrong = answered["outcome"] == "answered_wrong_source"
        _put(out, f"wrong_source_share.{name}{suffix}", wrong, answered["group"], n_boot)
        _put(
            out,
            f"gold_answer_rate.{name}{suffix}",
            h["outcome"] == "answered_gold",
            h["group"],
            n_boot,
        )
        _put(
            out, f"answer_rate.{name}{suffix}", h["outcome"].isin(OUTCOMES[:2]), h["group"], n_boot
        )


def finite(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics that are numbers (a rate over an empty slice is NaN and is not recorded)."""
    return {k: float(v) for k, v in metrics.items() if np.isfinite(v)}


def policy_table(df: pd.DataFrame) -> pd.DataFrame:
    """Every extractive policy on the same grounded turns (same notes): per set, stratum and
    policy, the answered answerable questions and the share citing only other sources."""
    g = df[(df["label"] == "answerable") & (df["policies"] != "")]
    rows = []
    for (s, stratum), h in g.groupby(["set", "stratum"]):
        parsed = [dict(p.split("=", 1) for p in cell.split(";")) for cell in h["policies"]]
        for policy in sorted({k for d in parsed for k in d}):
            outs = [d.get(policy, "") for d in parsed]
            answered = [o for o in outs if o in OUTCOMES[:2]]
            wrong = [o == "answered_wrong_source" for o in answered]
            rate, lo, hi = rate_ci_or_nan(wrong)
            rows.append(
                {
                    "set": s, "stratum": stratum, "policy": policy, "answered": len(answered),
                    "wrong_source": int(sum(wrong)), "wrong_source_share": rate,
                    "ci_low": lo, "ci_high": hi,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def check_errors(df: pd.DataFrame, max_share: float) -> None:
    """Raise when more than `max_share` of the turns errored: the run's numbers would not be the
    pipeline's behaviour (the notebook cell fails, so the run is FAILED with this cause)."""
    if not len(df):
        raise RuntimeError("no turn was run: nothing measured")
    n = int((df["outcome"] == "error").sum())
    if n / len(df) > max_share:
        first = df[df["outcome"] == "error"]["error"].iloc[0]
        raise RuntimeError(
            f"{n} of {len(df)} turns failed (> {max_share:.0%}); first: {first[:200]}"
        )


# --------------------------------------------------------------------------- the pointer floor


@dataclass(frozen=True)
class Floor:
    """The pointer floor: the lowest cosine from which the pointers' precision (share that are
    a gold source of their question) keeps its Clopper-Pearson lower bound ≥ `target` on the
    tune part (1.0 when none does: no pointer is shown), with the tune and test precision."""

    floor: float
    target: float
    feasible: bool
    tune_precision: float
    tune_low: float
    tune_n: int
    test_precision: float
    test_ci_low: float
    test_ci_high: float
    test_n: int
    best_low: float = float("nan")  # the highest lower bound any floor reached on the tune part
    best_floor: float = float("nan")  # ... at this floor
    best_n: int = 0  # ... over this many pointers


def pointer_labels(notes: pd.DataFrame, floor: float, k: int) -> pd.Series:
    """The gold flags of the pointers each question would show at `floor`: its first `k` notes
    (in rank order) with cosine ≥ floor."""
    kept = notes[notes["cosine"] >= floor].sort_values(["qid", "rank"])
    return kept.groupby("qid").head(k)["gold"]


def _lower(k: int, n: int, delta: float) -> float:
    """Clopper-Pearson lower bound of a rate: one minus the upper bound of its complement."""
    return 1.0 - clopper_pearson_upper(n - k, n, delta) if n else 0.0


def certify_floor(
    notes: pd.DataFrame, target: float, k: int, delta: float = 0.05, min_n: int = 20
) -> Floor:
    """Choose the floor on the `tune` notes, report it on the `test` notes (see `Floor`).
    Candidates are the tune cosines; a floor needs `min_n` pointers on the tune part."""
    tune, test = notes[notes["split"] == "tune"], notes[notes["split"] == "test"]
    best: tuple[float, float, float, int] | None = None
    top = (float("nan"), float("nan"), 0)  # (lower bound, floor, n) of the best floor seen
    for t in sorted(set(tune["cosine"].round(4)), reverse=True):
        flags = pointer_labels(tune, t, k)
        n, hits = len(flags), int(flags.sum())
        low = _lower(hits, n, delta)
        if n >= min_n and not low <= top[0]:
            top = (low, float(t), n)
        if n >= min_n and low >= target:
            best = (float(t), hits / n, low, n)
    if best is None:
        nan = float("nan")
        return Floor(1.0, target, False, nan, nan, 0, *_test(test, 1.0, k), *top)
    t, p, low, n = best
    return Floor(t, target, True, p, low, n, *_test(test, t, k), *top)


def _test(test: pd.DataFrame, floor: float, k: int) -> tuple[float, float, float, int]:
    flags = pointer_labels(test, floor, k)
    rate, lo, hi = rate_ci_or_nan(flags.tolist())
    return rate, lo, hi, len(flags)


def floor_sweep(notes: pd.DataFrame, k: int, steps: int = 40) -> pd.DataFrame:
    """Precision and pointers per question at evenly spaced floors, per split (for the plot)."""
    lo, hi = float(notes["cosine"].min()), float(notes["cosine"].max())
    rows = []
    for t in np.linspace(lo, hi, steps):
        for split, g in notes.groupby("split"):
            flags = pointer_labels(g, float(t), k)
            asked = g["qid"].nunique()
            rows.append(
                {
                    "floor": float(t),
                    "split": split,
                    "precision": float(flags.mean()) if len(flags) else float("nan"),
                    "pointers_per_question": len(flags) / asked if asked else 0.0,
                }
            )
    return pd.DataFrame(rows)


__all__ = [
    "NEGATIVE_KINDS",
    "OUTCOMES",
    "STRATA",
    "Floor",
    "NoteRow",
    "TurnRow",
    "certify_floor",
    "check_errors",
    "finite",
    "floor_sweep",
    "frame",
    "headline",
    "outcome",
    "outcome_table",
    "pointer_labels",
    "policy_table",
]
