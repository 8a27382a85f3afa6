"""`citegate ask`: one question through the production pipeline, printed for a person or as JSON.

The question is checked first (`plan.clean_question`: no empty, symbol-only or NUL-byte
questions). With `--answer`, a model call that fails (server down, HTTP error) is reported as a
model error and the command exits 2 (`ModelFailure`), never as an insufficient corpus.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from citegate.core.config import PipelineConfig, load_config
from citegate.core.errors import ModelFailure
from citegate.pipeline.plan import clean_question
from citegate.pipeline.retrieve import Candidate, RetrievalResult

if TYPE_CHECKING:  # corpus fallback
    from citegate.models.embed import Embedder
    from citegate.pipeline.fallback import Turn


def where(c: Candidate) -> str:
    """Address of a note: its label, or its track span for a transcript."""
    if c.kind == "track_transcript":
        return f"{c.track_id} {c.start_ms / 1000:.1f}–{c.end_ms / 1000:.1f}s"  # type: ignore[operator]
    return c.addr_label or c.frag_key


def render_text(res: RetrievalResult, show_trace: bool = False) -> str:
    """The notes (kind, address, cosine, rerank) and the gate's verdict per round."""
    lines = [
        f"question: {res.trace.question}",
        f"decision: {res.decision}  "
        f"(max cosine {res.max_score:.3f}; reranker {res.trace.reranker_id})",
    ]
    for r in res.rounds:
        g = r.gate
        lines.append(
            f"  round {r.round}: max={g.max_score:.3f} lectures={g.lectures} "
            f"sufficient={g.sufficient} good_enough={g.good_enough} bail_out={g.bail_out}"
        )
    lines.append(f"{len(res.notes)} notes:")
    for i, c in enumerate(res.notes, 1):
        rr = "-" if c.rerank_score is None else f"{c.rerank_score:.3f}"
        snippet = " ".join(c.text.split())[:90]
        lines.append(
            f"{i:>3}. [{c.kind}] {where(c)}  cos={c.score:.3f} rerank={rr}\n     {snippet}"
        )
    if show_trace:
        frame = res.trace.to_frame()
        frame["stage"] = [res.stage.get(i, "") for i in frame["fragment_id"]]
        cols = [
            "fragment_id",
            "kind",
            "addr_label",
            "score",
            "rerank_score",
            "round",
            "lanes",
            "stage",
        ]
        lines.append(frame[cols].to_string(index=False, max_colwidth=40))
    return "\n".join(lines)


def trace_rows(res: RetrievalResult) -> list[dict[str, object]]:
    """Every candidate's fate, for `--trace --json`: id, kind, address, lanes, cosine, rerank
    score, the round that found it and the stage that kept or dropped it (last round run)."""
    stage = res.stage
    return [
        {
            "fragment_id": c.fragment_id,
            "kind": c.kind,
            "address": where(c),
            "lanes": list(c.lanes),
            "score": c.score,
            "rerank_score": c.rerank_score,
            "round": c.round,
            "stage": stage.get(c.fragment_id, ""),
        }
        for c in res.trace.candidates
    ]


def to_json(res: RetrievalResult, show_trace: bool = False) -> str:
    """Machine-readable result: notes, decision, rounds, timings (and with `show_trace`, every
    candidate's fate under "trace")."""
    notes = [
        {
            "fragment_id": c.fragment_id,
            "kind": c.kind,
            "address": where(c),
            "track_id": c.track_id,
            "start_ms": c.start_ms,
            "end_ms": c.end_ms,
            "score": c.score,
            "rerank_score": c.rerank_score,
            "text": c.text,
        }
        for c in res.notes
    ]
    rounds = [{"round": r.round, **r.gate.__dict__} for r in res.rounds]
    data: dict[str, object] = {
        "question": res.trace.question,
        "decision": res.decision,
        "notes": notes,
        "rounds": rounds,
        "timings": res.trace.timings,
        "embedder": res.trace.embedder_id,
        "reranker": res.trace.reranker_id,
    }
    if show_trace:
        data["trace"] = trace_rows(res)
    return json.dumps(data, ensure_ascii=False, indent=2)


# --- corpus fallback: `citegate ask --answer` (see citegate.pipeline.fallback) ----------------------------


def render_turn(turn: Turn) -> str:
    """The branch taken (grounded / fallback / decline), why, what the user is shown, the
    painted disclaimer, probes, admitted citations and model usage."""
    if turn.model_error:
        why = f"  ({turn.reason})"
    else:
        why = f"  (corpus insufficient: {turn.reason})" if turn.corpus_insufficient else ""
    lines = [
        f"branch: {turn.branch}{why}",
        f"outline: {len(turn.theses)} theses ({turn.outline_status})",
    ]
    if turn.fallback is not None:
        fa = turn.fallback
        lines.append(f"fallback model: {fa.model}  variant {fa.variant}  parse {fa.status}")
        lines.append(f"in scope (model): {fa.in_scope}")
    if turn.disclaimer:
        lines.append(f"painted disclaimer: {turn.disclaimer}")
    if turn.probes:
        lines.append("probes: " + " | ".join(turn.probes))
        lines.append(f"admitted citations: {len(turn.admitted)} (first 8 shown)")
        for c in turn.admitted[:8]:
            lines.append(f"  admitted [{c.kind}] {where(c)}  cos={c.score:.3f}")
    lines.append(
        "usage: {calls:.0f} calls, {prompt_tokens:.0f}+{completion_tokens:.0f} tokens, "
        "{latency_s:.1f} s".format(**turn.usage)
    )
    lines += ["", turn.text]
    return "\n".join(lines)


def turn_dict(turn: Turn) -> dict[str, object]:
    """Machine-readable fallback part of a turn."""
    fa = turn.fallback
    return {
        "branch": turn.branch,
        "corpus_insufficient": turn.corpus_insufficient,
        "reason": turn.reason,
        "model_error": turn.model_error,
        "theses": list(turn.theses),
        "outline_status": turn.outline_status,
        "text": turn.text,
        "disclaimer": turn.disclaimer,
        "probes": list(turn.probes),
        "admitted": [
            {"fragment_id": c.fragment_id, "address": where(c), "score": c.score}
            for c in turn.admitted
        ],
        "fallback": None
        if fa is None
        else {
            "model": fa.model,
            "variant": fa.variant,
            "status": fa.status,
            "in_scope": fa.in_scope,
            "model_text": fa.model_text,
        },
        "usage": turn.usage,
    }


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
        data = json.loads(to_json(turn.retrieval, args.trace))
        print(json.dumps({**data, "turn": turn_dict(turn)}, ensure_ascii=False, indent=2))
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
