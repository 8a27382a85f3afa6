"""`citegate ask`: one question through the pipeline, printed for a person or as JSON.

It answers with the production config (`experiments/production.yaml`, what `citegate promote`
wrote) unless told otherwise: `--config PATH` names another file, `--design` the design numbers
(`core.config.DESIGN`). The config used is printed first (in `--json`, under "config": source,
version, source run), then which gate decided and why (in `--json`, under "gate": kind, reason,
signal, threshold, language). A learned gate's model file is the one the config names, relative to
the config file's folder (`experiments/models/…` for production; an LTR reranker's model file likewise), checked against its digest
before anything loads. The question is checked first (`plan.clean_question`: no empty, symbol-only
or NUL-byte questions). With `--answer`, a model call that fails (server down, HTTP error) is
reported as a model error and the command exits 2 (`ModelFailure`), never as an insufficient corpus.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from citegate.core.config import PRODUCTION, NamedConfig, named
from citegate.core.errors import ModelFailure
from citegate.core.types import RetrievalResult
from citegate.models.embed import Embedder, default_embedder
from citegate.pipeline.llm_calls import CallOptions
from citegate.pipeline.plan import clean_question, make_planner
from citegate.pipeline.render import dumps, render_text, render_turn, result_dict, turn_dict
from citegate.pipeline.retrieve import retrieve
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.turn import answer_turn
from citegate.store.db import connect
from citegate.store.production import (
    gate_model_path,
    load_gate,
    load_reranker,
    reranker_model_path,
)


def chosen_config(args: argparse.Namespace) -> NamedConfig:
    """The config `ask` answers with: `--design`, `--config PATH`, else production (a bad file
    is refused here, before any model loads, as is a learned gate whose model file is missing,
    altered or unusable: its path is made absolute, so every retrieval of the call finds it)."""
    choice = named("design" if args.design else args.config or "production")
    cfg = choice.config
    if cfg.gate != "learned" and not cfg.reranker_model:
        return choice
    folder = PRODUCTION.parent if choice.source == "production" else Path(choice.source).parent
    # A production-shaped file names models under its models/ folder; a plain config file (a
    # run folder's recommended_config.yaml) names them inside its own folder.
    root = None if choice.version is not None else folder
    if cfg.reranker_model:
        cfg = cfg.replace(reranker_model=str(reranker_model_path(cfg, folder, root).resolve()))
        load_reranker(cfg)
    if cfg.gate == "learned":
        cfg = cfg.replace(gate_model=str(gate_model_path(cfg, folder, root).resolve()))
        load_gate(cfg)
    return NamedConfig(cfg, choice.source, choice.version, choice.source_run)


def for_this_call(choice: NamedConfig, args: argparse.Namespace, embedder_id: str) -> NamedConfig:
    """`choice` with this call's changes: `--corpus`, and on the design numbers this
    environment's embedder (a file names its own; retrieval refuses a config naming another)."""
    changes: dict[str, object] = {"corpora": args.corpus} if args.corpus else {}
    if choice.source == "design":
        changes["embedder"] = embedder_id
    if not changes:
        return choice
    return NamedConfig(
        choice.config.replace(**changes), choice.source, choice.version, choice.source_run
    )


def cmd_answer(args: argparse.Namespace, choice: NamedConfig, emb: Embedder) -> int:
    """The whole turn: retrieval, the config's composer, the claim check, and the fallback path
    on corpus_insufficient. A model starts only for a role that runs (the extractive composer
    needs none). The turn is printed either way; a failed model call then raises
    `ModelFailure` (exit 2)."""
    cfg = choice.config
    with connect() as conn, RoleClients(cfg, args.model) as roles:
        turn = answer_turn(
            conn, args.question, cfg, emb, load_reranker(cfg), roles,
            enable_fallback=args.fallback, options=CallOptions(variant=args.variant),
        )  # fmt: skip
        turn.models = roles.models()
    assert turn.retrieval is not None
    if args.json:
        data = result_json(turn.retrieval, args.trace)
        print(dumps({**data, "config": choice.describe(), "turn": turn_dict(turn)}))
    else:
        print(
            f"config: {choice.label()}\n"
            + result_text(turn.retrieval, args.trace)
            + "\n\n"
            + render_turn(turn)
        )
    if turn.model_error:
        raise ModelFailure(f"model error, no answer: {turn.model_error}")
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """Run one question and print the config used, the cited notes and the gate verdict (with
    `--answer`, the whole turn: which branch was taken and the painted disclaimer)."""
    args.question = clean_question(args.question)
    choice = chosen_config(args)
    emb = default_embedder()
    choice = for_this_call(choice, args, emb.id)
    if args.answer or args.fallback is not None:  # corpus fallback
        return cmd_answer(args, choice, emb)
    cfg = choice.config
    with connect() as conn:
        res = retrieve(conn, args.question, cfg, emb, load_reranker(cfg), make_planner(cfg.planner))
    if args.json:
        print(dumps({**result_json(res, args.trace), "config": choice.describe()}))
    else:
        print(f"config: {choice.label()}\n" + result_text(res, args.trace))
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
    p.add_argument("question")
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
    p.add_argument("--corpus", nargs="+", help="corpora to search (default: the config's)")
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
        help="remote chat model id for every role when OPENROUTER_API_KEY / OPENAI_* are set "
        "(default: each role's model in the config, else its llm, else the provider's default); "
        "without keys the local SmolLM2-135M",
    )
    # --- end of corpus fallback
    p.set_defaults(func=cmd_ask)
