"""The scale bench's report: the Markdown tables `citegate bench-scale` prints and the
scale.json / scale.png it writes, from the report dict `scale_bench.summarise` builds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from citegate.research import scale_corpus, scale_goals, scale_production


def render(rep: dict[str, Any]) -> str:
    """The growth table as Markdown, with slopes and any extrapolation stated."""
    st = rep["settings"]
    lines = [
        f"Scale bench (ef_search={st['ef_search']}, iterative_scan={st['iterative_scan']}, "
        f"{st['queries']} queries, k={st['k']}). {rep['method']}. Each group's HNSW graph and "
        "the session's ef_search are what an ingest of that many rows leaves "
        "(`db.graph_for`, `db.search_settings`).",
        "",
        "| size | group | graph | ef_search | load s | build s | p50 ms | p95 ms | exact ms "
        "| recall@16 | cos gap | HNSW share |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rep["sizes"]:
        for g, m in r["groups"].items():
            graph = r.get("index_graphs", {}).get(g, "m16/efc64")
            lines.append(
                f"| {r['size']:,} | {g} | {graph} | {r.get('ef_search') or st['ef_search']} | "
                f"{r['load_s']:.1f} | {r['build_s']:.1f} | "
                f"{m['p50_ms']:.2f} | {m['p95_ms']:.2f} | {m['exact_mean_ms']:.2f} | "
                f"{m['recall_at_16']:.3f} | {m['cos_gap']:.4f} | {m['hnsw_share']:.2f} |"
            )
    lines.append("")
    lines.append(
        "log-log slopes vs size: " + ", ".join(f"{k} {v:.2f}" for k, v in rep["slopes"].items())
    )
    for n, sec in rep["build_s_extrapolated"].items():
        lines.append(
            f"NOT RUN: {int(n):,} fragments; HNSW build extrapolated from the measured slope "
            f"({rep['slopes']['build_s']:.2f}): {sec:.0f} s"
        )
    more = [
        *scale_goals.goal_lines(rep),
        *_nn_lines(rep),
        *_lanes_lines(rep),
        *_tier_lines(rep),
        *_retrieve_lines(rep),
        *_sweep_lines(rep),
        *_halfvec_lines(rep),
        *_graph_lines(rep),
    ]
    return "\n".join([*lines, *more])


def _nn_cells(nn: dict[str, float]) -> str:
    """One profile's quantiles, tie shares, median gap and tied share as table cells."""
    cells = [f"{nn[f'p{q}']:.3f}" for q in scale_corpus.QUANTILES]
    cells += [f"{nn[f'above_{c}']:.3f}" for c in scale_corpus.TIE_COSINES]
    cells += [f"{nn['gap16_p50']:.3f}", f"{nn['tied16']:.3f}"]
    return " | ".join(cells)


def _nn_lines(rep: dict[str, Any]) -> list[str]:
    """The nearest-neighbour cosine profile of the real corpus beside each synthetic size's."""
    rows = [r for r in rep["sizes"] if r.get("nn", {}).get("p50") is not None]
    real = rep.get("nn_real") or {}
    if not rows and not real:
        return []
    cols = [f"p{q}" for q in scale_corpus.QUANTILES]
    cols += [f"NN > {c}" for c in scale_corpus.TIE_COSINES] + ["gap 1st/16th", "tied top-16"]
    title = (
        f"Nearest-neighbour cosine (`{rep['settings']['corpus']}` corpus; a sample of up to "
        f"{scale_corpus.NN_SAMPLE:,} rows, exact): quantiles of the cosine to the nearest other "
        "row; the share with it above 0.99 / 0.98; the median relative gap (c1 - c16) / "
        "(1 - c16) between the nearest and the 16th nearest (near 0 when the 16 nearest are "
        f"equidistant, as noisy copies of one vector are); the share with a gap under "
        f"{scale_corpus.TIE_GAP} (a tied top-16)"
    )
    lines = ["", title, "", "| corpus | rows | " + " | ".join(cols) + " |"]
    lines.append("|---|---:|" + "---:|" * len(cols))
    if real.get("p50") is not None:
        lines.append(f"| real gita | {int(real['n']):,} | {_nn_cells(real)} |")
    for r in rows:
        lines.append(f"| synthetic | {r['size']:,} | {_nn_cells(r['nn'])} |")
    return lines


