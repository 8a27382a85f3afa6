"""`citegate memory`: curated notes an editor keeps beside the corpus (`corpus.notes`,
`store.memory`): import a notes file, list, show and remove notes.

An import is all or nothing and refuses to overwrite a note of another source, or a source
imported with other content, without `--replace`; `remove` names what it removes, and refuses
an unknown key without removing anything. A file's notes are stored under its source: its path
inside the project, else its absolute path (`corpus.notes.source_name`). Every text a note or
its file brings in is printed through `core.terminal.visible`: a control or bidi character in
it is shown escaped, never obeyed by the terminal; the stored note keeps it as written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.core.config_files import production
from citegate.core.errors import ConfigError
from citegate.core.terminal import visible
from citegate.corpus.notes import NoteKind, read_notes, source_name
from citegate.models.embed import default_embedder
from citegate.store.db import connect
from citegate.store.memory import get_note, import_notes, list_notes, remove_notes


def _default_corpus(args: argparse.Namespace) -> str:
    """`--corpus`, else production's first corpus."""
    return args.corpus or production().corpora[0]


def cmd_import(args: argparse.Namespace) -> int:
    """Read, check, embed and store a notes file."""
    notes = read_notes(args.file)
    with connect() as conn:
        report = import_notes(conn, notes, default_embedder(), replace=args.replace)
    print(visible(str(report), keep=""))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """One line per stored note, its fields apart by tabs (a tab or newline inside a field is
    shown escaped, so each note stays one line of the same columns)."""
    with connect() as conn:
        notes = list_notes(conn, args.corpus, args.kind)
    for n in notes:
        fields = (n.corpus, n.key, n.kind, n.lang, ", ".join(n.cites) or "-", n.source)
        print("\t".join(visible(f, keep="") for f in fields))
    if not notes:
        print("no curated notes" + (f" in {visible(args.corpus, keep='')}" if args.corpus else ""))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """One note, whole: a header line, author, triggers, cites, then the body indented (its
    own line breaks and tabs kept; every other field on its line)."""
    corpus = _default_corpus(args)
    with connect() as conn:
        n = get_note(conn, corpus, args.key)
    print(visible(f"{n.address} ({n.kind}, {n.lang}) in {n.corpus}, from {n.source}", keep=""))
    print(visible(f"author: {n.author}; date: {n.written}", keep=""))
    print("triggers:\n" + "\n".join(f"  - {visible(t, keep='')}" for t in n.triggers))
    print(f"cites: {visible(', '.join(n.cites), keep='') or '-'}")
    print("body:\n" + "\n".join(f"  {row}" for row in visible(n.body).split("\n")))
    return 0


def _source(given: str | None) -> str | None:
    """`--source` as stored: a path naming an existing notes file is that file's source
    (`source_name`), anything else the source as `memory list` shows it."""
    if given is None or not Path(given).is_file():
        return given
    return source_name(given)


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove notes by key or by source."""
    if not args.keys and args.source is None:
        raise ConfigError("memory remove: name the notes (KEY ...) or --source NAME")
    corpus = _default_corpus(args)
    with connect() as conn:
        n = remove_notes(conn, corpus, args.keys, _source(args.source))
    print(f"removed {n} note{'s' if n != 1 else ''} from {visible(corpus, keep='')}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate memory import|list|show|remove` to the CLI."""
    p = sub.add_parser(
        "memory",
        help="curated notes (pinned, boost, memory) kept beside the corpus",
        description="Import, list, show and remove curated notes (data/memory/CARD.md).",
    )
    msub = p.add_subparsers(dest="memory_command", required=True)
    imp = msub.add_parser("import", help="check, embed and store a notes file (all or nothing)")
    imp.add_argument("file", help="a notes YAML file (format citegate-notes/1)")
    imp.add_argument(
        "--replace",
        action="store_true",
        help="replace this file's notes stored before and take over keys stored from another file",
    )
    imp.set_defaults(func=cmd_import)
    ls = msub.add_parser("list", help="one line per stored note")
    ls.add_argument("--corpus", help="only this corpus's notes")
    ls.add_argument("--kind", choices=[str(k) for k in NoteKind], help="only notes of this kind")
    ls.set_defaults(func=cmd_list)
    show = msub.add_parser("show", help="one note, whole")
    show.add_argument("key")
    show.add_argument("--corpus", help="the note's corpus (default: production's first)")
    show.set_defaults(func=cmd_show)
    rm = msub.add_parser("remove", help="remove notes by key, or every note of a source file")
    rm.add_argument("keys", nargs="*", metavar="KEY")
    rm.add_argument(
        "--source",
        help="remove every note imported from this source: as `memory list` shows it (the file's "
        "path inside the project, else its absolute path), or the path of the notes file",
    )
    rm.add_argument("--corpus", help="the notes' corpus (default: production's first)")
    rm.set_defaults(func=cmd_remove)
