"""`citegate ask`: one question through the production pipeline, printed for a person or as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from citegate.config import PipelineConfig, load_config
from citegate.retrieve import Candidate, RetrievalResult


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


def to_json(res: RetrievalResult) -> str:
    """Machine-readable result: notes, decision, rounds, timings."""
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
    return json.dumps(
        {
            "question": res.trace.question,
            "decision": res.decision,
            "notes": notes,
            "rounds": rounds,
            "timings": res.trace.timings,
            "embedder": res.trace.embedder_id,
            "reranker": res.trace.reranker_id,
        },
        ensure_ascii=False,
        indent=2,
    )


def cmd_ask(args: argparse.Namespace) -> int:
    """Run one question and print the cited notes and the gate verdict."""
    from citegate.db import connect
    from citegate.embed import default_embedder
    from citegate.rerank import make_reranker
    from citegate.retrieve import retrieve

    emb = default_embedder()
    cfg = load_config(Path(args.config)) if args.config else PipelineConfig(embedder=emb.id)
    if args.corpus:
        cfg = cfg.replace(corpora=args.corpus)
    with connect() as conn:
        res = retrieve(conn, args.question, cfg, emb, make_reranker(cfg.reranker))
    print(to_json(res) if args.json else render_text(res, args.trace))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate ask` to the CLI."""
    p = sub.add_parser("ask", help="retrieve cited notes for a question and show the gate verdict")
    p.add_argument("question")
    p.add_argument("--config", help="PipelineConfig YAML (default: production defaults)")
    p.add_argument("--corpus", nargs="+", help="corpora to search (default: the config's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--trace", action="store_true", help="also print every candidate's fate")
    p.set_defaults(func=cmd_ask)
