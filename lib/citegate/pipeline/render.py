"""How a retrieval result and a whole turn are shown: text for a person, JSON for a program.

The pipeline's own reply text uses `where` (a note's address), and `citegate ask` prints
`render_text` / `result_dict` (retrieval) and `render_turn` / `turn_dict` (the `--answer` turn),
JSON through `dumps`.
Plain functions of the result objects, no I/O: the CLI only chooses which one to print.

Text that comes from users' files, the corpus or a model (the question, an address, a passage, a
note's body, the answer, a claim) is shown through `core.terminal.visible`: a control or bidi
character in it is written as its escape, never obeyed by the terminal. A field of one line
loses its line breaks too (`_field`); the text output as a whole keeps only newline and tab, and
the JSON output writes such characters as JSON escapes, so it parses to the stored text.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from citegate.core.terminal import visible
from citegate.core.types import MemoryOutcome, Stage
from citegate.pipeline.cut import verse_group
from citegate.pipeline.retrieve import Candidate, RetrievalResult

if TYPE_CHECKING:  # type only: turn imports `where` from here
    from citegate.pipeline.turn import Turn, TurnEvent


def where(c: Candidate) -> str:
    """Address of a note: its label, or its track span for a transcript."""
    if c.kind == "track_transcript":
        return f"{c.track_id} {c.start_ms / 1000:.1f}–{c.end_ms / 1000:.1f}s"  # type: ignore[operator]
    return c.addr_label or c.frag_key


def _field(text: object) -> str:
    """One field of one line of output: every control, bidi and line-break character escaped."""
    return visible(str(text), keep="")


def render_text(res: RetrievalResult, show_trace: bool = False) -> str:
    """The notes (kind, address, cosine, rerank) and the gate's verdict per round."""
    lines = [
        f"question: {_field(res.trace.question)}",
        f"decision: {res.decision}  "
        f"(max cosine {res.max_score:.3f}; reranker {res.trace.reranker_id})",
    ]
    for r in res.rounds:
        g = r.gate
        lines.append(
            f"  round {r.round}: max={g.max_score:.3f} lectures={g.lectures} "
            f"sufficient={g.sufficient} good_enough={g.good_enough} bail_out={g.bail_out}"
        )
    if res.memory is not None:
        lines += memory_lines(res.memory)
    lines.append(f"{len(res.notes)} notes:")
    for i, c in enumerate(res.notes, 1):
        rr = "-" if c.rerank_score is None else f"{c.rerank_score:.3f}"
        snippet = _field(" ".join(c.text.split())[:90])
        lines.append(
            f"{i:>3}. [{c.kind}] {_field(where(c))}  cos={c.score:.3f} rerank={rr}\n     {snippet}"
        )
    if show_trace:
        lines.append(trace_table(res))
    return visible("\n".join(lines))


def memory_lines(mem: MemoryOutcome) -> list[str]:
    """What curated memory did: the policy and why, then each note that took part and how."""
    lines = [f"memory: {mem.policy} policy ({mem.reason})"]
    lines += [
        f"  note {_field(u.key)} [{u.kind}] {u.role}: similarity {u.similarity:.3f} via {u.via}"
        for u in mem.uses
    ]
    return lines


def trace_table(res: RetrievalResult) -> str:
    """Every candidate's fate as a text table (the `--trace` part of `render_text`)."""
    frame = res.trace.to_frame()
    frame["stage"] = [res.stage.get(i, "") for i in frame["fragment_id"]]
    cols = ["fragment_id", "kind", "addr_label", "score", "rerank_score", "round", "lanes", "stage"]
    return visible(frame[cols].to_string(index=False, max_colwidth=40), keep="\n")


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


def grouped_passages(res: RetrievalResult) -> dict[int, list[dict[str, object]]]:
    """Note fragment id -> the `kept:grouped` passages of its verse (id and source, rank order)."""
    by_group = {verse_group(c): c.fragment_id for c in res.notes}
    out: dict[int, list[dict[str, object]]] = {}
    for c in sorted(res.trace.candidates, key=Candidate.rank_key):
        if res.stage.get(c.fragment_id) == Stage.KEPT_GROUPED and verse_group(c) in by_group:
            entry = {"fragment_id": c.fragment_id, "source_id": c.source_id}
            out.setdefault(by_group[verse_group(c)], []).append(entry)
    return out


