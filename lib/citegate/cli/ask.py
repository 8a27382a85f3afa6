"""`citegate ask`: one question through the production pipeline, printed for a person or as JSON.

The question is checked first (`plan.clean_question`: no empty, symbol-only or NUL-byte
questions). With `--answer`, a model call that fails (server down, HTTP error) is reported as a
model error and the command exits 2 (`ModelFailure`), never as an insufficient corpus.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from citegate.core.config import PipelineConfig, load_config
from citegate.core.errors import ModelFailure
from citegate.pipeline.plan import clean_question
from citegate.pipeline.render import (
    dumps,
    render_text,
    render_turn,
    result_dict,
    to_json,
    turn_dict,
)

if TYPE_CHECKING:  # corpus fallback
    from citegate.models.embed import Embedder


def cmd_answer(args: argparse.Namespace, cfg: PipelineConfig, emb: Embedder) -> int:
    """The whole turn: retrieval, outline planner, and the fallback path on corpus_insufficient.
    The turn is printed either way; a failed model call then raises `ModelFailure` (exit 2)."""
    from citegate.models.rerank import make_reranker
    from citegate.pipeline.fallback import answer_turn, chat_client
    from citegate.store.db import connect

    model = args.model or (None if cfg.llm == "none" else cfg.llm)
    with connect() as conn, chat_client(model) as client:
        turn = answer_turn(
            conn, args.question, cfg, emb, make_reranker(cfg.reranker), client,
            enable_fallback=args.fallback, variant=args.variant,
        )  # fmt: skip
    assert turn.retrieval is not None
    if args.json:
        data = result_dict(turn.retrieval, args.trace)
        print(dumps({**data, "turn": turn_dict(turn)}))
    else:
        print(render_text(turn.retrieval, args.trace) + "\n\n" + render_turn(turn))
    if turn.model_error:
        raise ModelFailure(f"model error, no answer: {turn.model_error}")
    return 0


# --- end of corpus fallback ------------------------------------------------------------------------


def cmd_ask(args: argparse.Namespace) -> int:
    """Run one question and print the cited notes and the gate verdict (with `--answer`, the
    whole turn: which branch was taken and the painted disclaimer)."""
    from citegate.models.embed import default_embedder
    from citegate.models.rerank import make_reranker
    from citegate.pipeline.plan import make_planner
    from citegate.pipeline.retrieve import retrieve
    from citegate.store.db import connect

    args.question = clean_question(args.question)
    cfg = load_config(Path(args.config)) if args.config else None
    emb = default_embedder()
    cfg = cfg or PipelineConfig(embedder=emb.id)
    if args.corpus:
        cfg = cfg.replace(corpora=args.corpus)
    if args.answer or args.fallback is not None:  # corpus fallback
        return cmd_answer(args, cfg, emb)
    with connect() as conn:
        planner = make_planner(cfg.planner)
        res = retrieve(conn, args.question, cfg, emb, make_reranker(cfg.reranker), planner)
    print(to_json(res, args.trace) if args.json else render_text(res, args.trace))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate ask` to the CLI."""
    p = sub.add_parser("ask", help="retrieve cited notes for a question and show the gate verdict")
    p.add_argument("question")
    p.add_argument("--config", help="PipelineConfig YAML (default: production defaults)")
    p.add_argument("--corpus", nargs="+", help="corpora to search (default: the config's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--trace", action="store_true", help="also print every candidate's fate")
    # --- corpus fallback
    p.add_argument(
        "--answer",
        action="store_true",
        help="run the whole turn (outline planner, corpus fallback) and show the branch taken",
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
        help="remote chat model id when OPENROUTER_API_KEY / OPENAI_* are set (default: the "
        "config's llm, else the provider's default); without keys the local SmolLM2-135M",
    )
    # --- end of corpus fallback
    p.set_defaults(func=cmd_ask)
