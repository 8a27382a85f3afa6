"""The bench's report: the numbers as plain-text tables for stdout, and as JSON on disk."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citegate.core import paths
from citegate.research.bench.answer import answer_rows
from citegate.research.bench.common import STAGES, ratio
from citegate.research.bench.load import load_rows
from citegate.research.bench.replay import VECTOR_REPEATS
from citegate.research.bench.stream import stream_rows
from citegate.research.gate_bench import gate_rows


def _fmt(v: Any) -> str:
    """One cell: yes/NO for a bool, a float to about three significant digits."""
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with a title line."""
    cells = [list(map(str, header))] + [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    rule = "-" * len(line(cells[0]))
    return "\n".join([f"\n{title}", rule, line(cells[0]), rule, *map(line, cells[1:]), rule])


def _runs(values: Sequence[float]) -> str:
    """Several numbers in one cell, one decimal each."""
    return " / ".join(f"{v:.1f}" for v in values)


def _verdict(goal: dict[str, Any]) -> str:
    """yes / NO / inconclusive for a goal row (older results have no "verdict")."""
    if goal.get("verdict") == "inconclusive" or goal["met"] is None:
        return "inconclusive"
    return _fmt(bool(goal["met"]))


def _spread_cell(s: dict[str, float]) -> str:
    """A `_spread` as one cell: min–max, then the interquartile range."""
    return f"{s['min']:.3g}–{s['max']:.3g} (IQR {s['q1']:.3g}–{s['q3']:.3g})"


def _ingest_table(res: dict[str, Any]) -> str:
    """Part 1: ingest vs raw embedder, with every run and the spread."""
    i = res["ingest"]
    verdict = i["inconclusive_because"] or "conclusive"
    return _table(
        f"1. Ingest vs raw embedder ({i['fragments']} gita fragments, fresh cache, "
        f"{i['pairs']} interleaved pairs: raw, ingest, raw, ingest, ...)",
        ["measure", "value"],
        [
            ["raw embed_passages, frag/s (median)", i["raw_frag_per_s"]],
            ["  every raw run, frag/s", _runs(i["raw_frag_per_s_runs"])],
            ["  raw spread, frag/s: min–max (IQR)", _spread_cell(i["raw_frag_per_s_spread"])],
            ["ingest (embed + write), frag/s (median)", i["ingest_frag_per_s"]],
            ["  every ingest run, frag/s", _runs(i["ingest_frag_per_s_runs"])],
            [
                "  ingest spread, frag/s: min–max (IQR)",
                _spread_cell(i["ingest_frag_per_s_spread"]),
            ],
            ["ingest / raw (median of per-pair ratios)", i["ingest_over_raw"]],
            ["  every pair's ratio", " / ".join(f"{v:.3f}" for v in i["ingest_over_raw_pairs"])],
            ["  ratio spread: min–max (IQR)", _spread_cell(i["ingest_over_raw_spread"])],
            ["  ratio IQR / median", i["ingest_over_raw_iqr_share"]],
            ["  verdict", verdict],
            ["ingest / raw (best of each, for comparison)", i["ingest_over_raw_best"]],
            ["ingest / raw (means, for comparison)", i["ingest_over_raw_mean"]],
            [
                "embedder's share of ingest wall time (median run)",
                i["embedder_share_of_ingest_median"],
            ],
        ],
    )


def _recall_rows(r: dict[str, Any]) -> list[list[Any]]:
    """Part 2's rows: one per kind group, then overall."""
    return [
        [
            name,
            s["queries"],
            s["recall_at_16"],
            s["recall_at_16_tie_aware"],
            f"{s['hnsw_index_scans']}/{s['queries']}",
            s["ann"]["p50_ms"],
            s["ann"]["p95_ms"],
            s["exact"]["p50_ms"],
            s["exact"]["p95_ms"],
            s["exact_over_ann_p50"],
        ]
        for name, s in [*r["groups"].items(), ("overall", r["overall"])]
    ]


def _sweep_table(r: dict[str, Any]) -> str:
    """Part 2's ef_search sweep, as planned and with the HNSW index forced."""
    rows = [
        [f"{ef}{' (session)' if ef == str(r['ef_search']) else ''}"]
        + [
            m[mode][key]
            for mode in ("planner", "hnsw_forced")
            for key in ("recall_at_16", "via_hnsw", "p50_ms")
        ]
        for ef, m in r["ef_sweep"].items()
    ]
    header = [
        "ef_search",
        "recall@16",
        "via HNSW",
        "p50 ms",
        "forced: recall@16",
        "via HNSW",
        "p50 ms",
    ]
    return _table(
        "   overall recall@16 by hnsw.ef_search: as the planner runs it, and with the HNSW index "
        "forced (enable_seqscan/bitmapscan/sort off)",
        header,
        rows,
    )


def _recall_table(res: dict[str, Any]) -> str:
    """Part 2: HNSW vs exact per kind group, a note on exact scans, then the sweep."""
    r = res["recall"]
    title = (
        f"2. Dense lane, HNSW vs exact top-{r['k']} ({res['corpus_fragments']} fragments, "
        f"ef_search={r['ef_search']}, iterative_scan={r['iterative_scan']}); latencies in ms"
    )
    header = ["group", "queries", "recall@16", "tie-aware", "via HNSW"]
    header += ["ann p50", "ann p95", "exact p50", "exact p95", "exact/ann"]
    table = _table(title, header, _recall_rows(r))
    o = r["overall"]
    if o["hnsw_index_scans"] < o["queries"]:
        table += (
            f"\n   note: {o['queries'] - o['hnsw_index_scans']} of {o['queries']} 'ANN' queries were "
            "planned as exact scans (no HNSW index scan); their recall is 1 by construction"
        )
    return table + _sweep_table(r)


def _retrieve_table(res: dict[str, Any]) -> str:
    """Part 3: retrieve() latency by stage, cold and warm."""
    cold, warm = res["retrieve_cold"], res["retrieve_warm"]
    rows = [
        [s, cold[s]["p50_ms"], cold[s]["p95_ms"], warm[s]["p50_ms"], warm[s]["p95_ms"]]
        for s in (*STAGES, "total", "wall")
    ]
    title = (
        f"3. retrieve() latency per question by stage, ms ({cold['questions']} questions; "
        "cold = fresh query cache, the embedder runs; warm = the same questions again)"
    )
    table = _table(title, ["stage", "cold p50", "cold p95", "warm p50", "warm p95"], rows)
    if cold["missing_stages"]:
        table += f"\n   stages missing from trace.timings: {cold['missing_stages']}"
    return table


def _lanes_table(res: dict[str, Any]) -> str:
    """Part 3's lanes: each lane's latency right after ingest and after VACUUM."""
    before, after = res["lanes_after_ingest"], res["lanes"]
    rows = [
        [n, b["p50_ms"], b["p95_ms"], after[n]["p50_ms"], after[n]["p95_ms"]]
        + [ratio(b["p50_ms"], after[n]["p50_ms"])]
        for n, b in before.items()
    ]
    return _table(
        "   where the lanes stage goes: one call of each lane at lane_k depth, then one question's "
        "3 texts (both rounds) as retrieve runs them (one batched statement) and one statement per "
        "lane and text, ms; right after ingest vs after VACUUM ANALYZE",
        ["lane", "ingest p50", "ingest p95", "vacuum p50", "vacuum p95", "p50 ratio"],
        rows,
    )


def _replay_table(res: dict[str, Any]) -> str:
    """Part 4: scalar and vectorised replay against retrieve."""
    p = res["replay"]
    return _table(
        f"4. replay() over {p['configs']} cut-only configs × {p['questions']} questions, scalar "
        "and vectorised (replay_many: pack, then every config; the rate counts one pack "
        f"and one pass, medians of {VECTOR_REPEATS}, the sweep rate the pass alone)",
        ["measure", "value"],
        [
            ["scalar replays/s (configs × questions)", p["replay_per_s"]],
            ["vectorised replays/s, pack included", p["vector_per_s"]],
            ["vectorised replays/s, sweep (packed)", p["vector_sweep_per_s"]],
            [
                "pack ms / one vectorised pass ms",
                _runs([1000 * p["pack_s"], 1000 * float(np.median(p["vector_pass_s"]))]),
            ],
            ["vectorised / scalar", p["vector_over_scalar"]],
            [
                "retrieves/s, warm / cold",
                _runs([p["retrieve_per_s_warm"], p["retrieve_per_s_cold"]]),
            ],
            ["scalar replay / retrieve (warm)", p["replay_over_retrieve_warm"]],
            ["scalar replay / retrieve (cold)", p["replay_over_retrieve_cold"]],
            ["vectorised replay / retrieve (warm)", p["vector_over_retrieve_warm"]],
            ["vectorised replay / retrieve (cold)", p["vector_over_retrieve_cold"]],
            ["vectorised == scalar (share of configs × questions)", p["vector_equals_scalar"]],
            ["replay(base cfg) gives retrieve's notes", p["replay_matches_retrieve"]],
        ],
    )


def render(res: dict[str, Any]) -> str:
    """The whole report as readable text."""
    env = res["environment"]
    parts = [
        _ingest_table(res),
        _recall_table(res),
        _retrieve_table(res),
        _lanes_table(res),
        _replay_table(res),
        _table(
            "4b. The learned gate's cost: warm retrieve() under production's learned gate vs the "
            "coverage gate, same reranker, interleaved",
            ["measure", "value"],
            gate_rows(res),
        ),
        _table(
            "4c. The answer stage after a warm retrieve: the extractive composer and the claim "
            "check in production's support mode, ms (an embedding cache fresh for this part: "
            "what the composer embeds, the check may reuse)",
            ["step", "p50", "p95"],
            answer_rows(res),
        ),
        _table(
            "4d. Load: production's Service answering under concurrent callers (fallback off), "
            "every caller the same questions from its own offset, ms per call",
            ["callers", "calls", "errors", "p50", "p95", "calls/s", "CPU ms/call"],
            load_rows(res),
        ),
        _table(
            "4e. Streaming: production's Service, a turn streamed against the same turn answered "
            "whole, interleaved per question (fallback off, extractive composer), ms",
            ["measure", "p50", "p95"],
            stream_rows(res),
        ),
        _table("5. Environment", ["fact", "value"], [[k, str(v)] for k, v in env.items()]),
        _table(
            "Goals (ratios measured in this run; vectorised replay, pack included, against the warm "
            "retrieve)",
            ["ratio", "value", "goal", "met", "note"],
            [[k, g["value"], g["goal"], _verdict(g), g["note"]] for k, g in res["goals"].items()],
        ),
    ]
    return "\n".join(parts) + f"\n\nbench took {res['elapsed_s']:.1f} s\n"


def _jsonable(v: Any) -> Any:
    """Plain JSON values; non-finite floats become null."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_json(res: dict[str, Any], path: Path) -> None:
    """Write the numbers as JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(res), indent=2) + "\n", encoding="utf-8")


def default_out() -> Path:
    """Where `citegate bench` writes its numbers unless told: `var/bench/bench.json`."""
    return paths.var_dir() / "bench" / "bench.json"