def result_dict(res: RetrievalResult, show_trace: bool = False) -> dict[str, object]:
    """Machine-readable result: notes, decision, rounds, timings (and with `show_trace`, every
    candidate's fate under "trace"). A note of one verse (`verse_notes`) lists under "grouped"
    the other passages of its verse it cites through it (fragment id and source)."""
    grouped = grouped_passages(res)
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
            "grouped": grouped.get(c.fragment_id, []),
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
        "memory": asdict(res.memory) if res.memory is not None else None,
    }
    if show_trace:
        data["trace"] = trace_rows(res)
    return data


def dumps(data: object) -> str:
    """The JSON text every machine-readable output uses (UTF-8 kept, indented), with control
    and bidi characters written as JSON escapes: safe on a terminal, the same data parsed."""
    return visible(json.dumps(data, ensure_ascii=False, indent=2), as_json=True)


def render_turn(turn: Turn) -> str:
    """The branch taken (grounded / fallback / decline), why, the composer, what the user is
    shown, the painted disclaimer, probes, admitted citations, model usage and the claim check."""
    if turn.model_error:
        why = f"  ({turn.reason})"
    else:
        why = f"  (corpus insufficient: {turn.reason})" if turn.corpus_insufficient else ""
    lines = [f"branch: {turn.branch}{_field(why)}", composer_line(turn)]
    if turn.models:
        roles = ", ".join(f"{r} {m}" for r, m in turn.models.items())
        lines.append(f"role models (each started only if its role runs): {roles}")
    if turn.composer_skipped:
        lines.append(f"composer not run: {_field(turn.composer_skipped)}")
    if turn.fallback_skipped:
        lines.append(f"fallback not run: {_field(turn.fallback_skipped)}")
    for d in turn.dropped:
        lines.append(f"dropped model output: {_field(d)}")
    if turn.fallback is not None:
        fa = turn.fallback
        lines.append(f"fallback model: {fa.model}  variant {fa.variant}  parse {fa.status}")
        if turn.fallback_unvetted:
            lines.append("fallback model: run on request; it has passed no bar (notebook 04)")
        lines.append(f"in scope (model): {fa.in_scope}")
    if turn.disclaimer:
        lines.append(f"painted disclaimer: {_field(turn.disclaimer)}")
    for c in turn.pointers:
        lines.append(f"pointer [{c.kind}] {_field(where(c))}  cos={c.score:.3f} (not cited)")
    if turn.probes:
        lines.append("probes: " + " | ".join(map(_field, turn.probes)))
        lines.append(f"admitted citations: {len(turn.admitted)} (first 8 shown)")
        for c in turn.admitted[:8]:
            lines.append(f"  admitted [{c.kind}] {_field(where(c))}  cos={c.score:.3f}")
    lines.append(
        "usage: {calls:.0f} calls, {prompt_tokens:.0f}+{completion_tokens:.0f} tokens, "
        "{latency_s:.1f} s".format(**turn.usage)
    )
    lines += ["", turn.text]
    if turn.check is not None:
        lines += ["", *check_lines(turn)]
    return visible("\n".join(lines))


def composer_line(turn: Turn) -> str:
    """Which composer wrote the answer and how its call went."""
    if turn.composer == "outline" or (not turn.composer and turn.outline_status):
        return f"composer: outline, {len(turn.theses)} theses ({turn.outline_status})"
    status = turn.composed_status or turn.outline_status or "not run"
    abstained = f", abstained ({turn.abstained})" if turn.abstained else ""
    return f"composer: {turn.composer or '-'} ({status}){abstained}"


