"""Studies over leave-out folds: which questions each fold build is asked, and the unit a
certificate counts. Every question belongs to the fold that holds its group out
(`corpus.questions.question_fold`); a fold build `gita-fold3` is asked its own out_of_corpus
questions, the answerable questions of the previous fold and the out-of-scope questions whose
salted fold is 3, so each question has at most one out_of_corpus and one answerable row, both in
its own fold, and a rotation that tests fold 3 never fits on a row of it
(`studies.gate_signals.compute.crossfit`). The audit sheet of the fold audit reads the same sample.

An imported corpus with folds (`citegate data split NAME --folds K`) works the same way: its
fold count is the import's (`builds.fold_count`), its questions' fold is the fold that holds out
their first relevant document (`questions.question_fold`), and its fold builds are asked the
import's own out-of-scope set (the shipped one unless the import brought its own).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.corpus.builds import DEMO_FOLDS, fold_build, fold_count, import_record
from citegate.corpus.questions import Question, question_fold, scope_fold
from citegate.models.embed import default_embedder_id
from citegate.research.study import Study, load_study
from citegate.store.db import connect
from citegate.store.presence import check_folds

FOLD_LIMIT = 100  # experiment 05's fold sample: questions per label, set and fold build


def fold_selector(base: str, fold: int) -> Callable[[str, Question], bool]:
    """Which questions fold build `fold` of `base` is asked (see
    `studies.gate_signals.compute.crossfit`): its own held-out questions (out_of_corpus), the
    answerable questions of the previous fold, and the out-of-scope questions whose salted fold
    is this one. So every question has at most
    one out_of_corpus and one answerable row, both in the fold of its group."""
    k = fold_count(base)
    if k < 2:
        raise ConfigError(f"{base!r} has no leave-out folds")
    previous = (fold - 2) % k + 1

    def keep(set_name: str, q: Question) -> bool:
        if q.label == "out_of_scope":
            return scope_fold(q, k) == fold
        return question_fold(q) == (fold if q.label == "out_of_corpus" else previous)

    return keep


def load_fold_studies(
    bases: Sequence[str], cfg: PipelineConfig, *, limit: int, reranker: str
) -> dict[str, Study]:
    """One `Study` per fold build of each base corpus (`gita-fold1` ...), each asked its fold
    set and the out-of-scope set (an import's own, if it brought one) under `fold_selector`,
    `limit` questions per label and set. An imported corpus whose fold files and database
    disagree is refused first (`store.presence.check_folds`), naming what disagrees."""
    out: dict[str, Study] = {}
    for base in bases:
        k = fold_count(base)
        if k == 0:
            raise ConfigError(
                f"{base!r} has no leave-out folds (the demo corpora {', '.join(DEMO_FOLDS)}, or "
                f"an imported corpus after `citegate data split {base} --folds K`)"
            )
        if base not in DEMO_FOLDS:  # an import's files and database must agree on its folds
            with connect() as conn:
                check_folds(conn, base, default_embedder_id())
        for fold in range(1, k + 1):
            name = fold_build(base, fold)
            sets = {name: name, out_of_scope_set(base): name}
            out[name] = load_study(
                sets,
                cfg,
                limit=limit,
                split="all",
                reranker=reranker,
                select=fold_selector(base, fold),
            )
    return out


def out_of_scope_set(base: str) -> str:
    """The out-of-scope set a corpus's fold builds are asked: an import's own
    (`NAME-out-of-scope`) when it brought one, else the shipped `out-of-scope`."""
    record = import_record(base)
    if record is None or record["name"] != base:
        return "out-of-scope"
    return str(record.get("out_of_scope", "out-of-scope"))


def question_unit(q: Question) -> str:
    """The certificate's independent unit: an XQuAD question's paragraph without its language
    (the Russian question is a translation of the English one), else its group (a gita verse,
    an imported question's first relevant document `NAME:<doc id>`, an out-of-scope
    question)."""
    if q.group.startswith("xquad:") and q.gold:
        _, _, rest = q.gold[0].split(":", 2)
        return f"xquad:{rest}"
    return q.group
