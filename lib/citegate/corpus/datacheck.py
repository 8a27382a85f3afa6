"""Rebuild, validate and document the labeled question sets (what `citegate data build|check|card`
calls): the counts table of the data card, and every set checked against a fresh build."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus.audit import JUDGMENTS, Judgment, audit_counts, audit_path, load_audit
from citegate.corpus.builds import gita_chapter_folds
from citegate.corpus.questions import (
    SETS,
    QuestionSet,
    build_sets,
    check_set,
    counts_table,
    fold_audit_name,
    load_set,
    question_fold,
    resolve_gold,
    write_sets,
)
from citegate.evaluation.metrics import rate_ci

CARD = paths.DATA / "CARD.md"
BEGIN, END = "<!-- counts:begin -->", "<!-- counts:end -->"
AUDIT_BEGIN, AUDIT_END = "<!-- audit:begin -->", "<!-- audit:end -->"
AUDITED_SET = "gita-split"
FOLD_AUDIT_BEGIN, FOLD_AUDIT_END = "<!-- fold-audit:begin -->", "<!-- fold-audit:end -->"
FOLD_AUDITED_BASE = "gita"  # the fold audit `gita-folds.jsonl` serves gita-fold1 .. gita-fold6


def counts_markdown(sets: Iterable[QuestionSet]) -> str:
    """The label × language × split table of every set, as Markdown."""
    sets = list(sets)
    rows = counts_table(sets)
    lines = [
        "| set | corpus build | label | language | tune | test | total |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    keyed: dict[tuple[str, str, str], dict[str, int]] = {}
    for name, label, lang, split, n in rows:
        keyed.setdefault((name, label, lang), {})[split] = n
    corpus = {s.name: s.corpus for s in sets}
    for (name, label, lang), d in sorted(keyed.items()):
        tune, test = d.get("tune", 0), d.get("test", 0)
        lines.append(
            f"| {name} | {corpus[name]} | {label} | {lang} | {tune} | {test} | {tune + test} |"
        )
    return "\n".join(lines)


def card_counts(card: Path = CARD, begin: str = BEGIN, end: str = END) -> str:
    """The counts table currently written in the data card (between `begin` and `end`)."""
    text = card.read_text(encoding="utf-8")
    m = re.search(re.escape(begin) + r"(.*?)" + re.escape(end), text, re.S)
    if not m:
        raise InputError(card, "-", f"no table between {begin} and {end}")
    return m.group(1).strip()


def write_card_counts(table: str, card: Path = CARD, begin: str = BEGIN, end: str = END) -> None:
    """Replace the counts table (between `begin` and `end`) in the data card."""
    text = card.read_text(encoding="utf-8")
    new = re.sub(
        re.escape(begin) + r".*?" + re.escape(end),
        lambda _: f"{begin}\n{table}\n{end}",
        text,
        flags=re.S,
    )
    card.write_text(new, encoding="utf-8")


def audit_markdown(audit: Iterable[Judgment]) -> str:
    """The audit's judgments per raw label (with each label's answerable share and its 95% Wilson
    interval) and every ambiguous case with its reason, as Markdown: the card's audit entry,
    computed from the file."""
    items = list(audit)
    lines = [
        "| raw label | " + " | ".join(JUDGMENTS) + " | judged | share answerable [95% Wilson] |",
        "|---|" + "---:|" * (len(JUDGMENTS) + 2),
    ]
    for label, row in audit_counts(items).items():
        total = sum(row.values())
        counts = " | ".join(str(row[j]) for j in JUDGMENTS)
        share, low, high = rate_ci([j.judgment == "answerable" for j in items if j.label == label])
        lines.append(f"| {label} | {counts} | {total} | {share:.3f} [{low:.3f}, {high:.3f}] |")
    ambiguous = [j for j in items if j.judgment == "ambiguous"]
    lines += ["", f"Ambiguous cases ({len(ambiguous)}):", ""]
    lines += [f"- `{j.id}` ({j.label}): {j.reason}" for j in ambiguous] or ["- none"]
    return "\n".join(lines)


def fold_audit_markdown(
    audit: Iterable[Judgment], fold_of: Mapping[str, int], held: Mapping[int, Iterable[int]]
) -> str:
    """The fold audit's card entry, computed from the file: judgments per raw label as in
    `audit_markdown`, then the out_of_corpus judgments per fold (the fold set in which each is
    out_of_corpus, with the chapters it holds out) with each fold's share answerable and its 95%
    Wilson interval, then every ambiguous case. `fold_of`: question id -> the fold that holds
    its chapter out; `held`: fold -> its held-out chapters."""
    items = list(audit)
    lines = audit_markdown(items).split("\n")
    cut = lines.index("")  # the per-label table ends at the first blank line
    table, rest = lines[:cut], lines[cut:]
    table += [
        "",
        "| fold set | held-out chapters | "
        + " | ".join(JUDGMENTS)
        + " | judged | share answerable [95% Wilson] |",
        "|---|---|" + "---:|" * (len(JUDGMENTS) + 2),
    ]
    ooc = [j for j in items if j.label == "out_of_corpus"]
    for k in sorted({fold_of[j.id] for j in ooc}):
        mine = [j for j in ooc if fold_of[j.id] == k]
        counts = " | ".join(str(sum(j.judgment == jd for j in mine)) for jd in JUDGMENTS)
        share, low, high = rate_ci([j.judgment == "answerable" for j in mine])
        chapters = ", ".join(map(str, sorted(held[k])))
        table.append(
            f"| {FOLD_AUDITED_BASE}-fold{k} | {chapters} | {counts} | {len(mine)} | "
            f"{share:.3f} [{low:.3f}, {high:.3f}] |"
        )
    return "\n".join(table + rest)


def fold_audit_entry() -> str:
    """The card entry of the committed fold audit (`gita-folds.jsonl`)."""
    audit = load_audit(audit_path(fold_audit_name(FOLD_AUDITED_BASE)), frozenset()).values()
    fold_of = {q.id: question_fold(q) for q in load_set(FOLD_AUDITED_BASE).questions}
    held: dict[int, list[int]] = {}
    for chapter, k in gita_chapter_folds().items():
        held.setdefault(k, []).append(chapter)
    return fold_audit_markdown(audit, fold_of, held)


def check_all(conn: object | None, embedder_id: str | None) -> list[QuestionSet]:
    """Validate every set: schema, duplicates, split leakage, gold references (with a database),
    and that the committed files equal a fresh build from the sources."""
    sets = [load_set(n) for n in SETS]
    problems = [p for s in sets for p in check_set(s)]
    fresh = build_sets()
    problems += [
        f"{s.name}: differs from a fresh build (run `citegate data build`)"
        for s in sets
        if fresh[s.name].digest != s.digest
    ]
    if problems:
        raise InputError(paths.QUESTIONS, "-", "; ".join(problems[:20]))
    if conn is not None and embedder_id:
        for s in sets:
            resolve_gold(conn, s, embedder_id)  # type: ignore[arg-type]
    check_audit_card()
    check_fold_audit_card()
    return sets


def rebuild() -> int:
    """Rebuild every question set from its sources and the card's counts table; the set count."""
    write_sets(build_sets())
    write_card_counts(counts_markdown(load_set(n) for n in SETS))
    audit = load_audit(audit_path(AUDITED_SET)).values()
    write_card_counts(audit_markdown(audit), begin=AUDIT_BEGIN, end=AUDIT_END)
    write_card_counts(fold_audit_entry(), begin=FOLD_AUDIT_BEGIN, end=FOLD_AUDIT_END)
    return len(SETS)


def check_audit_card(card: Path = CARD) -> None:
    """Refuse (InputError) when the card's audit entry is not the audit file's own."""
    audit = load_audit(audit_path(AUDITED_SET)).values()
    if audit_markdown(audit) != card_counts(card, AUDIT_BEGIN, AUDIT_END):
        raise InputError(
            card, "-", "audit entry disagrees with the audit file (run `citegate data build`)"
        )


def check_fold_audit_card(card: Path = CARD) -> None:
    """Refuse (InputError) when the card's fold audit entry is not the fold audit file's own."""
    if fold_audit_entry() != card_counts(card, FOLD_AUDIT_BEGIN, FOLD_AUDIT_END):
        raise InputError(
            card,
            "-",
            "fold audit entry disagrees with the fold audit file (run `citegate data build`)",
        )


def check_card(table: str, card: Path = CARD) -> None:
    """Refuse (InputError) when the card's counts table is not `table`, the sets' own."""
    if table != card_counts(card):
        raise InputError(
            card, "-", "counts table disagrees with the sets (run `citegate data build`)"
        )
