"""Notebook 05's numbers: one frame of gate signals per question and corpus, their AUROCs (raw and
audited labels, per language), a learned gate fit on tune with grouped CV, its transfer across
corpora, and certified thresholds reported on test.

Pure functions of loaded studies, the frames made from them, or fitted models (no database or file).
scikit-learn is imported inside the functions that fit (a heavy third-party library).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from citegate.core.errors import TooFewQuestions
from citegate.evaluation import metrics as M
from citegate.evaluation.certify import (
    Certified,
    CertifiedKinds,
    certify_kinds,
    clopper_pearson_upper,
)
from citegate.evaluation.sampling import salted_int
from citegate.models import gate_model as gm
from citegate.pipeline.gate import question_language
from citegate.pipeline.signals import SIGNALS, IndexFacts, signals
from citegate.research.study import Study

Z_SIGNAL = gm.LANG_Z
COLUMNS = (*SIGNALS, Z_SIGNAL)  # every signal the frame holds, raw and standardised
NEGATIVES = ("out_of_corpus", "out_of_scope")
POSITIVE = ("answerable", "held_out_answerable")  # audited labels the gate should answer
POOLED = gm.POOLED  # language key of the pooled stats
ALL = "all"
RAW, SUBSET_RAW, SUBSET_AUDITED = "raw", "audited subset: raw", "audited subset: audited"
CAL_SALT = "citegate-signals-calibration"
MIN_PER_CLASS = 5  # a contrast with fewer answerable or negative questions is not reported
GATES = ("logistic", "boosting")


# ---------------------------------------------------------------- the frame


def signal_frame(
    studies: Mapping[str, Study],
    inputs: Mapping[str, Any],
) -> pd.DataFrame:
    """One row per (corpus, question): ids, labels (raw and audited), split, language and every
    raw signal (`pipeline.signals.signals` of the replayed trace), plus `max_cosine_lang_z`
    standardised per language with stats fit on the corpus's tune split (`language_stats`).
    `inputs[corpus]` carries `facts` (IndexFacts) and `texts` (note id -> text).

    `language` is what production reads from the question text (`pipeline.gate.
    question_language`), so the language statistics are fit, and every per-language split is made,
    on the same key the served gate uses; the question set's own label is kept as
    `set_language` (they differ for a handful of questions, e.g. an "en" one in Devanagari)."""
    rows = []
    for corpus, study in studies.items():
        facts: IndexFacts = inputs[corpus].facts
        texts: Mapping[int, str] = inputs[corpus].texts
        for name, s in study.sets.items():
            cfg = study.config.replace(corpora=[s.corpus])
            results = s.replay_all(cfg)
            for q in s.questions:
                sig = signals(results[q.id], cfg, facts, texts)
                rows.append(_row(corpus, name, q, results[q.id].decision, sig))
    frame = pd.DataFrame(rows)
    parts = [with_language_z(g, language_stats(g)) for _, g in frame.groupby("corpus", sort=False)]
    return pd.concat(parts, ignore_index=True)


def _row(corpus: str, name: str, q: Any, decision: str, sig: Mapping[str, float]) -> dict:
    """A frame row; `audit` is "" (and `audited_label` the raw label) for unaudited questions."""
    return {
        "corpus": corpus,
        "set": name,
        "qid": q.id,
        "group": q.group,
        "label": q.label,
        "audit": getattr(q, "audit", ""),
        "audited_label": getattr(q, "audited_label", q.label),
        "split": q.split,
        "language": question_language(q.text),
        "set_language": q.language,
        "decision": decision,
        **{k: float(sig[k]) for k in SIGNALS},
    }


def language_stats(frame: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """(mean, std) of max cosine per language over the TUNE split's answerable questions, and the
    pooled stats under "*" (for a language tune did not see), as `models.gate_model` fits them.
    Answerable only: the negatives' language mix differs from the answerable one (the
    out-of-scope set is mostly English), so stats over every question would mix language with
    label prevalence."""
    base = frame[(frame["split"] == "tune") & (frame["label"] == "answerable")]
    if base.empty:
        base = frame[frame["split"] == "tune"]
    return gm.fit_language_stats(base["max_cosine"].tolist(), base["language"].tolist())


def language_z(
    max_cosine: Iterable[float], languages: Iterable[str], stats: Mapping[str, tuple[float, float]]
) -> np.ndarray:
    """Max cosine standardised by its language's stats (the pooled "*" for an unknown language)."""
    out = []
    for x, lang in zip(max_cosine, languages, strict=True):
        mean, std = stats.get(lang, stats[POOLED])
        out.append((float(x) - mean) / std)
    return np.asarray(out, dtype=float)


