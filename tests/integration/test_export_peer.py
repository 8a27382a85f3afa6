"""`citegate export-run` files scored by a peer tool: trec_eval (pytrec_eval) gives the numbers
citegate.evaluation.metrics gives on the same run, question by question."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
import pytrec_eval

from citegate.core import paths
from citegate.core.config_files import resolve
from citegate.models.embed import default_embedder
from citegate.research.export import (
    KS,
    RankedRun,
    export_set,
    read_trec_qrels,
    read_trec_run,
    scores,
)
from citegate.store.imports import import_beir

pytestmark = pytest.mark.db

EXAMPLE = paths.DATA / "examples" / "xquad-mini"
TOL = 1e-9


def harder_example(tmp: Path) -> Path:
    """The example with two or three relevant paragraphs per question (its own, the next one of
    the article, and for every third question the one after), plus judged-irrelevant lines, so
    recall, MRR and nDCG differ from a hit rate."""
    root = shutil.copytree(EXAMPLE, tmp / "harder")
    rows = (root / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    out = ["query-id\tcorpus-id\tscore"]
    for i, row in enumerate(rows):
        qid, doc, _ = row.split("\t")
        article, p = doc.rsplit("-", 1)
        others = [f"{article}-{(int(p) + j - 1) % 5 + 1}" for j in (1, 2)]
        out += [f"{qid}\t{doc}\t2", f"{qid}\t{others[0]}\t1"]
        out.append(f"{qid}\t{others[1]}\t{1 if i % 3 == 0 else 0}")
    (root / "qrels" / "test.tsv").write_text("\n".join(out) + "\n", encoding="utf-8")
    return root


def trec_eval(
    run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], k: int
) -> dict[str, dict[str, float]]:
    """Per question: recall@k, success@k, nDCG@k, and MRR@k as trec_eval's reciprocal rank of
    the run cut at k (trec_eval's recip_rank has no cutoff of its own)."""
    ev = pytrec_eval.RelevanceEvaluator(qrels, {f"recall.{k}", f"success.{k}", f"ndcg_cut.{k}"})
    got = ev.evaluate(run)
    top = {q: dict(sorted(d.items(), key=lambda x: -x[1])[:k]) for q, d in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top)
    return {
        q: {
            "recall": got.get(q, {}).get(f"recall_{k}", 0.0),
            "success": got.get(q, {}).get(f"success_{k}", 0.0),
            "ndcg": got.get(q, {}).get(f"ndcg_cut_{k}", 0.0),
            "mrr": rr.get(q, {}).get("recip_rank", 0.0),
        }
        for q in qrels
    }


def test_trec_eval_scores_the_exported_run_as_citegate_does(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    emb = default_embedder()
    import_beir(conn, harder_example(tmp_path), "peer", emb, progress=False)
    cfg = resolve("design").replace(reranker="none")
    done = export_set(conn, "peer", cfg, emb, tmp_path / "out", progress=False)
    run, qrels = read_trec_run(done.run_file), read_trec_qrels(done.qrels_file)
    assert len(qrels) == 90 and sum(len(d) for d in qrels.values()) == 90 * 2 + 30
    for k in KS:
        peer = trec_eval(run, qrels, k)
        for name in ("recall", "success", "mrr", "ndcg"):
            mean = sum(p[name] for p in peer.values()) / len(peer)
            assert abs(mean - done.metrics[f"{name}@{k}"]) < TOL, (name, k)
        for qid in qrels:  # question by question too: citegate on a one-question run
            one = scores(_only(done.run, qid), (k,))
            assert all(abs(peer[qid][n] - one[f"{n}@{k}"]) < TOL for n in peer[qid]), qid
    assert 0.0 < done.metrics["recall@5"] < done.metrics["success@5"] <= 1.0  # not a trivial run


def _only(run: RankedRun, qid: str) -> RankedRun:
    """The run with the qrels of one question only (citegate's metrics on that question)."""
    return RankedRun(run.set_name, run.corpus, run.tag, run.rankings, {qid: run.qrels[qid]})
