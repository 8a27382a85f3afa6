"""Rebuild, validate and document the labeled question sets (what `citegate data build|check|card`
calls): the counts table of the data card, and every set checked against a fresh build."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus.questions import (
    SETS,
    QuestionSet,
    build_sets,
    check_set,
    counts_table,
    load_set,
    resolve_gold,
    write_sets,
)

CARD = paths.DATA / "CARD.md"
BEGIN, END = "<!-- counts:begin -->", "<!-- counts:end -->"


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


def card_counts(card: Path = CARD) -> str:
    """The counts table currently written in the data card."""
    text = card.read_text(encoding="utf-8")
    m = re.search(re.escape(BEGIN) + r"(.*?)" + re.escape(END), text, re.S)
    if not m:
        raise InputError(card, "-", f"no counts table between {BEGIN} and {END}")
    return m.group(1).strip()


def write_card_counts(table: str, card: Path = CARD) -> None:
    """Replace the counts table in the data card."""
    text = card.read_text(encoding="utf-8")
    new = re.sub(
        re.escape(BEGIN) + r".*?" + re.escape(END),
        lambda _: f"{BEGIN}\n{table}\n{END}",
        text,
        flags=re.S,
    )
    card.write_text(new, encoding="utf-8")


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
    return sets


def rebuild() -> int:
    """Rebuild every question set from its sources and the card's counts table; the set count."""
    write_sets(build_sets())
    write_card_counts(counts_markdown(load_set(n) for n in SETS))
    return len(SETS)


def check_card(table: str, card: Path = CARD) -> None:
    """Refuse (InputError) when the card's counts table is not `table`, the sets' own."""
    if table != card_counts(card):
        raise InputError(
            card, "-", "counts table disagrees with the sets (run `citegate data build`)"
        )