def with_language_z(frame: pd.DataFrame, stats: Mapping[str, tuple[float, float]]) -> pd.DataFrame:
    """The frame with `max_cosine_lang_z` computed from `stats`."""
    out = frame.copy()
    out[Z_SIGNAL] = language_z(out["max_cosine"], out["language"], stats)
    return out


# ---------------------------------------------------------------- contrasts and AUROCs


def has_audit(frame: pd.DataFrame) -> bool:
    """Whether any question in the frame carries an audit judgment."""
    return "audit" in frame and bool((frame["audit"].astype(str) != "").any())


def contrast(frame: pd.DataFrame, negative: str, labels: str = RAW) -> pd.DataFrame:
    """Answerable questions against one kind of negative, with `y` (1 = the gate should answer).

    `labels`: RAW (every question, raw labels), SUBSET_RAW (only audited questions, raw labels)
    or SUBSET_AUDITED (the same questions, audited labels: a held-out question the indexed corpus
    answers counts as answerable). The kind is always the raw label's."""
    sub = frame[frame["label"].isin(["answerable", negative])]
    if labels != RAW:
        sub = sub[sub["audit"].astype(str) != ""]
    sub = sub.copy()
    truth = sub["audited_label"] if labels == SUBSET_AUDITED else sub["label"]
    sub["y"] = truth.isin(POSITIVE).astype(int)
    return sub


def label_views(frame: pd.DataFrame) -> tuple[str, ...]:
    """The label views a frame supports: raw, plus the audited subset when audits exist."""
    return (RAW, SUBSET_RAW, SUBSET_AUDITED) if has_audit(frame) else (RAW,)


def _enough(y: pd.Series) -> bool:
    return int(y.sum()) >= MIN_PER_CLASS and int((1 - y).sum()) >= MIN_PER_CLASS


def _languages(frame: pd.DataFrame) -> list[str]:
    return [ALL, *sorted(frame["language"].unique())]


def _by_language(sub: pd.DataFrame, lang: str) -> pd.DataFrame:
    return sub if lang == ALL else sub[sub["language"] == lang]


def auroc_rows(
    sub: pd.DataFrame, scores: Mapping[str, pd.Series | np.ndarray], n_boot: int
) -> list[dict[str, Any]]:
    """AUROC with a clustered (question group) bootstrap CI of each named score on one contrast
    (`sub` with `y`); a score with NaNs is scored on its finite rows only (`n` says how many)."""
    rows = []
    for name, values in scores.items():
        s = pd.Series(np.asarray(values, dtype=float), index=sub.index)
        ok = np.isfinite(s)
        y = sub.loc[ok, "y"]
        if not _enough(y):
            continue
        ci = M.auroc_ci(s[ok], y, n_boot=n_boot, groups=sub.loc[ok, "group"])
        rows.append(
            {
                "signal": name,
                "AUROC": ci.auroc,
                "CI low": ci.lower,
                "CI high": ci.upper,
                "answerable": ci.n_pos,
                "negative": ci.n_neg,
            }
        )
    return rows


def auroc_table(
    frame: pd.DataFrame,
    n_boot: int,
    negatives: Sequence[str] = NEGATIVES,
    split: str = "test",
    columns: Sequence[str] = COLUMNS,
) -> pd.DataFrame:
    """Per corpus × label view × kind of negative × language (and all): AUROC and 95% CI of
    every signal on the `split` split."""
    rows = []
    part = frame[frame["split"] == split]
    for corpus, g in part.groupby("corpus", sort=False):
        for view in label_views(g):
            for neg in negatives:
                sub = contrast(g, neg, view)
                for lang in _languages(sub):
                    lsub = _by_language(sub, lang)
                    scores = {c: lsub[c] for c in columns}
                    head = {"corpus": corpus, "labels": view, "negatives": neg, "language": lang}
                    rows += [{**head, **r} for r in auroc_rows(lsub, scores, n_boot)]
    if not rows:
        raise TooFewQuestions(_too_few(frame, negatives, "no signal's AUROC can be computed"))
    return pd.DataFrame(rows)


