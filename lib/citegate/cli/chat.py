"""`citegate chat`: a conversation in the terminal, each turn streamed as `ask --stream` does.

Every line read is a question; a follow-up is rewritten into a standalone question from the
conversation so far (`Service.stream(question, history=...)`; the rewrite runs only on a model
that passed notebook 01's bar, `rewrite_bar`, else the follow-up is searched as written and the
reason is shown). `/export PATH` writes the conversation as JSON, `/reset` starts a new one,
`/quit` (or end of input) ends it. `--replay FILE` asks the questions of an exported
conversation in order instead of reading them; `--export PATH` writes the conversation at the
end. A question that cannot be asked, or a failed model call, is one line and the conversation
goes on; a replay with a failed model call exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from citegate.core.errors import CitegateError
from citegate.core.terminal import visible
from citegate.pipeline.conversation import Conversation, read_conversation
from citegate.pipeline.llm_calls import CallOptions
from citegate.pipeline.render import event_lines
from citegate.pipeline.service import Service
from citegate.pipeline.turn import EventKind, Turn

PROMPT = "you> "


def typed_questions() -> Iterator[str]:
    """Lines of standard input, prompting when it is a terminal; ends at end of input."""
    tty = sys.stdin.isatty()
    while True:
        if tty:
            print(PROMPT, end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            return
        if line.strip():
            yield line.strip()


def turn_in_chat(svc: Service, conv: Conversation, question: str, fallback: bool | None) -> Turn:
    """Stream one turn of the conversation (the notes shown as a count), then record it."""
    turn = None
    options = CallOptions()
    for event in svc.stream(question, fallback=fallback, options=options, history=conv.history()):
        lines = event_lines(event)
        if event.kind == EventKind.NOTES:
            lines = lines[:1]
        if event.kind == EventKind.DECISION and "searched" in event.data:
            searched = visible(str(event.data["searched"]), keep="")
            lines.append(
                f"  searched: {searched}  ({visible(str(event.data['rewrite']), keep='')})"
            )
        print("\n".join(lines), flush=True)
        turn = event.turn or turn
    assert turn is not None  # a turn's events end with done
    conv.add(turn)
    return turn


def command(line: str, conv: Conversation, svc: Service) -> bool:
    """Run a `/` command; False when it ends the conversation."""
    name, _, arg = line.partition(" ")
    if name == "/quit":
        return False
    if name == "/reset":
        conv.exchanges.clear()
        print("conversation reset")
    elif name == "/export" and arg.strip():
        export(conv, svc, Path(arg.strip()))
    else:
        print("commands: /export PATH, /reset, /quit")
    return True


def export(conv: Conversation, svc: Service, path: Path) -> None:
    """Write the conversation to `path` as JSON."""
    path.write_text(conv.to_json(svc.choice.describe()), encoding="utf-8")
    print(f"wrote {path} ({len(conv.exchanges)} turns)")


def cmd_chat(args: argparse.Namespace) -> int:
    """Read questions (typed, or `--replay`) and answer each in the conversation."""
    replay = read_conversation(args.replay) if args.replay else None
    name = "design" if args.design else args.config or "production"
    conv, failed = Conversation(), 0
    with Service.open(name, corpora=args.corpus, model=args.model) as svc:
        print(f"config: {visible(svc.choice.label(), keep='')}", flush=True)
        for question in replay if replay is not None else typed_questions():
            if question.startswith("/") and replay is None:
                if not command(question, conv, svc):
                    break
                continue
            if replay is not None:
                print(f"{PROMPT}{visible(question, keep='')}", flush=True)
            try:
                turn = turn_in_chat(svc, conv, question, args.fallback)
            except CitegateError as exc:
                print(f"citegate chat: {visible(str(exc), keep='')}", flush=True)
                continue
            if turn.model_error:
                failed += 1
                print(f"citegate chat: model error, no answer: {turn.model_error}", flush=True)
        if args.export:
            export(conv, svc, args.export)
    return 2 if replay is not None and failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate chat` to the CLI."""
    p = sub.add_parser(
        "chat",
        help="a conversation in the terminal: follow-ups rewritten, every turn streamed",
        description=(__doc__ or "").split("\n\n")[1].replace("\n", " "),
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--config", metavar="PATH", help="answer with this config YAML")
    which.add_argument("--design", action="store_true", help="answer with the design numbers")
    p.add_argument("--corpus", nargs="+", metavar="NAME", help="corpora to search")
    p.add_argument(
        "--fallback",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="turn the corpus fallback on/off (default: the config's)",
    )
    p.add_argument("--model", help="remote chat model id for every role when keys are set")
    p.add_argument("--replay", type=Path, metavar="FILE", help="ask an exported conversation again")
    p.add_argument("--export", type=Path, metavar="PATH", help="write the conversation at the end")
    p.set_defaults(func=cmd_chat)
