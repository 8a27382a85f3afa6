"""Scale bench: the dense lane and its HNSW index on synthetic corpora of 10k to 1M fragments.

No text is embedded: the synthetic corpus is grown from the real `gita` fragments and their
cached vectors by `research.scale_corpus`. By default (`corpus="mixtures"`) each synthetic
fragment mixes 2 or 3 distinct real fragments of the same kind (Dirichlet weights, gaussian
noise, re-normalised; text spliced from the sources' sentences, address from the dominant one),
so its neighbours are about as close as real neighbours are; `corpus="copies"` is the older
bench (each fragment a noisy copy of one real fragment, text verbatim, ~222 copies of
each at 1M: a query's exact top-16 is then a tie among copies). The report puts the synthetic
corpus's nearest-neighbour cosine profile at each size beside the real corpus's
(`scale_corpus.Nearest`). Rows are generated in blocks and bulk-loaded with binary COPY into a
private embedded PostgreSQL in a temp dir, the HNSW index is built afterwards (timed), and at
each size the bench measures:
- the dense lane (`lanes.dense` on the connection `db.connect` gives: the config's ef_search and
  iterative_scan) p50/p95, recall@16 against an exact scan, and the share of queries the planner
  served from the HNSW index;
- a sweep of `hnsw.ef_search` x `hnsw.iterative_scan`: recall@16 against the same exact top-16,
  p50 and HNSW share, as the planner runs the query and with the HNSW index forced;
- the lexical and address lanes (spliced real clauses with mixtures, so lexical matches grow
  with the corpus as real text's would; verbatim copies, each text size / base-size times, with
  copies);
- a full `retrieve` (plan, lanes as one batched statement, fetch, cosine rerank, cut) with the
  query vectors already computed, so the embedder costs nothing;
- the lexical lane's other rankers beside the PostgreSQL lane without a budget: each
  `lexical_budget` (its rarest terms first) and the BM25 backend (`store.bm25`: its index build
  time, p50/p95, overlap@16 with the PostgreSQL lane), each with a full retrieve;
- a full retrieve under production's own config, its reranker and learned gate
  (`scale_production`), per stage.
Query vectors are real demo question embeddings from the cached embedder. Growth is summarised as
log-log slopes; sizes not run (and `extrapolate_to`, 1M by default) have their HNSW build time
extrapolated from the measured slope, and the report says so.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.fragments import Fragment
from citegate.core.inputs import clean_question
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import lanes
from citegate.pipeline.plan import keywords
from citegate.pipeline.retrieve import retrieve
from citegate.research import scale_corpus, scale_halfvec, scale_production
from citegate.research.bench import (
    FORCE_HNSW,
    bench_server,
    create_database,
    gita_fragments,
    hnsw_scans,
    read_questions,
    session_settings,
)
from citegate.research.scale_lexical import (
    CORPUS,
    K,
    measure_bm25,
    measure_lexical_tiers,
    measure_text_lanes,
)
from citegate.research.scale_lexical import pct as _pct
from citegate.store import bm25, db
from citegate.store.tables import refresh_lexemes

DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
DEFAULT_GROUPS = ("transcripts", "verses", "library")  # 3%, 78% and 19% of the rows
# 200: db.connect's ef_search below db.LARGE_GROUP_ROWS; 1000: above it (db.LARGE_EF_SEARCH)
SWEEP_EF = (40, 80, 160, 200, 400, 800, 1000)
SWEEP_ITERATIVE = ("off", "relaxed_order", "strict_order")
COPY_COLUMNS = (
    "frag_key, corpus, kind, source_id, track_id, start_ms, end_ms, book, loc_token, "
    "addr_label, text, lang, tokens, content_hash, embedder_id, dim, embedding"
)
COPY_TYPES = [
    "text", "text", "text", "text", "text", "int4", "int4", "text", "text",
    "text", "text", "text", "text", "text", "text", "int4", "vector",
]  # fmt: skip


def default_out_dir() -> Path:
    """Where the JSON report and the plot go."""
    return paths.ROOT / "var" / "bench" / "scale"


@dataclass(frozen=True)
class ScaleSettings:
    """What one run does."""

    sizes: tuple[int, ...] = DEFAULT_SIZES
    queries: int = 50
    groups: tuple[str, ...] = DEFAULT_GROUPS
    corpus: str = "mixtures"  # or "copies" (the older bench): `scale_corpus.CORPUS_KINDS`
    noise: float | None = None  # per-dimension sigma; None: the corpus's default
    seed: int = 16
    # HNSW builds far slower once the graph outgrows maintenance_work_mem (~1.8 GB at 1M x 384)
    maintenance_work_mem: str = "2GB"
    time_budget_s: float = 45 * 60.0  # a size predicted not to fit in what is left is not run
    extrapolate_to: tuple[int, ...] = (1_000_000,)  # build time extrapolated when not measured
    sweep_ef: tuple[int, ...] = SWEEP_EF
    sweep_iterative: tuple[str, ...] = SWEEP_ITERATIVE
    retrieve_queries: int = 30  # full retrieves per size (each runs every lane twice)
    # the lexical lane's budgets measured beside the lane without one (`lanes.choose_tier`);
    # the full retrieve runs once more with the first
    lexical_budgets: tuple[int, ...] = (1024, 8192)
    bm25: bool = True  # the BM25 backend measured too (its index built at each size, then deleted)
    halfvec: bool = False  # the dense lane over halfvec indexes too (`scale_halfvec`)
    production: bool = True  # a retrieve under production's own config (`scale_production`)
    # larger HNSW graphs, each built in place of the default one after everything else at a size
    # and swept at `sweep_ef` against the same exact top-16 (`measure_graphs`)
    graphs: tuple[db.HnswGraph, ...] = ()

    def __post_init__(self) -> None:
        """Refuse an unknown corpus kind before any work."""
        scale_corpus.default_noise(self.corpus)


@dataclass
class SizeResult:
    """Measurements at one corpus size (per kind group for the lane numbers)."""

    size: int
    load_s: float
    build_s: float
    groups: dict[str, dict[str, float]] = field(default_factory=dict)
    # the graph each group was built with and the session's ef_search (sized for the rows, as an
    # ingest sizes them: `db.graph_for`, `db.search_settings`)
    index_graphs: dict[str, str] = field(default_factory=dict)
    ef_search: str = ""
    wall_s: float = 0.0  # everything at this size: load, build, queries
    # "ef/iterative" -> group -> mode ("planner" / "hnsw_forced") -> recall_at_16, p50_ms, share
    sweep: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    text_lanes: dict[str, dict[str, float]] = field(default_factory=dict)  # lane -> p50/p95 ms
    retrieve: dict[str, dict[str, float]] = field(default_factory=dict)  # stage -> p50/p95 ms
    lexemes_s: float = 0.0  # counting the lexemes' document frequencies (what an ingest adds)
    # budget -> p50/p95 ms, overlap@16 with the lane without a budget, postings ranked (mean)
    lexical_tiers: dict[str, dict[str, float]] = field(default_factory=dict)
    retrieve_tiered: dict[str, dict[str, float]] = field(default_factory=dict)
    # the BM25 backend: index build s, lane p50/p95 ms, overlap@16 with the PostgreSQL lane
    bm25: dict[str, float] = field(default_factory=dict)
    retrieve_bm25: dict[str, dict[str, float]] = field(default_factory=dict)
    # the same BM25 retrieves asked again at once: what is left when every page they read is
    # cached (the first pass pays for pages the load and build left out of shared_buffers)
    retrieve_bm25_again: dict[str, dict[str, float]] = field(default_factory=dict)
    # production's own config, reranker and gate: stage -> p50/p95 ms (`scale_production`)
    retrieve_production: dict[str, dict[str, float]] = field(default_factory=dict)
    nn: dict[str, float] = field(default_factory=dict)  # `scale_corpus.Nearest.profile`
    halfvec: dict[str, Any] = field(default_factory=dict)  # `measure_halfvec`
    index_mb: float = 0.0  # the default graph's indexes, every group together
    # graph label -> build_s, index_mb and its sweep (as `sweep`) (`measure_graphs`)
    graphs: dict[str, dict[str, Any]] = field(default_factory=dict)


def predicted_wall(done: Sequence[SizeResult], n: int) -> float:
    """Seconds size n should take, from the measured growth of whole-size wall time (at least
    linear: load, build and exact scans all grow with n); 0 before any size is measured."""
    if not done:
        return 0.0
    grow = slope([r.size for r in done], [r.wall_s for r in done])
    grow = 1.0 if math.isnan(grow) else max(grow, 1.0)
    return done[-1].wall_s * (n / done[-1].size) ** grow


# ---------------------------------------------------------------- synthetic corpus


def _row(f: Fragment, eid: str, dim: int, vec: np.ndarray) -> tuple:
    return (
        f.key, f.corpus, f.kind, f.source_id, f.track_id, f.start_ms, f.end_ms, f.book,
        f.loc_token, f.addr_label, f.text, f.lang, f.tokens, f.content_hash, eid, dim, vec,
    )  # fmt: skip


def plan(frags: Sequence[Fragment], n: int, s: ScaleSettings) -> scale_corpus.Plan:
    """The synthetic corpus of size n the settings ask for (`scale_corpus.make_plan`)."""
    return scale_corpus.make_plan(s.corpus, [f.kind for f in frags], n, s.seed, s.noise)


def load(
    conn: psycopg.Connection,
    frags: Sequence[Fragment],
    base: np.ndarray,
    corpus: scale_corpus.Plan,
    eid: str,
) -> float:
    """Empty `fragments`, COPY the plan's synthetic rows in, block by block (no HNSW index yet),
    ANALYZE; returns the seconds spent (generating the vectors is not counted; building each
    row, its spliced text included, is)."""
    dim = int(base.shape[1])
    db.ensure_embedder(conn, eid, dim)
    for name in db.hnsw_index_names(eid):
        conn.execute(f'DROP INDEX IF EXISTS "{name}"')
    conn.execute("TRUNCATE fragments RESTART IDENTITY CASCADE")
    conn.execute("ALTER TABLE fragments SET (autovacuum_enabled = false)")
    texts, generating = scale_corpus.Texts(frags, corpus, CORPUS), 0.0
    clock = time.perf_counter()
    with (
        conn.cursor() as cur,
        cur.copy(f"COPY fragments ({COPY_COLUMNS}) FROM STDIN WITH (FORMAT BINARY)") as copy,
    ):
        copy.set_types(COPY_TYPES)
        for b in range(corpus.blocks):
            started = time.perf_counter()
            vecs = scale_corpus.block_vectors(base, corpus, b)
            generating += time.perf_counter() - started
            for j, vec in enumerate(vecs):
                copy.write_row(_row(texts.fragment(b * scale_corpus.BLOCK + j), eid, dim, vec))
    conn.execute("VACUUM ANALYZE fragments")
    return time.perf_counter() - clock - generating


def count_lexemes(conn: psycopg.Connection, eid: str) -> float:
    """The lexeme counts an ingest writes (`tables.refresh_lexemes`), for the synthetic corpus;
    returns seconds."""
    clock = time.perf_counter()
    with conn.transaction():
        refresh_lexemes(conn, eid, CORPUS)
    return time.perf_counter() - clock


def build_index(conn: psycopg.Connection, eid: str, dim: int) -> tuple[float, dict[str, str]]:
    """Create the embedder's HNSW indexes, one per kind group, as an ingest leaves them: a group
    past `db.LARGE_GROUP_ROWS` on the larger graph (`db.fit_graphs`; with no index yet it builds
    that one directly), the others on pgvector's default (`db.ensure_embedder`), and the session's
    search settings with them (`db.apply_search_settings`). Returns the seconds and each group's
    graph label."""
    clock = time.perf_counter()
    larger = db.fit_graphs(conn, eid, dim)
    db.ensure_embedder(conn, eid, dim)
    elapsed = time.perf_counter() - clock
    db.apply_search_settings(conn)
    labels = {g: larger.get(g, db.HnswGraph()).label for g in DEFAULT_GROUPS}
    return elapsed, labels


# ---------------------------------------------------------------- measurements


def _recall(ann: Sequence[lanes.LaneHit], exact: Sequence[lanes.LaneHit]) -> float:
    truth = {h.fragment_id for h in exact}
    return len(truth & {h.fragment_id for h in ann}) / len(truth) if truth else math.nan


def _cos_gap(ann: Sequence[lanes.LaneHit], exact: Sequence[lanes.LaneHit]) -> float:
    """How much cosine the approximate top-K loses: the mean cosine of the exact top-K minus that
    of the returned hits (missing hits count as cosine 0). With many near-duplicate copies a low
    recall can still lose almost nothing, and this says which."""
    if not exact:
        return math.nan
    got = sorted((h.lane_score for h in ann), reverse=True)[: len(exact)]
    got += [0.0] * (len(exact) - len(got))
    return float(np.mean([h.lane_score for h in exact]) - np.mean(got))


def _ann_pass(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    eid: str,
    group: str,
    exacts: Sequence[Sequence[lanes.LaneHit]],
    search: Callable[..., list[lanes.LaneHit]] = lanes.dense,
    scans_of: Callable[[], int] | None = None,
) -> dict[str, float]:
    """One pass of the dense lane (or another `search` with its signature, whose index scans
    `scans_of` counts) over the query vectors under the session's settings: p50/p95, recall@K
    against `exacts` and the share of queries the HNSW index served."""
    count = scans_of or (lambda: hnsw_scans(conn, eid))
    search(conn, qvecs[0], eid, [CORPUS], group, K)  # warm-up: buffers and plan
    before = count()
    seconds, anns = [], []
    for v in qvecs:
        clock = time.perf_counter()
        anns.append(search(conn, v, eid, [CORPUS], group, K))
        seconds.append(time.perf_counter() - clock)
    scans = count() - before
    pairs = [(a, e) for a, e in zip(anns, exacts, strict=True) if e]
    return {
        **_pct(seconds),
        "recall_at_16": float(np.mean([_recall(a, e) for a, e in pairs])) if pairs else math.nan,
        "cos_gap": float(np.mean([_cos_gap(a, e) for a, e in pairs])) if pairs else math.nan,
        "hnsw_share": min(scans / len(qvecs), 1.0),
    }


def measure_group(
    conn: psycopg.Connection, qvecs: np.ndarray, eid: str, group: str
) -> tuple[dict[str, float], list[list[lanes.LaneHit]]]:
    """Dense-lane p50/p95 (ms), recall@K vs exact and HNSW share over the query vectors at the
    session's settings; and the exact top-K of every query (for the sweep)."""
    clock = time.perf_counter()
    exacts = [lanes.dense(conn, v, eid, [CORPUS], group, K, exact=True) for v in qvecs]
    exact_s = (time.perf_counter() - clock) / len(qvecs)
    return {**_ann_pass(conn, qvecs, eid, group, exacts), "exact_mean_ms": exact_s * 1000.0}, exacts