def best_signals(aurocs: pd.DataFrame, labels: str = RAW) -> pd.DataFrame:
    """The signal with the highest AUROC per corpus × kind × language (ties: first in order)."""
    sub = aurocs[aurocs["labels"] == labels]
    keys = ["corpus", "negatives", "language"]
    best = (
        sub.sort_values("AUROC", ascending=False, kind="stable").groupby(keys, sort=False).head(1)
    )
    return best.loc[sorted(best.index)]  # back in table order: corpus, kind, language


# ---------------------------------------------------------------- fitting a learned gate


def calibration_part(frame: pd.DataFrame, share: float) -> np.ndarray:
    """True for the rows of the calibration part: per label, whole question groups in salted-hash
    order until they hold `share` of that label's questions (the group that crosses the mark is
    included), always leaving at least one group of a label to the fit part. A group (a verse, an
    article) is never on both sides, and with few groups (xquad's held-out articles) the share per
    label stays close to `share` (a plain per-group coin would not)."""
    cal_groups: set[str] = set()
    for _, g in frame.groupby("label", sort=True):
        counts = g["group"].value_counts()
        order = sorted(counts.index, key=lambda k: salted_int(CAL_SALT, k))
        target, total = share * len(g), 0
        for key in order[:-1]:
            if total >= target:
                break
            cal_groups.add(key)
            total += int(counts[key])
    return frame["group"].isin(cal_groups).to_numpy()


