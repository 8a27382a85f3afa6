"""The review sheet of a label audit: for each sampled question, its text, its gold verse(s) with
their text, and the top notes the split corpus returns for it (address and text), so a judge can
say whether the indexed corpus answers it (`citegate.corpus.audit`).

The sample and the notes are the shared study pass's: `sample(questions, 400)` of the whole set
(split "all"), every test-split `out_of_corpus` question among its first 400 `out_of_corpus` ones
plus the first `control` test-split `answerable` ones, and the final notes of the cached traces
replayed under the design config with the LTR reranker's scores. Building the sheet touches no
model; the database gives the note and gold texts.

The fold audit (`citegate audit-sheet --folds gita`, one sheet for every fold set, judged into
`gita-folds.jsonl`) reads experiment 05's fold sample instead (`research.folds.load_fold_studies`,
`FOLD_LIMIT` per label, set and fold build): per fold build, in its sample order, the first
`FOLD_OOC` out_of_corpus questions (its own held-out chapters) and the first `FOLD_CONTROL`
answerable ones (the previous fold's questions, `fold_selector`) not already audited as
out_of_corpus, every split. Each row names
its fold and the chapters that fold holds out, and its notes are the fold build's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg

from citegate.core import config, paths
from citegate.corpus.builds import fold_builds, gita_chapter_folds, parent_build
from citegate.corpus.questions import Question, fold_audit_name
from citegate.research.folds import FOLD_LIMIT, load_fold_studies
from citegate.research.study import StudySet, load_study
from citegate.store.tables import fragment_texts

LIMIT = 400
CONTROL = 50
TOP = 6
RERANKER = "ltr/default"
GOLD_TRANSLATOR = "gambirananda"  # a close English translation, shown for the gold verse
TEXT_CHARS = 700  # of a note in the Markdown sheet (the JSONL keeps the whole text)
FOLD_OOC = 70  # out_of_corpus questions per fold build on the fold sheet (6 x 70 = 420)
FOLD_CONTROL = 17  # answerable controls per fold build (6 x 17 = 102)


@dataclass(frozen=True)
class SheetNote:
    """One returned note: rank among the final notes, address, kind, cosine, text."""

    rank: int
    fragment_id: int
    address: str
    kind: str
    cosine: float
    text: str


@dataclass(frozen=True)
class SheetRow:
    """One question to judge."""

    id: str
    label: str
    language: str
    split: str
    text: str
    gold: list[str]
    gold_text: dict[str, str]
    decision: str
    notes: list[SheetNote]
    fold: int = 0  # the fold build whose notes these are (0: a split sheet)
    held_out: tuple[int, ...] = ()  # the chapters that fold build holds out

    def to_json(self) -> str:
        """One JSONL line (stable key order); a split sheet's row has no fold fields, so its
        digest is the one the split audit names."""
        rec = asdict(self)
        if not self.fold:
            del rec["fold"], rec["held_out"]
        return json.dumps(rec, ensure_ascii=False, sort_keys=True)


def audit_sample(questions: Sequence[Question], control: int = CONTROL) -> list[Question]:
    """The audited questions, in sample order: every test `out_of_corpus` one, then the first
    `control` test `answerable` ones (`questions`: the study's sample, already in that order)."""
    ooc = [q for q in questions if q.label == "out_of_corpus" and q.split == "test"]
    ans = [q for q in questions if q.label == "answerable" and q.split == "test"]
    return ooc + ans[:control]


def study_set(
    set_name: str = "gita-split", progress: bool = False
) -> tuple[StudySet, config.PipelineConfig]:
    """The shared pass (warm trace cache: no model runs) and the config its notes replay under."""
    study = load_study(
        {set_name: set_name},
        config.DESIGN,
        limit=LIMIT,
        split="all",
        reranker=RERANKER,
        progress=progress,
    )
    return study.sets[set_name], study.config


def build_sheet(
    conn: psycopg.Connection,
    sset: StudySet,
    cfg: config.PipelineConfig,
    *,
    control: int = CONTROL,
    top: int = TOP,
) -> list[SheetRow]:
    """One row per audited question: the replayed final notes (top `top`) with their texts and
    the gold verses' text from the full build (held out of the split one)."""
    return sheet_rows(conn, sset, cfg, audit_sample(sset.questions, control), top=top)


def sheet_rows(
    conn: psycopg.Connection,
    sset: StudySet,
    cfg: config.PipelineConfig,
    chosen: Sequence[Question],
    *,
    top: int = TOP,
    fold: int = 0,
    held_out: tuple[int, ...] = (),
) -> list[SheetRow]:
    """The rows of `chosen` (questions of `sset`): replayed final notes, their texts, and the
    gold verses' text from the full build the leave-out build is cut from (`parent_build`)."""
    results = sset.replay_all(cfg)
    notes = {q.id: results[q.id].notes[:top] for q in chosen}
    ids = sorted({c.fragment_id for ns in notes.values() for c in ns})
    texts = fragment_texts(conn, ids)
    full = parent_build(sset.corpus)
    gold = gold_texts(conn, full, sorted({g for q in chosen for g in q.gold}))
    return [
        SheetRow(
            q.id,
            q.label,
            q.language,
            q.split,
            q.text,
            list(q.gold),
            {g: gold.get(g, "") for g in q.gold},
            str(results[q.id].decision),
            [
                SheetNote(
                    i,
                    c.fragment_id,
                    c.addr_label or c.frag_key,
                    c.kind,
                    round(c.score, 4),
                    texts.get(c.fragment_id, ""),
                )
                for i, c in enumerate(notes[q.id], 1)
            ],
            fold,
            held_out,
        )
        for q in chosen
    ]


def fold_audit_sample(
    questions: Sequence[Question],
    ooc: int = FOLD_OOC,
    control: int = FOLD_CONTROL,
    exclude: frozenset[str] = frozenset(),
) -> list[Question]:
    """The audited questions of one fold build, in its sample order: the first `ooc`
    out_of_corpus ones, then the first `control` answerable ones whose id is not in `exclude`
    (every split; `questions`: the fold study's sample, already in that order). A fold build's
    answerable questions are the previous fold's held-out ones, so `exclude` (the ids audited as
    out_of_corpus) keeps a question from being judged twice: an audit holds one record per id."""
    out_ = [q for q in questions if q.label == "out_of_corpus"][:ooc]
    ans = [q for q in questions if q.label == "answerable" and q.id not in exclude][:control]
    return out_ + ans


def fold_audit_samples(
    sets: Mapping[str, Sequence[Question]], ooc: int = FOLD_OOC, control: int = FOLD_CONTROL
) -> dict[str, list[Question]]:
    """fold build -> its audited questions (`fold_audit_sample`), the controls drawn past every
    question audited as out_of_corpus in any fold."""
    held = {q.id for qs in sets.values() for q in fold_audit_sample(qs, ooc, 0)}
    return {name: fold_audit_sample(qs, ooc, control, frozenset(held)) for name, qs in sets.items()}


def fold_held_out(base: str, fold: int) -> tuple[int, ...]:
    """The chapters fold build `fold` of `base` holds out (gita only)."""
    if base != "gita":
        raise ValueError(f"the fold audit sheet covers gita's chapter folds, not {base!r}")
    return tuple(sorted(c for c, k in gita_chapter_folds().items() if k == fold))


def fold_study_sets(base: str = "gita") -> tuple[dict[str, StudySet], config.PipelineConfig]:
    """Experiment 05's fold sample of `base` (warm trace cache: no model runs): fold build ->
    its fold set's study set, and the config its notes replay under."""
    held = {n: fold_held_out(base, k) for k, n in enumerate(fold_builds(base), 1)}  # gita only
    studies = load_fold_studies([base], config.DESIGN, limit=FOLD_LIMIT, reranker=RERANKER)
    cfg = next(iter(studies.values())).config
    return {name: studies[name].sets[name] for name in held}, cfg


def build_fold_sheet(
    conn: psycopg.Connection,
    sets: Mapping[str, StudySet],
    cfg: config.PipelineConfig,
    *,
    ooc: int = FOLD_OOC,
    control: int = FOLD_CONTROL,
    top: int = TOP,
) -> list[SheetRow]:
    """The fold audit's sheet: per fold build (fold 1 first), `fold_audit_sample` of its fold
    set, each row with the fold build's notes and the chapters that fold holds out."""
    rows: list[SheetRow] = []
    chosen_by = fold_audit_samples({n: s.questions for n, s in sets.items()}, ooc, control)
    for k, (name, sset) in enumerate(sets.items(), 1):
        chosen = chosen_by[name]
        base = parent_build(name)
        rows += sheet_rows(
            conn, sset, cfg, chosen, top=top, fold=k, held_out=fold_held_out(base, k)
        )
    return rows


def fold_sheet_name(base: str) -> str:
    """The fold sheet's file stem, the fold audit's name (`gita-folds`)."""
    return fold_audit_name(base)


def gold_texts(conn: psycopg.Connection, corpus: str, labels: Sequence[str]) -> dict[str, str]:
    """verse address -> its text in `corpus` (the `GOLD_TRANSLATOR` translation, else the first
    by key)."""
    rows = conn.execute(
        "SELECT addr_label, frag_key, text FROM fragments WHERE corpus = %s AND kind = 'verse' "
        "AND addr_label = ANY(%s) ORDER BY addr_label, frag_key",
        (corpus, list(labels)),
    ).fetchall()
    out: dict[str, str] = {}
    for label, key, text in rows:
        if label not in out or key.endswith(f":{GOLD_TRANSLATOR}"):
            out[label] = text
    return out


def sheet_digest(rows: Sequence[SheetRow]) -> str:
    """sha256 of the sheet's JSONL content: the audit records name the sheet their judge read."""
    return hashlib.sha256("".join(r.to_json() + "\n" for r in rows).encode("utf-8")).hexdigest()


def sheet_markdown(rows: Sequence[SheetRow], digest: str) -> str:
    """The sheet for reading: one section per question, numbered in sample order."""
    folds = any(r.fold for r in rows)
    where_notes = "of each row's fold build" if folds else "of the split corpus"
    out = [
        "# Label audit review sheet",
        "",
        f"sheet digest `{digest}`; {len(rows)} questions; notes: top {TOP} final notes {where_notes} "
        "(replayed trace, design config, LTR scores).",
        "",
    ]
    for n, r in enumerate(rows, 1):
        fold = f" fold {r.fold} (held out: ch. {', '.join(map(str, r.held_out))})" if r.fold else ""
        out += [
            f"## {n}. {r.id} [{r.label}, {r.language}, {r.split}]{fold} decision={r.decision}",
            "",
            f"**Q:** {r.text}",
            "",
        ]
        where = "held out" if r.label == "out_of_corpus" else "indexed"
        out += [f"- gold {g} ({where}): {_one_line(t)}" for g, t in r.gold_text.items()]
        out += [""]
        out += [
            f"{c.rank}. `{c.address}` ({c.kind}, cos {c.cosine:.3f}): {_one_line(c.text)}"
            for c in r.notes
        ]
        out += [""]
    return "\n".join(out)


def _one_line(text: str, limit: int = TEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def write_sheet(rows: Sequence[SheetRow], folder: Path | None = None, name: str = "") -> dict:
    """Write `<name>.sheet.jsonl` and `<name>.sheet.md` under `folder` (default var/audit/);
    returns the paths and the sheet digest."""
    folder = Path(folder or paths.var_dir() / "audit")
    folder.mkdir(parents=True, exist_ok=True)
    digest = sheet_digest(rows)
    jsonl = folder / f"{name}.sheet.jsonl"
    md = folder / f"{name}.sheet.md"
    jsonl.write_text("".join(r.to_json() + "\n" for r in rows), encoding="utf-8")
    md.write_text(sheet_markdown(rows, digest), encoding="utf-8")
    return {"jsonl": str(jsonl), "markdown": str(md), "digest": digest, "questions": len(rows)}
