"""Whether the corpora a search names hold any fragment for the embedder in use.

A corpus never ingested (a typo in `--corpus`, production's corpus on a fresh database, a corpus
ingested under another embedder) would be searched as empty: every question would come back
"insufficient" with max cosine 0, a wrong answer that looks like a right one. `require_fragments`
refuses such a search in one line naming the corpus and the command that ingests it. The check is
one statement per search: an `EXISTS` per corpus, each an index probe of `fragments_corpus_kind`
(embedder_id, corpus, kind), so it costs a round trip, not a scan, however large the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from citegate.core.errors import EmptyCorpus, InputError
from citegate.core.inputs import name_problem
from citegate.corpus.builds import BUILDS, SPLIT_SUFFIX, import_record, parent_build, parse_fold

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


def ingest_hint(corpus: str) -> str:
    """The command that puts fragments into `corpus`: `citegate ingest` for a built-in build,
    `citegate data split` for an imported corpus's split or fold build, `citegate data
    import-beir` (or `citegate ingest PATH --name`) for any other name."""
    if corpus in BUILDS:
        return f"citegate ingest --corpus {corpus}"
    base = parent_build(corpus)
    record = import_record(corpus) if base != corpus else None
    if record is not None and (fold := parse_fold(corpus)):
        k = int(record.get("folds", {}).get("k", fold[1]))
        return f"citegate data split {base} --folds {k} --replace"
    if record is not None and corpus.endswith(SPLIT_SUFFIX):
        return f"citegate data split {base} --replace"
    return f"citegate data import-beir DIR --name {corpus}, or citegate ingest PATH --name {corpus}"


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