def check_lines(turn: Turn) -> list[str]:
    """The claim check for a person: totals, each claim's verdict and score, removed claims,
    and the notes offered but cited by no claim (dimmed: retrieved, not used)."""
    check = turn.check
    assert check is not None
    c = check.counts
    lines = [
        f"claim check: {len(check.verdicts)} claims: {c.get('supported', 0)} supported, "
        f"{c.get('unsupported', 0)} unsupported, {c.get('uncited', 0)} uncited, "
        f"{c.get('fabricated', 0)} fabricated ({c.get('fabricated_markers', 0)} never-offered "
        f"markers); support >= {check.threshold:.4f} ({check.scorer}); policy {check.policy}; "
        f"{check.elapsed_ms:.0f} ms"
    ]
    labels = {str(n): _field(where(n_c)) for n, n_c in enumerate(turn.admitted or turn.notes, 1)}
    for n, v in enumerate(check.verdicts, 1):
        score = "-" if v.score is None else f"{v.score:.3f}"
        cited = ", ".join(labels.get(k, _field(k)) for k in v.cited) or "-"
        gone = "  (removed)" if v in check.removed else ""
        fab = f"  never offered: {_field(', '.join(v.fabricated))}" if v.fabricated else ""
        lines.append(f"  {n}. {v.status:<11} score={score}  cites {cited}{fab}{gone}")
        lines.append(f"     {_field(v.text[:120])}")
    if check.uncited_notes:
        unused = ", ".join(f"[{_field(k)}] {labels.get(k, _field(k))}" for k in check.uncited_notes)
        lines.append(f"retrieved, not cited: {unused}")
    return lines


def turn_dict(turn: Turn) -> dict[str, object]:
    """Machine-readable turn: branch, composer, the claim check and the fallback part."""
    fa = turn.fallback
    return {
        "branch": turn.branch,
        "corpus_insufficient": turn.corpus_insufficient,
        "reason": turn.reason,
        "model_error": turn.model_error,
        "theses": list(turn.theses),
        "outline_status": turn.outline_status,
        "composer": turn.composer,
        "composed": turn.composed,
        "composed_status": turn.composed_status,
        "abstained": turn.abstained,
        "models": dict(turn.models),
        "check": None if turn.check is None else turn.check.to_dict(),
        "text": turn.text,
        "disclaimer": turn.disclaimer,
        "probes": list(turn.probes),
        "dropped": list(turn.dropped),
        "fallback_skipped": turn.fallback_skipped,
        "composer_skipped": turn.composer_skipped,
        "fallback_unvetted": turn.fallback_unvetted,
        "pointers": [
            {"fragment_id": c.fragment_id, "address": where(c), "score": c.score}
            for c in turn.pointers
        ],
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


def event_lines(event: TurnEvent) -> list[str]:
    """A streamed event for a person, as soon as it arrives (`ask --answer --stream`): the
    decision and the gate, the notes, the disclaimer, each claim with its verdict, the text
    shown, the branch; each line led by the milliseconds since the turn began."""
    d, at = event.data, f"[{event.at_ms:7.1f} ms]"
    kind = str(event.kind)
    if kind == "decision":
        gate = f"  (gate {d['gate']}: {_field(d['reason'])})" if "gate" in d else ""
        return [f"{at} decision: {d['decision']}{gate}"]
    if kind == "notes":
        notes = d["notes"]
        assert isinstance(notes, list)
        return [f"{at} notes: {len(notes)}"] + [
            f"  {n['n']}. [{n['kind']}] {_field(n['address'])}  score={n['score']:.3f}"
            for n in notes
        ]
    if kind == "disclaimer":
        return [f"{at} disclaimer: {_field(d['text'])}"]
    if kind == "claim":
        score = "-" if d["score"] is None else f"{d['score']:.3f}"
        cites = ", ".join(_field(c) for c in d["cites"]) or "-"  # type: ignore[attr-defined]
        return [f"{at} claim {d['n']}: {d['status']} score={score} cites {cites}",
                f"  {_field(d['text'])}"]  # fmt: skip
    if kind == "text":
        return [f"{at} text:", visible(str(d["text"]))]
    return [f"{at} branch: {d['branch']}" + (f"  ({_field(d['reason'])})" if d["reason"] else "")]


def event_json(event: TurnEvent) -> str:
    """A streamed event as one JSON line (the `done` event's turn as `turn_dict` gives it), its
    control and bidi characters written as JSON escapes."""
    data: dict[str, object] = {"event": str(event.kind), "at_ms": round(event.at_ms, 2)}
    data.update(event.data)
    if event.turn is not None:
        data["turn"] = turn_dict(event.turn)
    line = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return visible(line, as_json=True)


__all__ = [
    "dumps",
    "event_json",
    "event_lines",
    "render_text",
    "render_turn",
    "result_dict",
    "trace_rows",
    "trace_table",
    "turn_dict",
    "where",
]