def measure_sweep(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    eid: str,
    exacts: dict[str, list[list[lanes.LaneHit]]],
    s: ScaleSettings,
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """At each ef_search x iterative_scan: every group's dense-lane pass as the planner runs it
    and with the HNSW index forced, against the exact hits already found."""
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for ef in s.sweep_ef:
        for it in s.sweep_iterative:
            with session_settings(conn, {"hnsw.ef_search": str(ef), "hnsw.iterative_scan": it}):
                row: dict[str, dict[str, dict[str, float]]] = {}
                for g, ex in exacts.items():
                    row[g] = {"planner": _ann_pass(conn, qvecs, eid, g, ex)}
                    with session_settings(conn, FORCE_HNSW):
                        row[g]["hnsw_forced"] = _ann_pass(conn, qvecs, eid, g, ex)
            out[f"{ef}/{it}"] = row
    return out


def measure_halfvec(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    eid: str,
    exacts: dict[str, list[list[lanes.LaneHit]]],
) -> dict[str, Any]:
    """The dense lane over halfvec indexes (`scale_halfvec`), built, measured against the same
    exact float top-K and dropped: build s, sizes beside the float indexes', and per group the
    `_ann_pass` figures."""
    groups = list(exacts)
    out: dict[str, Any] = {"build_s": scale_halfvec.build(conn, eid, int(qvecs.shape[1]), groups)}
    try:
        conn.execute("ANALYZE fragments")
        half = [scale_halfvec.index_name(eid, g) for g in groups]
        out["index_mb"] = scale_halfvec.megabytes(conn, half)
        out["float_index_mb"] = scale_halfvec.megabytes(conn, db.hnsw_index_names(eid))
        out["groups"] = {
            g: _ann_pass(
                conn,
                qvecs,
                eid,
                g,
                ex,
                scale_halfvec.search,
                lambda g=g: scale_halfvec.scans(conn, [scale_halfvec.index_name(eid, g)]),
            )  # fmt: skip
            for g, ex in exacts.items()
        }
    finally:
        scale_halfvec.drop(conn, eid, groups)
    return out


def measure_graphs(
    conn: psycopg.Connection,
    qvecs: np.ndarray,
    eid: str,
    exacts: dict[str, list[list[lanes.LaneHit]]],
    s: ScaleSettings,
) -> dict[str, dict[str, Any]]:
    """Each of `s.graphs` in turn in place of the embedder's indexes: dropped, rebuilt with its
    m / ef_construction (timed), and swept like the default graph against the same exact top-K.
    The last one built stays; the next size's load drops it."""
    out: dict[str, dict[str, Any]] = {}
    for graph in s.graphs:
        names = db.hnsw_index_names(eid)
        for name in names:
            conn.execute(f'DROP INDEX IF EXISTS "{name}"')
        clock = time.perf_counter()
        db.ensure_embedder(conn, eid, int(qvecs.shape[1]), graph)
        built = time.perf_counter() - clock
        conn.execute("ANALYZE fragments")
        out[graph.label] = {
            "m": graph.m,
            "ef_construction": graph.ef_construction,
            "build_s": built,
            "index_mb": scale_halfvec.megabytes(conn, names),
            "sweep": measure_sweep(conn, qvecs, eid, exacts, s),
        }
        print(f"scale bench: graph {graph.label} built in {built:.1f} s and swept", flush=True)
    return out


class QueryVectors:
    """An embedder over vectors computed beforehand: `retrieve` at scale then pays nothing to
    embed (a cached query vector), and its id names the synthetic corpus's vectors."""

    def __init__(self, eid: str, table: dict[str, np.ndarray]) -> None:
        self.id, self.table = eid, table
        self.dim = int(next(iter(table.values())).shape[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.vstack([self.table[t] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError("the scale bench embeds no passages")


def measure_retrieve(
    conn: psycopg.Connection,
    questions: Sequence[str],
    emb: QueryVectors,
    lexical_budget: int = 0,
    lexical_backend: str = "postgres",
) -> dict[str, dict[str, float]]:
    """A full `retrieve` per question (default config on the synthetic corpus, with the given
    lexical budget or backend): p50/p95 of the lanes, fetch and rerank stages and of the call."""
    cfg = PipelineConfig(
        embedder=emb.id,
        corpora=(CORPUS,),
        lexical_budget=lexical_budget,
        lexical_backend=lexical_backend,
    )
    rr = CosineReranker()
    retrieve(conn, questions[0], cfg, emb, rr)  # warm-up
    per: dict[str, list[float]] = {k: [] for k in ("lanes", "fetch", "rerank", "total")}
    for q in questions:
        clock = time.perf_counter()
        res = retrieve(conn, q, cfg, emb, rr)
        per["total"].append(time.perf_counter() - clock)
        for k in ("lanes", "fetch", "rerank"):
            per[k].append(res.trace.timings.get(k, 0.0))
    return {k: _pct(v) for k, v in per.items()}


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y against log x (NaN with fewer than two usable points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return math.nan
    lx, ly = np.array(pts).T
    return float(np.polyfit(lx, ly, 1)[0])


def run(s: ScaleSettings, tmp_root: Path | None = None) -> dict[str, Any]:
    """Every size in order, on one private server; a size whose predicted wall time does not fit
    in what is left of the time budget is not started (nor any larger one), and the build time of
    the sizes not run is extrapolated from the measured slope. The server's data dir goes
    under `tmp_root` (default: the system temp dir; see `bench.bench_server` for what it needs)."""
    prod = scale_production.load_setup() if s.production else None
    embedder = default_embedder()
    frags = gita_fragments()
    base = np.asarray(embedder.embed_passages([f.text for f in frags]), dtype=np.float32)
    questions = [clean_question(q) for q in read_questions(s.queries)]
    qvecs = np.asarray(embedder.embed_queries(questions), dtype=np.float32)
    eid, dim, started = f"{embedder.id}+scale", int(base.shape[1]), time.perf_counter()
    asked = questions[: s.retrieve_queries]
    texts = list(dict.fromkeys([*asked, *(keywords(q) for q in asked)]))
    table = dict(zip(texts, np.asarray(embedder.embed_queries(texts)), strict=True))
    results: list[SizeResult] = []
    with bench_server(tmp_root) as server, db.connect(create_database(server, "scale")) as conn:
        conn.execute(
            "SELECT set_config('maintenance_work_mem', %s, false)", (s.maintenance_work_mem,)
        )
        for n in sorted(s.sizes):
            clock = time.perf_counter()
            if results and clock - started + predicted_wall(results, n) > s.time_budget_s:
                print(f"scale bench: {n} fragments predicted not to fit the budget; stopping")
                break
            corpus = plan(frags, n, s)
            loaded = load(conn, frags, base, corpus, eid)
            built, graphs = build_index(conn, eid, dim)
            res = SizeResult(n, loaded, built, index_graphs=graphs, ef_search=_ef_search(conn))
            res.index_mb = scale_halfvec.megabytes(conn, db.hnsw_index_names(eid))
            res.nn = scale_corpus.plan_profile(base, corpus, seed=s.seed)
            res.lexemes_s = count_lexemes(conn, eid)
            conn.execute("ANALYZE fragments")
            exacts = {}
            for g in s.groups:
                res.groups[g], exacts[g] = measure_group(conn, qvecs, eid, g)
            res.sweep = measure_sweep(conn, qvecs, eid, exacts, s)
            res.halfvec = measure_halfvec(conn, qvecs, eid, exacts) if s.halfvec else {}
            res.text_lanes, full = measure_text_lanes(conn, questions, eid)
            res.retrieve = measure_retrieve(conn, asked, QueryVectors(eid, table))
            vectors = QueryVectors(eid, table)
            if s.lexical_budgets:
                res.lexical_tiers = measure_lexical_tiers(
                    conn, questions, eid, s.lexical_budgets, full
                )
                res.retrieve_tiered = measure_retrieve(conn, asked, vectors, s.lexical_budgets[0])
            if s.bm25:
                res.bm25 = measure_bm25(conn, questions, eid, full)
                res.retrieve_bm25 = measure_retrieve(conn, asked, vectors, lexical_backend="bm25")
                res.retrieve_bm25_again = measure_retrieve(
                    conn, asked, vectors, lexical_backend="bm25"
                )
            if prod is not None:
                res.retrieve_production = scale_production.measure(
                    conn, asked, vectors, prod, bm25_built=bool(res.bm25)
                )
            if res.bm25:
                shutil.rmtree(bm25.index_root() / str(res.bm25.pop("key")), ignore_errors=True)
            res.graphs = measure_graphs(conn, qvecs, eid, exacts, s)
            res.wall_s = time.perf_counter() - clock
            results.append(res)
            print(f"scale bench: {n} fragments done ({res.build_s:.1f} s build)", flush=True)
        it = conn.execute("SHOW hnsw.iterative_scan").fetchone()[0]
    ef = "/".join(dict.fromkeys(r.ef_search for r in results))  # one value per size, in order
    real_nn = scale_corpus.nearest_profile(base, seed=s.seed)
    facts = {"base_fragments": len(frags), "ef_search": ef, "iterative_scan": it}
    facts["production_config"] = prod.facts if prod is not None else {}
    return summarise(s, results, real_nn=real_nn, **facts)


def _ef_search(conn: psycopg.Connection) -> str:
    return str(conn.execute("SHOW hnsw.ef_search").fetchone()[0])


def noise_of(s: ScaleSettings) -> float:
    """The per-dimension noise sigma the run used (the corpus kind's default unless set)."""
    return scale_corpus.default_noise(s.corpus) if s.noise is None else s.noise


def summarise(
    s: ScaleSettings,
    results: list[SizeResult],
    real_nn: dict[str, float] | None = None,
    **facts: Any,
) -> dict[str, Any]:
    """The report dict: settings, per-size rows, log-log slopes, extrapolated build times, and
    the real corpus's nearest-neighbour profile (`real_nn`) beside each size's `nn`."""
    sizes = [r.size for r in results]
    build_slope = slope(sizes, [r.build_s for r in results])
    missing = [n for n in s.sizes if n not in sizes]
    wanted = sorted({*missing, *(n for n in s.extrapolate_to if n not in sizes)})
    extrapolated = {}
    if wanted and results and not math.isnan(build_slope):
        last = results[-1]
        extrapolated = {str(n): last.build_s * (n / last.size) ** build_slope for n in wanted}
    return {
        "settings": {**asdict(s), "noise": noise_of(s), **facts, "k": K},
        "method": scale_corpus.method(s.corpus, noise_of(s), s.seed),
        "nn_real": real_nn or {},
        "sizes": [asdict(r) for r in results],
        "slopes": {
            "build_s": build_slope,
            **{
                f"p50_ms[{g}]": slope(sizes, [r.groups[g]["p50_ms"] for r in results])
                for g in s.groups
            },
            **{
                f"p50_ms[{lane}]": slope(sizes, [r.text_lanes[lane]["p50_ms"] for r in results])
                for lane in ("lexical", "address")
                if all(r.text_lanes for r in results)
            },
            **(
                {"p50_ms[retrieve]": slope(sizes, [r.retrieve["total"]["p50_ms"] for r in results])}
                if all(r.retrieve for r in results)
                else {}
            ),
            **(
                {
                    "p50_ms[retrieve production]": slope(
                        sizes, [r.retrieve_production["total"]["p50_ms"] for r in results]
                    )
                }
                if all(r.retrieve_production for r in results)
                else {}
            ),
        },
        "not_run": missing,
        "build_s_extrapolated": extrapolated,
    }


__all__ = [
    "DEFAULT_SIZES",
    "SWEEP_EF",
    "SWEEP_ITERATIVE",
    "QueryVectors",
    "ScaleSettings",
    "SizeResult",
    "default_out_dir",
    "plan",
    "predicted_wall",
    "run",
    "slope",
    "summarise",
]
