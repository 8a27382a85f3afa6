"""Whether the corpora a search names hold any fragment for the embedder in use.

A corpus never ingested (a typo in `--corpus`, production's corpus on a fresh database, a corpus
ingested under another embedder) would be searched as empty: every question would come back
"insufficient" with max cosine 0, a wrong answer that looks like a right one. `require_fragments`
refuses such a search in one line naming the corpus and the command that ingests it. The check is
one statement per search: an `EXISTS` per corpus, each an index probe of `fragments_corpus_kind`
(embedder_id, corpus, kind), so it costs a round trip, not a scan, however large the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import psycopg

from citegate.core.errors import EmptyCorpus, InputError
from citegate.core.inputs import loads_json, name_problem
from citegate.corpus.builds import (
    BUILDS,
    FOLD_MAP_FILE,
    SPLIT_SUFFIX,
    import_record,
    imports_dir,
    parent_build,
    parse_fold,
)

EMPTY_CORPORA_SQL = """
SELECT c FROM unnest(%(corpora)s::text[]) WITH ORDINALITY AS t(c, i)
WHERE NOT EXISTS (SELECT 1 FROM fragments f WHERE f.embedder_id = %(eid)s AND f.corpus = t.c)
ORDER BY i
"""


def empty_corpora(conn: psycopg.Connection, embedder_id: str, corpora: Sequence[str]) -> list[str]:
    """The corpora of `corpora` (in their order) without one fragment for `embedder_id`."""
    if not corpora:
        return []
    rows = conn.execute(EMPTY_CORPORA_SQL, {"corpora": list(corpora), "eid": embedder_id})
    return [r[0] for r in rows]


def ingest_commands(corpus: str) -> list[str]:
    """The commands that put fragments into `corpus`, each one a user can run as printed once
    DIR or PATH is filled in: `citegate ingest --corpus` for a built-in build, `citegate data
    split` for an imported corpus's split or fold build, and for any other name `citegate data
    import-beir DIR --name` or `citegate ingest --corpus PATH --name`."""
    if corpus in BUILDS:
        return [f"citegate ingest --corpus {corpus}"]
    base = parent_build(corpus)
    record = import_record(corpus) if base != corpus else None
    if record is not None and (fold := parse_fold(corpus)):
        k = int((record.get("folds") or {}).get("k", fold[1]))
        return [f"citegate data split {base} --folds {k} --replace"]
    if record is not None and corpus.endswith(SPLIT_SUFFIX):
        return [f"citegate data split {base} --replace"]
    return [
        f"citegate data import-beir DIR --name {corpus}",
        f"citegate ingest --corpus PATH --name {corpus}",
    ]


def ingest_hint(corpus: str) -> str:
    """`ingest_commands` as one phrase: "A", or "A, or B"."""
    return ", or ".join(ingest_commands(corpus))


def check_corpus_names(corpora: Sequence[str]) -> None:
    """Refuse a search naming no corpus, or a corpus name that breaks `core.inputs`' name rule
    (`InputError`, before any statement runs)."""
    if not corpora:
        raise InputError("corpora", "-", "no corpus to search; name at least one")
    for c in corpora:
        if not isinstance(c, str):
            raise InputError("corpora", repr(c)[:40], "a corpus name must be text")
        problem = name_problem(c)
        if problem:
            raise InputError("corpora", repr(c)[:40], f"the name {problem}")


def require_fragments(conn: psycopg.Connection, embedder_id: str, corpora: Sequence[str]) -> None:
    """Refuse (`EmptyCorpus`, one line) a search of any corpus that holds no fragment for
    `embedder_id`, naming each such corpus and how to fill it; bad names are refused first
    (`check_corpus_names`)."""
    check_corpus_names(corpora)
    empty = empty_corpora(conn, embedder_id, corpora)
    if not empty:
        return
    hints = "; ".join(f"{c}: {ingest_hint(c)}" for c in empty)
    which = ("corpus " if len(empty) == 1 else "corpora ") + ", ".join(repr(c) for c in empty)
    verb = "holds" if len(empty) == 1 else "hold"
    raise EmptyCorpus(
        f"{which} {verb} no fragments for embedder {embedder_id}: nothing to search, "
        f"so no answer is given. Ingest it first ({hints})"
    )


# ---------------------------------------------------------------- an import's fold builds

STORED_BUILDS_SQL = """
SELECT c.corpus, c.origin FROM corpora c
WHERE c.embedder_id = %(eid)s AND starts_with(c.corpus, %(prefix)s)
  AND EXISTS (SELECT 1 FROM fragments f WHERE f.embedder_id = c.embedder_id AND f.corpus = c.corpus)
"""


def fold_mismatch(conn: psycopg.Connection, base: str, embedder_id: str) -> str | None:
    """What disagrees between imported corpus `base`'s recorded leave-out folds (build.json's
    rule and fold builds with their origins, folds.json's rule) and the fold builds the database
    holds (those ingested from the import's source: a build of that name from elsewhere is the
    ingest's to refuse), or None when they agree. A `data split --folds` stopped between its
    database commit and its files leaves the database on the new rule and the files on the old
    one."""
    record = import_record(base)
    if record is None or record.get("name") != base:
        return None
    rule = record.get("folds") or None
    recorded = {b: e.get("origin") for b, e in record["builds"].items() if _fold_of(b, base)}
    rows = conn.execute(STORED_BUILDS_SQL, {"eid": embedder_id, "prefix": f"{base}-fold"})
    ours = f"beir:{record.get('source')} holding out fold "  # `store.imports`' fold origins
    stored = {c: o for c, o in rows if _fold_of(c, base) and str(o).startswith(ours)}
    problems = []
    file_rule = _fold_map_rule(base)
    if file_rule != (dict(rule) if rule else None):
        problems.append(
            f"folds.json records {_rule_text(file_rule)}, build.json {_rule_text(rule)}"
        )
    if set(stored) != set(recorded):
        problems.append(
            f"the database holds {_builds_text(stored)}, the import records {_builds_text(recorded)}"
        )
    changed = sorted(
        (b for b in recorded if b in stored and stored[b] != recorded[b]), key=_fold_key
    )
    if changed:
        problems.append(
            f"{', '.join(changed)} in the database {'was' if len(changed) == 1 else 'were'} cut by another rule"
        )
    return "; ".join(problems) or None


def check_folds(conn: psycopg.Connection, base: str, embedder_id: str) -> None:
    """Refuse (`InputError`, one line) to use the fold builds of an import whose files and
    database disagree (`fold_mismatch`), saying what disagrees and the command that repairs it."""
    problem = fold_mismatch(conn, base, embedder_id)
    if problem:
        raise InputError(
            base,
            "-",
            f"its leave-out folds are inconsistent ({problem}): a `citegate data split {base} "
            f"--folds K` stopped before it finished. Repair: run `citegate data split {base} "
            "--folds K --replace` again with the K you want",
        )


def _fold_of(name: str, base: str) -> bool:
    fold = parse_fold(name)
    return fold is not None and fold[0] == base


def _fold_key(name: str) -> int:
    fold = parse_fold(name)
    return fold[1] if fold else 0


def _builds_text(builds: Mapping[str, object]) -> str:
    if not builds:
        return "no fold builds"
    names = sorted(builds, key=_fold_key)
    return f"{len(names)} fold build{'s' if len(names) > 1 else ''} ({', '.join(names)})"


def _rule_text(rule: Mapping[str, object] | None) -> str:
    if not rule:
        return "no folds"
    unit = f"field {rule.get('field')}" if rule.get("field") else "documents"
    return f"{rule.get('k')} folds of {unit}"


def _fold_map_rule(base: str) -> dict[str, object] | None:
    """The rule a folds.json records (its keys but `documents`), None without the file."""
    path = imports_dir() / base / FOLD_MAP_FILE
    if not path.is_file():
        return None
    data = loads_json(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return {"k": "?"}
    return {k: v for k, v in data.items() if k != "documents"}
