"""`citegate ask`: one question through the pipeline, printed for a person or as JSON.

It wires the pipeline through the service facade (`pipeline.service.Service`, what an engineer's
service calls) and answers with the production config (`experiments/production.yaml`, what
`citegate promote` wrote) unless told otherwise: `--config PATH` names another file, `--design` the design numbers
(`core.config.DESIGN`). The config used is printed first (in `--json`, under "config": source,
version, source run), then which gate decided and why (in `--json`, under "gate": kind, reason,
signal, threshold, language). A learned gate's model file is the one the config names, relative to
the config file's folder (`experiments/models/…` for production; an LTR reranker's model file likewise), checked against its digest
before anything loads. The question is checked first (`inputs.clean_question`: no empty, symbol-only
or NUL-byte questions). With `--answer`, a model call that fails (server down, HTTP error) is
reported as a model error and the command exits 2 (`ModelFailure`), never as an insufficient corpus.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict

from citegate.core.config_files import NamedConfig
from citegate.core.errors import ModelFailure, QuestionError
from citegate.core.inputs import clean_question
from citegate.core.terminal import visible
from citegate.core.types import RetrievalResult
from citegate.pipeline.llm_calls import CallOptions
from citegate.pipeline.render import (
    dumps,
    event_json,
    event_lines,
    render_text,
    render_turn,
    result_dict,
    turn_dict,
)
from citegate.pipeline.service import Service
from citegate.pipeline.turn import Turn


def config_name(args: argparse.Namespace) -> str:
    """The config `ask` answers with: `--design`, `--config PATH`, else production."""
    return "design" if args.design else args.config or "production"


def question_and_corpora(
    question: str | None, corpora: list[str] | None
) -> tuple[str, list[str] | None]:
    """The question and the corpora of `ask`'s arguments. `--corpus` takes one or more names,
    so in `ask --corpus gita "question"` it also takes the question: with no question left over,
    the last value given to `--corpus` is the question (a corpus name has no spaces, a question
    usually does), as a user who put the question last means it. No question at all is a
    one-line `QuestionError`."""
    if question is not None:
        return question, corpora
    if not corpora:
        raise QuestionError('no question given: citegate ask "your question" [--corpus NAME]')
    return corpora[-1], corpora[:-1] or None


def print_turn(turn: Turn, choice: NamedConfig, show_trace: bool, as_json: bool) -> None:
    """The whole turn, for a person or as JSON."""
    assert turn.retrieval is not None
    if as_json:
        data = result_json(turn.retrieval, show_trace)
        print(dumps({**data, "config": choice.describe(), "turn": turn_dict(turn)}))
    else:
        print(
            f"config: {visible(choice.label(), keep='')}\n"
            + result_text(turn.retrieval, show_trace)
            + "\n\n"
            + render_turn(turn)
        )


def cmd_ask(args: argparse.Namespace) -> int:
    """Run one question and print the config used, the cited notes and the gate verdict (with
    `--answer`, the whole turn: which branch was taken, every claim's verdict and the painted
    disclaimer). The question is checked before any model loads; a failed model call raises
    `ModelFailure` (exit 2) after the turn is printed."""
    args.question, args.corpus = question_and_corpora(args.question, args.corpus)
    args.question = clean_question(args.question)
    with Service.open(config_name(args), corpora=args.corpus, model=args.model) as svc:
        if args.stream:
            return stream_turn(svc, args)
        if args.answer or args.fallback is not None:  # the whole turn, corpus fallback included
            options = CallOptions(variant=args.variant)
            turn = svc.answer(args.question, fallback=args.fallback, options=options)
            print_turn(turn, svc.choice, args.trace, args.json)
            if turn.model_error:
                raise ModelFailure(f"model error, no answer: {turn.model_error}")
            return 0
        res = svc.retrieve(args.question)
    if args.json:
        print(dumps({**result_json(res, args.trace), "config": svc.choice.describe()}))
    else:
        print(f"config: {visible(svc.choice.label(), keep='')}\n" + result_text(res, args.trace))
    return 0


def stream_turn(svc: Service, args: argparse.Namespace) -> int:
    """`--stream`: the config line, then each event of the turn as it arrives (one JSON object
    per line with `--json`), flushed at once; a failed model call raises `ModelFailure` after
    the last event."""
    if not args.json:
        print(f"config: {visible(svc.choice.label(), keep='')}", flush=True)
    options = CallOptions(variant=args.variant)
    turn = None
    for event in svc.stream(args.question, fallback=args.fallback, options=options):
        text = event_json(event) if args.json else "\n".join(event_lines(event))
        print(text, flush=True)
        turn = event.turn or turn
    if turn is not None and turn.model_error:
        raise ModelFailure(f"model error, no answer: {turn.model_error}")
    return 0


def gate_line(res: RetrievalResult) -> str:
    """ "gate: <kind>: <reason>", the line saying which gate decided and why."""
    by = res.decided_by
    return f"gate: {by.kind}: {by.reason}" if by is not None else "gate: (not recorded)"


def result_text(res: RetrievalResult, show_trace: bool) -> str:
    """`render_text` with the gate line after the decision line."""
    lines = render_text(res, show_trace).split("\n")
    return "\n".join([*lines[:2], gate_line(res), *lines[2:]])


def result_json(res: RetrievalResult, show_trace: bool) -> dict[str, object]:
    """`result_dict` with "gate": which gate decided and why (None when not recorded)."""
    by = res.decided_by
    return {**result_dict(res, show_trace), "gate": asdict(by) if by is not None else None}


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate ask` to the CLI."""
    p = sub.add_parser(
        "ask",
        help="retrieve cited notes for a question and show the gate verdict",
        description="Answer with the production config (experiments/production.yaml) unless "
        "--config or --design says otherwise; the config used is printed first.",
    )
    p.add_argument(
        "question",
        nargs="?",
        help="the question; it may also come last, after --corpus NAME",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--config",
        metavar="PATH",
        help="answer with this config YAML (a production document or a PipelineConfig mapping) "
        "instead of experiments/production.yaml",
    )
    which.add_argument(
        "--design",
        action="store_true",
        help="answer with the design numbers (core.config.DESIGN) instead of production",
    )
    p.add_argument(
        "--corpus",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="corpora to search (default: the config's); may be repeated",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--trace", action="store_true", help="also print every candidate's fate")
    # --- corpus fallback
    p.add_argument(
        "--answer",
        action="store_true",
        help="run the whole turn (composer, claim check, corpus fallback) and show the branch "
        "taken and every claim's verdict",
    )
    p.add_argument(
        "--stream",
        action="store_true",
        help="run the whole turn (as --answer) and print each event as it arrives: the decision, "
        "the notes, the disclaimer on the fallback branch, each claim with its verdict, the text "
        "(with --json, one JSON object per line)",
    )
    p.add_argument(
        "--fallback",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="turn the corpus fallback on/off for this call (default: the config's; implies --answer)",
    )
    p.add_argument(
        "--variant",
        default="asked_painted",
        choices=["asked", "asked_painted", "not_asked"],
        help="fallback prompt variant (default asked_painted)",
    )
    p.add_argument(
        "--model",
        help="one chat model for every role, for this call: openrouter/<id> (OPENROUTER_API_KEY), "
        "openai/<id> (OPENAI_API_KEY), none (the bundled SmolLM2-135M), or a bare id on the "
        "provider whose key is set (default: each role's model in the config, else its llm)",
    )
    # --- end of corpus fallback
    p.set_defaults(func=cmd_ask)