def grouped_folds(groups: Sequence[str], n_splits: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """GroupKFold (train, validation) index pairs: no group on both sides of a fold."""
    from sklearn.model_selection import GroupKFold

    g = np.asarray(groups)
    n = min(n_splits, len(np.unique(g)))
    return list(GroupKFold(n_splits=n).split(np.zeros(len(g)), groups=g))


def feature_matrix(
    frame: pd.DataFrame, features: Sequence[str], stats: Mapping[str, tuple[float, float]]
) -> np.ndarray:
    """The model's input: the named columns, `max_cosine_lang_z` recomputed with `stats` (the
    model's own, so a gate moved to another corpus keeps the standardisation it was fit with).
    Missing values stay NaN (the logistic model imputes the training mean)."""
    cols = []
    for f in features:
        if f == Z_SIGNAL:
            cols.append(language_z(frame["max_cosine"], frame["language"], stats))
        else:
            cols.append(frame[f].to_numpy(float))
    return np.column_stack(cols) if cols else np.zeros((len(frame), 0))


def usable_features(frame: pd.DataFrame, columns: Sequence[str] = COLUMNS) -> tuple[str, ...]:
    """The signals a model can learn from on `frame`: not all missing, not constant."""
    out = []
    for c in columns:
        x = frame[c].to_numpy(float)
        x = x[np.isfinite(x)]
        if len(x) and np.ptp(x) > 0:
            out.append(c)
    return tuple(out)


def make_estimator(kind: str, params: Mapping[str, Any]) -> Any:
    """A scikit-learn classifier: `logistic` (mean imputation, standardisation, L2 logistic
    regression) or `boosting` (HistGradientBoostingClassifier, NaN handled natively)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "logistic":
        return make_pipeline(
            SimpleImputer(strategy="mean", keep_empty_features=True),
            StandardScaler(),
            LogisticRegression(C=float(params["C"]), max_iter=2000),
        )
    if kind == "boosting":
        return HistGradientBoostingClassifier(random_state=0, **dict(params))
    raise ValueError(f"unknown gate kind {kind!r}; known: {GATES}")


def param_grid(kind: str) -> list[dict[str, Any]]:
    """The candidates grouped CV chooses among (regularisation / tree size)."""
    if kind == "logistic":
        return [{"C": c} for c in (0.01, 0.1, 1.0, 10.0)]
    return [{"learning_rate": 0.1, "max_depth": d, "max_iter": 100} for d in (2, 3)]


def targets(frame: pd.DataFrame) -> np.ndarray:
    """1 for answerable, 0 for every negative kind (raw labels: what tune carries)."""
    return (frame["label"] == "answerable").to_numpy(int)


def cv_table(
    frame: pd.DataFrame,
    features: Sequence[str],
    stats: Mapping[str, tuple[float, float]],
    n_splits: int,
    kinds: Sequence[str] = GATES,
) -> pd.DataFrame:
    """Grouped-CV AUROC (answerable vs every negative) of each candidate of each model kind."""
    from sklearn.metrics import roc_auc_score

    x, y = feature_matrix(frame, features, stats), targets(frame)
    folds = grouped_folds(frame["group"].tolist(), n_splits)
    rows = []
    for kind in kinds:
        for params in param_grid(kind):
            scores = []
            for tr, va in folds:
                if len(np.unique(y[tr])) < 2 or len(np.unique(y[va])) < 2:
                    continue
                est = make_estimator(kind, params).fit(x[tr], y[tr])
                scores.append(roc_auc_score(y[va], est.predict_proba(x[va])[:, 1]))
            rows.append(
                {
                    "model": kind,
                    "params": _params_text(params),
                    "cv AUROC": float(np.mean(scores)) if scores else float("nan"),
                    "cv std": float(np.std(scores)) if scores else float("nan"),
                    "folds": len(scores),
                    "_params": dict(params),
                }
            )
    return pd.DataFrame(rows)


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


@dataclass
class FittedGate:
    """A gate model fit on one corpus's fit part: its kind, features, language stats and the
    scikit-learn estimator; `score` gives p(answerable) for any frame."""

    corpus: str
    kind: str
    features: tuple[str, ...]
    stats: dict[str, tuple[float, float]]
    params: dict[str, Any]
    estimator: Any = field(repr=False)
    n_fit: int = 0

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """p(answerable) of each row."""
        x = feature_matrix(frame, self.features, self.stats)
        return self.estimator.predict_proba(x)[:, 1]


def fit_gates(
    frame: pd.DataFrame,
    cal_share: float,
    n_splits: int,
    kinds: Sequence[str] = GATES,
) -> tuple[dict[tuple[str, str], FittedGate], pd.DataFrame]:
    """Per corpus and model kind: choose the candidate with the best grouped-CV AUROC on the
    FIT part of tune (tune minus the calibration groups), refit it on the whole fit part.
    Returns {(corpus, kind): FittedGate} and the CV table."""
    gates: dict[tuple[str, str], FittedGate] = {}
    tables = []
    for corpus, g in frame.groupby("corpus", sort=False):
        fit = fit_part(g, cal_share)
        stats = language_stats(g)
        features = usable_features(fit)
        cv = cv_table(fit, features, stats, n_splits, kinds).assign(corpus=corpus)
        tables.append(cv)
        x, y = feature_matrix(fit, features, stats), targets(fit)
        for kind in kinds:
            mine = cv[cv["model"] == kind]
            best = mine.sort_values("cv AUROC", ascending=False, kind="stable").iloc[0]
            params = dict(best["_params"])
            est = make_estimator(kind, params).fit(x, y)
            gates[(corpus, kind)] = FittedGate(corpus, kind, features, stats, params, est, len(fit))
    cv_all = pd.concat(tables, ignore_index=True)
    cv_all["chosen"] = [
        gates[(r["corpus"], r["model"])].params == r["_params"] for r in cv_all.to_dict("records")
    ]
    return gates, cv_all.drop(columns="_params")


def tune_parts(frame: pd.DataFrame, cal_share: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fit part, calibration part) of the tune split, disjoint by question group."""
    tune = frame[frame["split"] == "tune"]
    cal = calibration_part(tune, cal_share)
    return tune[~cal], tune[cal]


def fit_part(frame: pd.DataFrame, cal_share: float) -> pd.DataFrame:
    """The part of tune a model is fit on (its groups never appear in the calibration part)."""
    return tune_parts(frame, cal_share)[0]


def gate_scores(
    frame: pd.DataFrame, gates: Mapping[tuple[str, str], FittedGate]
) -> dict[str, np.ndarray]:
    """Each of the frame's corpus's own gates scored on the frame (one corpus): name -> scores."""
    corpus = str(frame["corpus"].iloc[0])
    return {learned_name(k): g.score(frame) for (c, k), g in gates.items() if c == corpus}


def learned_auroc_table(
    frame: pd.DataFrame,
    gates: Mapping[tuple[str, str], FittedGate],
    n_boot: int,
    negatives: Sequence[str] = NEGATIVES,
    baseline: str = "max_cosine",
) -> pd.DataFrame:
    """Test-split AUROC (clustered CI) of each corpus's learned gates next to `baseline`, per
    label view × kind × language."""
    rows = []
    test = frame[frame["split"] == "test"]
    for corpus, g in test.groupby("corpus", sort=False):
        g = g.assign(**{k: v for k, v in gate_scores(g, gates).items()})
        names = [learned_name(k) for (c, k) in gates if c == corpus] + [baseline]
        for view in label_views(g):
            for neg in negatives:
                sub = contrast(g, neg, view)
                for lang in _languages(sub):
                    lsub = _by_language(sub, lang)
                    head = {"corpus": corpus, "labels": view, "negatives": neg, "language": lang}
                    scores = {n: lsub[n] for n in names}
                    rows += [{**head, **r} for r in auroc_rows(lsub, scores, n_boot)]
    if not rows:
        raise TooFewQuestions(_too_few(frame, negatives, "no learned gate's AUROC can be computed"))
    return pd.DataFrame(rows)


def transfer_table(
    frame: pd.DataFrame,
    gates: Mapping[tuple[str, str], FittedGate],
    n_boot: int,
    negatives: Sequence[str] = NEGATIVES,
) -> pd.DataFrame:
    """Every gate (fit on one corpus's tune fit part, with its own language stats) scored on
    every corpus's TEST split, raw labels, per kind: rows with `trained on`, `tested on`
    (equal = in-corpus, the diagonal), `model`, AUROC and CI."""
    rows = []
    test = frame[frame["split"] == "test"]
    for corpus, g in test.groupby("corpus", sort=False):
        for (train, kind), gate in gates.items():
            scored = g.assign(_p=gate.score(g))
            for neg in negatives:
                sub = contrast(scored, neg)
                head = {"trained on": train, "tested on": corpus, "model": kind, "negatives": neg}
                rows += [
                    {**head, **{k: v for k, v in r.items() if k != "signal"}}
                    for r in auroc_rows(sub, {"p": sub["_p"]}, n_boot)
                ]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- certified thresholds


def certify(
    scores: np.ndarray,
    frame: pd.DataFrame,
    alpha: float,
    delta: float,
    kinds: Sequence[str],
    units: np.ndarray | None = None,
) -> CertifiedKinds:
    """The certified threshold of `scores` on calibration rows `frame` (raw labels): per kind
    present, answerable vs that kind at δ/m (Bonferroni over the m kinds; `evaluation.certify`),
    the strictest kind's threshold; with `units` (one per row) negatives count per unit."""
    labels = frame["label"].to_numpy()
    present = [k for k in kinds if (labels == k).any()]
    by_kind = {k: _kind_labels(labels, k) for k in present}
    return certify_kinds(np.asarray(scores, dtype=float), by_kind, alpha, delta, units=units)


def _kind_labels(labels: np.ndarray, kind: str) -> np.ndarray:
    """1 answerable, 0 this kind, -1 another kind (excluded from this kind's count)."""
    return np.where(labels == "answerable", 1, np.where(labels == kind, 0, -1))


@dataclass(frozen=True)
class GatePoint:
    """One certified gate of one corpus at one α: its certificate and where it was calibrated."""

    corpus: str
    gate: str
    alpha: float
    delta: float
    certified: CertifiedKinds
    calibrated_on: str

    def kind(self, negative: str) -> Certified | None:
        """The certificate of one kind of negative at the chosen threshold."""
        return self.certified.per_kind.get(negative)


def certified_points(
    frame: pd.DataFrame,
    gates: Mapping[tuple[str, str], FittedGate],
    alphas: Sequence[float],
    delta: float,
    cal_share: float,
    negatives: Sequence[str] = NEGATIVES,
    production_kind: str = "logistic",
    *,
    per_group: bool = False,
) -> list[GatePoint]:
    """Per corpus and α: the learned (logistic) gate certified on the calibration part of tune
    (groups disjoint from its fit part), and max cosine alone certified on all of tune. With
    `per_group`, negatives count per question group (the certificate over independent units,
    `studies.signals.units`; `calibrated_on` says so)."""
    out = []
    per = " (per question group)" if per_group else ""
    for corpus, g in frame.groupby("corpus", sort=False):
        _, cal = tune_parts(g, cal_share)
        tune = g[g["split"] == "tune"]
        gate = gates[(str(corpus), production_kind)]
        pairs = (
            (learned_name(production_kind), gate.score(cal), cal, "tune calibration part"),
            ("max_cosine", tune["max_cosine"].to_numpy(float), tune, "all of tune"),
        )
        for alpha in alphas:
            for name, scores, rows, where in pairs:
                units = rows["group"].astype(str).to_numpy() if per_group else None
                cert = certify(scores, rows, alpha, delta, negatives, units=units)
                out.append(GatePoint(str(corpus), name, alpha, delta, cert, where + per))
    return out


def learned_name(kind: str) -> str:
    """The table name of a learned gate of one model kind."""
    return f"learned ({kind})"


def score_of(
    point: GatePoint, frame: pd.DataFrame, gates: Mapping[tuple[str, str], FittedGate]
) -> np.ndarray:
    """The point's gate scores on rows of its corpus."""
    if point.gate == "max_cosine":
        return frame["max_cosine"].to_numpy(float)
    kind = point.gate.removeprefix("learned (").removesuffix(")")  # see learned_name
    return gates[(point.corpus, kind)].score(frame)


def realised_table(
    frame: pd.DataFrame,
    points: Sequence[GatePoint],
    gates: Mapping[tuple[str, str], FittedGate],
    negatives: Sequence[str] = NEGATIVES,
) -> pd.DataFrame:
    """On the TEST split, per certified point × label view × language × kind: the bound, the
    realised false-answer rate (Wilson 95% CI) and the answer rate of answerable questions."""
    rows = []
    for p in points:
        test = frame[(frame["split"] == "test") & (frame["corpus"] == p.corpus)]
        answered = pd.Series(score_of(p, test, gates) >= p.certified.threshold, index=test.index)
        for view in label_views(test):
            for neg in negatives:
                if p.kind(neg) is None:
                    continue
                sub = contrast(test, neg, view)
                for lang in _languages(sub):
                    lsub = _by_language(sub, lang)
                    rows.append(_realised_row(p, neg, view, lang, lsub, answered[lsub.index]))
    if not rows:
        raise TooFewQuestions(_too_few(frame, negatives, "no certified gate can be checked"))
    return pd.DataFrame(rows)


def _label_counts(rows: pd.DataFrame) -> str:
    """'3 test questions (answerable 3)': a split's size and its labels."""
    labels = ", ".join(f"{k} {n}" for k, n in rows["label"].value_counts().items())
    return f"{len(rows)} test questions ({labels or 'none'})"


def _too_few(frame: pd.DataFrame, negatives: Sequence[str], what: str) -> str:
    """Why no realised row exists: each corpus's test split with its counts per label."""
    test = frame[frame["split"] == "test"]
    counts = "; ".join(
        f"{corpus}: {_label_counts(test[test['corpus'] == corpus])}"
        for corpus in frame["corpus"].unique()
    )
    return (
        f"{what} on the test split: it needs enough answerable questions and "
        f"negatives of a kind in {list(negatives)} in each corpus's test split, found {counts}. "
        "The corpus is too small for this study: import more questions, or hold out more "
        "documents (--holdout) so out_of_corpus questions exist"
    )


def _realised_row(
    p: GatePoint, neg: str, view: str, lang: str, sub: pd.DataFrame, answered: pd.Series
) -> dict[str, Any]:
    pos, negs = answered[sub["y"] == 1], answered[sub["y"] == 0]
    cert = p.kind(neg)
    assert cert is not None
    ar, ar_lo, ar_hi = M.rate_ci_or_nan(pos)
    fa, fa_lo, fa_hi = M.rate_ci_or_nan(negs)
    return {
        "corpus": p.corpus,
        "gate": p.gate,
        "alpha": p.alpha,
        "delta": p.delta,
        "threshold": p.certified.threshold,
        "feasible": p.certified.feasible,
        "negatives": neg,
        "labels": view,
        "language": lang,
        "bound": cert.bound,
        "n_neg cal": cert.n_neg,
        "false answers cal": cert.false_answers,
        "false-answer rate": fa,
        "FA low": fa_lo,
        "FA high": fa_hi,
        "negative": len(negs),
        "answer rate": ar,
        "AR low": ar_lo,
        "AR high": ar_hi,
        "answerable": len(pos),
    }


# ---------------------------------------------------------------- group-level sensitivity

LEVEL_QUESTION = "question (the certificate)"
LEVEL_GROUP = "question group (verse / article)"
LEVEL_UNIT = "held-out unit (chapter / article)"
LEVELS = (LEVEL_QUESTION, LEVEL_GROUP, LEVEL_UNIT)
_VERSE_GROUP = re.compile(r"(.+ \d+)\.\d+")  # "BG 3.5" -> "BG 3"


def held_out_unit(group: str) -> str:
    """The unit a split build holds out whole: a verse group's chapter ("BG 3.5" -> "BG 3", as
    gita-split holds out chapters), any other group itself (an xquad article, an out-of-scope
    question, which is its own group)."""
    m = _VERSE_GROUP.fullmatch(group)
    return m.group(1) if m else group


def calibration_rows(frame: pd.DataFrame, point: GatePoint, cal_share: float) -> pd.DataFrame:
    """The rows a point was certified on: the calibration part of tune for a learned gate, all
    of tune for max cosine (see `certified_points`)."""
    g = frame[frame["corpus"] == point.corpus]
    if point.gate == "max_cosine":
        return g[g["split"] == "tune"]
    return tune_parts(g, cal_share)[1]


def min_clean_n(alpha: float, delta: float) -> int:
    """The fewest independent negatives that certify α at confidence 1 − δ even with no false
    answer: the smallest n with (1 − α)^n ≤ δ (the Clopper–Pearson bound of 0 of n)."""
    return int(np.ceil(np.log(delta) / np.log(1.0 - alpha) - 1e-12))


def group_sensitivity(
    frame: pd.DataFrame,
    points: Sequence[GatePoint],
    gates: Mapping[tuple[str, str], FittedGate],
    cal_share: float,
) -> pd.DataFrame:
    """A SENSITIVITY CHECK, not the certificate. The certificate counts calibration negatives
    as exchangeable, independent questions; questions of one verse or one held-out article are
    not independent (xquad-split's come from a few articles). Per point and kind, at the point's
    certified threshold, the Clopper–Pearson bound (at the kind's δ share) recomputed with each
    negative question group, then each held-out unit, counted once as the sample (answered when
    any of its questions is answered): a conservative effective sample size. `n needed` is how
    many independent units certify α with no false answer at all (`min_clean_n`)."""
    rows = []
    for p in points:
        cal = calibration_rows(frame, p, cal_share)
        answered = pd.Series(score_of(p, cal, gates) >= p.certified.threshold, index=cal.index)
        for kind, cert in p.certified.per_kind.items():
            neg = cal[cal["label"] == kind]
            units = {
                LEVEL_QUESTION: neg["qid"],
                LEVEL_GROUP: neg["group"],
                LEVEL_UNIT: neg["group"].map(held_out_unit),
            }
            for level, key in units.items():
                hit = answered[neg.index].groupby(key.to_numpy()).any()
                n, k = len(hit), int(hit.sum())
                bound = clopper_pearson_upper(k, n, cert.delta)
                rows.append(
                    {
                        "corpus": p.corpus,
                        "gate": p.gate,
                        "alpha": p.alpha,
                        "delta (kind)": cert.delta,
                        "threshold": p.certified.threshold,
                        "negatives": kind,
                        "level": level,
                        "n": n,
                        "false answers": k,
                        "bound": bound,
                        "bound ≤ α": bool(bound <= p.alpha + 1e-12),
                        "n needed": min_clean_n(p.alpha, cert.delta),
                    }
                )
    return pd.DataFrame(rows)


def calibration_negative_groups(sensitivity: pd.DataFrame) -> pd.DataFrame:
    """Per corpus, gate and kind (one α; the calibration rows do not depend on it): how many
    negative questions, question groups and held-out units the certificate rests on."""
    if sensitivity.empty:
        return sensitivity
    first = sensitivity[np.isclose(sensitivity["alpha"], sensitivity["alpha"].min())]
    table = first.pivot_table(
        index=["corpus", "gate", "negatives"], columns="level", values="n", aggfunc="first"
    )
    return table.reindex(columns=list(LEVELS)).reset_index()


# ---------------------------------------------------------------- the language gap, explained

ADDRESS_STRATA = {1.0: "names only indexed verses", 0.0: "every other question"}


def language_gap_by_address(
    frame: pd.DataFrame, point: GatePoint, gates: Mapping[tuple[str, str], FittedGate]
) -> pd.DataFrame:
    """Answer rate (Wilson 95% CI) of the point's gate on the TEST split's answerable questions
    per language, overall and split by whether the question names verses that are all in the
    index (`address_found`): a gap between languages that vanishes within the strata comes
    from how often each language's questions name a verse, not from the language."""
    test = frame[
        (frame["corpus"] == point.corpus)
        & (frame["split"] == "test")
        & (frame["label"] == "answerable")
    ]
    answered = pd.Series(score_of(point, test, gates) >= point.certified.threshold, test.index)
    rows = []
    for lang, g in test.groupby("language", sort=True):
        found = g["address_found"] == 1.0
        strata = [("all", g), (ADDRESS_STRATA[1.0], g[found]), (ADDRESS_STRATA[0.0], g[~found])]
        for stratum, part in strata:
            rate, lo, hi = M.rate_ci_or_nan(answered[part.index])
            rows.append(
                {
                    "corpus": point.corpus,
                    "gate": point.gate,
                    "alpha": point.alpha,
                    "language": lang,
                    "questions": stratum,
                    "answerable": len(part),
                    "answered": int(answered[part.index].sum()),
                    "answer rate": rate,
                    "AR low": lo,
                    "AR high": hi,
                }
            )
    return pd.DataFrame(rows)


def feature_pushes(frame: pd.DataFrame, fitted: FittedGate, baseline: str = "en") -> pd.DataFrame:
    """Which features move a language's answerable TEST questions up or down in a logistic gate:
    the mean logit contribution coef × z of each feature (z after the gate's own imputation and
    standardisation) per language, and each language minus `baseline` (negative: pushes that
    language's questions below the baseline's)."""
    if fitted.kind != "logistic":
        raise ValueError(f"feature pushes read a logistic gate's coefficients, not {fitted.kind!r}")
    test = frame[
        (frame["corpus"] == fitted.corpus)
        & (frame["split"] == "test")
        & (frame["label"] == "answerable")
    ]
    imputer, scaler, lr = fitted.estimator.named_steps.values()
    x = feature_matrix(test, fitted.features, fitted.stats)
    push = pd.DataFrame(
        scaler.transform(imputer.transform(x)) * lr.coef_[0], columns=list(fitted.features)
    )
    push["language"] = test["language"].to_numpy()
    means = push.groupby("language").mean().T
    for lang in means.columns:
        if lang != baseline and baseline in means.columns:
            means[f"{lang} − {baseline}"] = means[lang] - means[baseline]
    return means.rename_axis("feature").reset_index()


def certificate_block(point: GatePoint) -> dict[str, Any]:
    """recommendation.json's `certified` block: per kind {alpha, delta (its Bonferroni share),
    n_neg, false_answers, bound, kind} at the chosen threshold, plus the threshold, the family δ
    and where it was calibrated."""
    kinds = {
        k: {
            f: c.to_dict()[f] for f in ("alpha", "delta", "n_neg", "false_answers", "bound", "kind")
        }
        for k, c in point.certified.per_kind.items()
    }
    return {
        "gate": point.gate,
        "threshold": point.certified.threshold,
        "feasible": point.certified.feasible,
        "alpha": point.alpha,
        "delta": point.delta,
        "calibrated_on": point.calibrated_on,
        "kinds": kinds,
    }


def find_point(
    points: Sequence[GatePoint], corpus: str, gate: str, alpha: float
) -> GatePoint | None:
    """The certified point of one corpus, gate and α (None when not computed)."""
    for p in points:
        if p.corpus == corpus and p.gate == gate and abs(p.alpha - alpha) < 1e-12:
            return p
    return None


def pick(table: pd.DataFrame, **conds: Any) -> pd.DataFrame:
    """Rows of `table` whose columns equal the given values (keys with spaces: use a dict)."""
    mask = np.ones(len(table), dtype=bool)
    for k, v in conds.items():
        mask &= (table[k] == v).to_numpy()
    return table[mask]


def learned_gate(
    fitted: FittedGate, point: GatePoint, trained_on: Mapping[str, Any]
) -> gm.LearnedGate:
    """The production `LearnedGate` of a fitted logistic gate: the same features, language stats,
    standardisation (the imputer's means equal the scaler's, so NaN → z = 0 as in the file
    format), coefficients and intercept, and the certified threshold with its certificate."""
    if fitted.kind != "logistic":
        raise ValueError(f"only a logistic gate becomes a LearnedGate, got {fitted.kind!r}")
    _, scaler, lr = fitted.estimator.named_steps.values()
    return gm.LearnedGate(
        features=tuple(fitted.features),
        language_stats={k: (float(m), float(s)) for k, (m, s) in fitted.stats.items()},
        mean=tuple(float(v) for v in scaler.mean_),
        scale=tuple(float(v) for v in scaler.scale_),
        coef=tuple(float(v) for v in lr.coef_[0]),
        intercept=float(lr.intercept_[0]),
        threshold=float(point.certified.threshold),
        certificate=certificate_block(point),
        trained_on=dict(trained_on),
    )


def gate_agreement(gate: gm.LearnedGate, fitted: FittedGate, frame: pd.DataFrame) -> float:
    """Largest |p(file) − p(scikit-learn)| over the frame's rows: the saved `LearnedGate`
    (NumPy, what production runs) must score exactly as the model fit here."""
    p_fit = fitted.score(frame)
    p_file = [
        gate.probability({k: row[k] for k in SIGNALS}, row["language"])
        for row in frame.to_dict("records")
    ]
    return float(np.max(np.abs(np.asarray(p_file) - p_fit))) if len(frame) else 0.0