def _halfvec_lines(rep: dict[str, Any]) -> list[str]:
    """The dense lane over halfvec indexes beside the float lane, per size and group."""
    rows = [r for r in rep["sizes"] if r.get("halfvec")]
    if not rows:
        return []
    title = (
        "Dense lane over halfvec indexes (`--halfvec`: 2 bytes a dimension, scored against the "
        "same exact float top-16; hits scored by their float cosine), beside the float lane"
    )
    lines = ["", title, "", "| size | group | float p50 / p95 ms | halfvec p50 / p95 ms | "
             "float recall@16 | halfvec recall@16 | halfvec cos gap | halfvec HNSW share |"]  # fmt: skip
    lines.append("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        h = r["halfvec"]
        for g, m in h["groups"].items():
            f = r["groups"][g]
            lines.append(
                f"| {r['size']:,} | {g} | {f['p50_ms']:.2f} / {f['p95_ms']:.2f} | "
                f"{m['p50_ms']:.2f} / {m['p95_ms']:.2f} | {f['recall_at_16']:.3f} | "
                f"{m['recall_at_16']:.3f} | {m['cos_gap']:.4f} | {m['hnsw_share']:.2f} |"
            )
        lines.append(
            f"| {r['size']:,} | indexes | float {h['float_index_mb']:.1f} MB | halfvec "
            f"{h['index_mb']:.1f} MB, built in {h['build_s']:.1f} s (float {r['build_s']:.1f} s) "
            "| | | | |"
        )
    return lines


def _tier_lines(rep: dict[str, Any]) -> list[str]:
    """The lexical lane per budget and by BM25 beside the lane without a budget, and the
    retrieve with the first budget and with BM25."""
    rows = [r for r in rep["sizes"] if r.get("lexical_tiers") or r.get("bm25")]
    if not rows:
        return []
    title = (
        "Lexical lane with a budget (the rarest terms first, `lexical_budget`) and by BM25 "
        "(`lexical_backend: bm25`, tantivy Block-WAND over PostgreSQL's lexemes; its index build "
        "s and size in the postings column): p50 / p95 ms, overlap@16 with the lane without a "
        "budget, mean postings ranked; then a full retrieve with the first budget and with BM25 "
        "(BM25 again: the same retrieves asked a second time, every page they read cached)"
    )
    lines = ["", title, "", "| size | budget | lexical ms | overlap@16 | postings | retrieve ms |"]
    lines.append("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        budgets = rep["settings"]["lexical_budgets"]
        first = str(budgets[0]) if budgets else None
        lex = r["text_lanes"]["lexical"]
        whole = r["retrieve"]["total"]
        lines.append(
            f"| {r['size']:,} | none | {lex['p50_ms']:.1f} / {lex['p95_ms']:.1f} | 1.000 | "
            f"| {whole['p50_ms']:.1f} / {whole['p95_ms']:.1f} |"
        )
        for budget, m in r.get("lexical_tiers", {}).items():
            tiered = r["retrieve_tiered"]["total"] if budget == first else None
            cell = f"{tiered['p50_ms']:.1f} / {tiered['p95_ms']:.1f}" if tiered else ""
            lines.append(
                f"| {r['size']:,} | {int(budget):,} | {m['p50_ms']:.1f} / {m['p95_ms']:.1f} | "
                f"{m['overlap_at_16']:.3f} | {m['postings_mean']:.0f} | {cell} |"
            )
        if b := r.get("bm25"):
            whole = r["retrieve_bm25"]["total"]
            lines.append(
                f"| {r['size']:,} | BM25 | {b['p50_ms']:.1f} / {b['p95_ms']:.1f} | "
                f"{b['overlap_at_16']:.3f} | index {b['build_s']:.1f} s, {b['index_mb']:.0f} MB | "
                f"{whole['p50_ms']:.1f} / {whole['p95_ms']:.1f} |"
            )
        if again := r.get("retrieve_bm25_again"):
            whole = again["total"]
            lines.append(
                f"| {r['size']:,} | BM25 again | | | | {whole['p50_ms']:.1f} / {whole['p95_ms']:.1f} |"
            )
    return lines


RETRIEVE_STAGES = scale_production.STAGES  # the stages the production row times, and the call
PRODUCTION_ROW = "production (its lanes, reranker and gate)"


def _production_title(prod: dict[str, Any]) -> str:
    """What the production row measured: the config's version, reranker, lexical backend,
    lanes, gate and memory setting, as the bench read them."""
    if not prod:
        return "production's own config"
    return (
        f"production's own config (experiments/production.yaml version {prod.get('version')}: "
        f"reranker {prod.get('reranker')}, lexical backend {prod.get('lexical_backend')}, "
        f"lexical_budget {prod.get('lexical_budget')}, lane_k {prod.get('lane_k')}, cap "
        f"{prod.get('cap')}, rerank_top_k {prod.get('rerank_top_k')}, gate {prod.get('gate')}, "
        f"memory {'on' if prod.get('memory') else 'off'}; only its corpora and embedder replaced)"
    )


def retrieve_rows(r: dict[str, Any]) -> list[tuple[str, dict[str, dict[str, float]]]]:
    """(config, stage timings) of each full retrieve measured at one size: the default config
    (cosine rerank), the BM25 lexical backend, production's own config (absent ones left out)."""
    rows = [
        ("default (cosine rerank)", r.get("retrieve") or {}),
        ("default, BM25 lexical", r.get("retrieve_bm25") or {}),
        (PRODUCTION_ROW, r.get("retrieve_production") or {}),
    ]
    return [(name, stages) for name, stages in rows if stages]


def _retrieve_lines(rep: dict[str, Any]) -> list[str]:
    """A full retrieve per config and size, each stage and the whole call, p50 / p95 ms (a
    stage a config did not time is left blank)."""
    rows = [(r["size"], name, st) for r in rep["sizes"] for name, st in retrieve_rows(r)]
    if not any(name == PRODUCTION_ROW for _, name, _ in rows):
        return []
    named = rep["settings"].get("production_config") or {}
    title = (
        "A full retrieve per config (cached query vectors), p50 / p95 ms: the default config, "
        f"its BM25 lexical backend, and {_production_title(named)}"
    )
    if named.get("memory"):
        title += ". The synthetic database holds no notes: memory's lane finds none (wide policy)"
    head = "| size | config | " + " | ".join(RETRIEVE_STAGES[:-1]) + " | whole retrieve |"
    lines = ["", title, "", head, "|---:|---|" + "---:|" * len(RETRIEVE_STAGES)]
    for size, name, stages in rows:
        cells = [stages.get(k) for k in RETRIEVE_STAGES]
        text = " | ".join(f"{c['p50_ms']:.1f} / {c['p95_ms']:.1f}" if c else "" for c in cells)
        lines.append(f"| {size:,} | {name} | {text} |")
    return lines


def _lanes_lines(rep: dict[str, Any]) -> list[str]:
    """The text lanes and the full retrieve per size, p50 / p95 ms."""
    rows = [r for r in rep["sizes"] if r.get("text_lanes") and r.get("retrieve")]
    if not rows:
        return []
    head = "| size | lexical | address | retrieve: lanes | fetch | rerank | whole retrieve |"
    lines = ["", "Text lanes and a full retrieve (cached query vectors), p50 / p95 ms", "", head]
    lines.append("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cells = [r["text_lanes"]["lexical"], r["text_lanes"]["address"]]
        cells += [r["retrieve"][k] for k in ("lanes", "fetch", "rerank", "total")]
        text = " | ".join(f"{c['p50_ms']:.1f} / {c['p95_ms']:.1f}" for c in cells)
        lines.append(f"| {r['size']:,} | {text} |")
    return lines


def _sweep_lines(rep: dict[str, Any]) -> list[str]:
    """recall@16 and p50 ms per group at each ef_search/iterative_scan, as the planner runs it
    (with the HNSW share) and with the index forced."""
    rows = [r for r in rep["sizes"] if r.get("sweep")]
    if not rows:
        return []
    groups = list(rep["settings"]["groups"])
    head = "| size | ef/iterative | " + " | ".join(f"{g}: recall, gap, p50, HNSW" for g in groups)
    head += " | " + " | ".join(f"{g} forced: recall, p50" for g in groups) + " |"
    title = (
        "ef_search x iterative_scan (dense lane: recall@16 vs exact, cosine lost vs exact top-16, "
        "p50 ms, share served by HNSW; as the planner runs it, then with the index forced)"
    )
    lines = ["", title, "", head]
    lines.append("|---:|---|" + "---:|" * (2 * len(groups)))
    for r in rows:
        for setting, per in r["sweep"].items():
            plan = [per[g]["planner"] for g in groups]
            forced = [per[g]["hnsw_forced"] for g in groups]
            cells = [
                f"{m['recall_at_16']:.3f}, {m['cos_gap']:.4f}, {m['p50_ms']:.2f}, "
                f"{m['hnsw_share']:.2f}"
                for m in plan
            ]
            cells += [f"{m['recall_at_16']:.3f}, {m['p50_ms']:.2f}" for m in forced]
            lines.append(f"| {r['size']:,} | {setting} | " + " | ".join(cells) + " |")
    return lines


def _graph_lines(rep: dict[str, Any]) -> list[str]:
    """The default HNSW graph beside each larger one measured at a size: build s, index MB, and
    per group recall@16 vs exact and p50 ms with the index forced, at each swept setting."""
    rows = [r for r in rep["sizes"] if r.get("graphs")]
    if not rows:
        return []
    groups = list(rep["settings"]["groups"])
    head = "| size | graph | build s | index MB | ef/iterative | "
    head += " | ".join(f"{g}: recall, p50" for g in groups) + " |"
    title = (
        "HNSW graphs (m / ef_construction; the graphs the size was built with first): dense lane "
        "with the index "
        "forced, recall@16 vs the same exact top-16 and p50 ms"
    )
    lines = ["", title, "", head, "|---:|---|---:|---:|---|" + "---:|" * len(groups)]
    for r in rows:
        built = sorted(set(r.get("index_graphs", {}).values())) or ["m16/efc64"]
        graphs = {
            "as built: " + " + ".join(built): {
                "build_s": r["build_s"],
                "index_mb": r.get("index_mb", 0.0),
                "sweep": r["sweep"],
            },
            **r["graphs"],
        }
        for label, gr in graphs.items():
            for setting, per in gr["sweep"].items():
                cells = [per[g]["hnsw_forced"] for g in groups]
                text = " | ".join(f"{m['recall_at_16']:.3f}, {m['p50_ms']:.2f}" for m in cells)
                lines.append(
                    f"| {r['size']:,} | {label} | {gr['build_s']:.1f} | {gr['index_mb']:.0f} | "
                    f"{setting} | {text} |"
                )
    return lines


def write(rep: dict[str, Any], out_dir: Path) -> list[Path]:
    """scale.json and scale.png (latency and recall vs size) under `out_dir`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    js, png = out_dir / "scale.json", out_dir / "scale.png"
    js.write_text(json.dumps(rep, indent=2, default=float) + "\n", encoding="utf-8")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    _plot_dense(axes[0], rep)
    _plot_retrieve(axes[1], rep)
    _plot_recall(axes[2], rep)
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return [js, png]


def _plot_dense(ax: Any, rep: dict[str, Any]) -> None:
    """Dense lane p50 and p95 per group against size."""
    sizes = [r["size"] for r in rep["sizes"]]
    for g in rep["settings"]["groups"]:
        ax.plot(sizes, [r["groups"][g]["p50_ms"] for r in rep["sizes"]], "o-", label=f"{g} p50")
        ax.plot(sizes, [r["groups"][g]["p95_ms"] for r in rep["sizes"]], "x--", label=f"{g} p95")
    ax.set(xscale="log", yscale="log", xlabel="fragments", ylabel="dense lane ms")


def _plot_retrieve(ax: Any, rep: dict[str, Any]) -> None:
    """A full retrieve's p50 per lexical lane against size, beside the p50 goal."""
    points: dict[str, list[tuple[int, float]]] = {}
    for r in rep["sizes"]:
        for lane, _, whole in scale_goals.lane_timings(rep, r):
            if whole is not None:
                points.setdefault(lane, []).append((r["size"], whole["p50_ms"]))
    prod = [(r["size"], r["retrieve_production"]["total"]["p50_ms"]) for r in rep["sizes"]
            if r.get("retrieve_production")]  # fmt: skip
    if prod:
        points[PRODUCTION_ROW] = prod
    for lane, pts in points.items():
        ax.plot(*zip(*pts, strict=True), "o-", label=f"{lane} p50")
    ax.axhline(
        scale_goals.PRODUCTION_MS[0],
        color="grey",
        ls="-.",
        label=f"production goal p50 at {scale_goals.GOAL_SIZE:,}",
    )
    ax.axhline(
        scale_goals.RETRIEVE_MS[0],
        color="grey",
        ls=":",
        label=f"goal p50 at {scale_goals.GOAL_SIZE:,}",
    )
    ax.set(xscale="log", yscale="log", xlabel="fragments", ylabel="full retrieve ms")


def _plot_recall(ax: Any, rep: dict[str, Any]) -> None:
    """recall@16 per group against size, zoomed so the goal line and the misses stay readable."""
    sizes = [r["size"] for r in rep["sizes"]]
    lows = [scale_goals.DENSE_RECALL]
    for g in rep["settings"]["groups"]:
        recall = [r["groups"][g]["recall_at_16"] for r in rep["sizes"]]
        lows += recall
        ax.plot(sizes, recall, "o-", label=g)
    ax.axhline(scale_goals.DENSE_RECALL, color="grey", ls=":", label="goal")
    ax.set(xscale="log", xlabel="fragments", ylabel="recall@16 vs exact")
    ax.set_ylim(min(lows) - 0.02, 1.005)


__all__ = ["PRODUCTION_ROW", "RETRIEVE_STAGES", "render", "retrieve_rows", "write"]
