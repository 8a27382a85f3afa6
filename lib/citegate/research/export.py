"""A retrieval pass as TREC files (`citegate export-run`): the run file every IR evaluation tool
reads (`qid Q0 docid rank score tag`) and the set's qrels (`qid 0 docid relevance`).

The ranking of a question is its final notes (the pipeline's cut: pre-floor, cap, rerank top-k,
reserves, dedup) turned into document ids in note order, each document once (its first note).
A note's document id is what the set's gold names: the document id of an imported fragment
(its address), the verse address of a verse, the fragment key otherwise (an XQuAD paragraph).
TREC files are space-separated, so whitespace inside an id (the demo's "BG 2.13") is written as
"_" in both files alike. Scores are `n - rank + 1`, so a tool that sorts by score (trec_eval does)
sees citegate's order.

Qrels hold the `answerable` questions' gold with relevance 1 (graded BEIR scores are read as
relevant when > 0, as citegate's metrics are binary). Questions without gold in the searched
build (`out_of_corpus`, `out_of_scope`) are in the run file and not in the qrels, so a peer tool
skips them as citegate's metrics do. `scores` computes citegate.evaluation.metrics on the same
rankings: recall@k (share of relevant documents in the first k: `gold_recall`), success@k (a
relevant one among them: citegate's `recall_at_k`), MRR@k and nDCG@k.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError, InputError
from citegate.core.types import Candidate
from citegate.corpus.builds import is_imported
from citegate.corpus.questions import ANY_CORPUS, Question, load_set
from citegate.evaluation.metrics import gold_recall, mrr, ndcg_at_k, recall_at_k
from citegate.models.embed import Embedder
from citegate.pipeline.retrieve import replay
from citegate.research.traces import traces_for
from citegate.store.production import load_reranker

KS = (1, 5, 10)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class RankedRun:
    """One set's retrieval pass as document rankings, with its qrels."""

    set_name: str
    corpus: str
    tag: str
    rankings: dict[str, list[str]]  # question id -> document ids, best first
    qrels: dict[str, list[str]]  # answerable question id -> relevant document ids


@dataclass(frozen=True)
class ExportedRun:
    """Where one set's files were written, and citegate's metrics on them."""

    run: RankedRun
    run_file: Path
    qrels_file: Path
    metrics: dict[str, float]


def trec_id(value: str) -> str:
    """An id as TREC files can hold it: whitespace runs become '_'."""
    return _SPACE.sub("_", value.strip())


def document_of(c: Candidate, imported: bool) -> str:
    """The document id a note stands for: the reference a set's gold uses for it."""
    if (imported or c.kind == "verse") and c.addr_label:
        return c.addr_label
    return c.frag_key


def ranked_documents(notes: Iterable[Candidate], imported: bool) -> list[str]:
    """The notes' document ids in order, each once (its first note)."""
    return list(dict.fromkeys(trec_id(document_of(c, imported)) for c in notes))


def pass_rankings(
    conn: psycopg.Connection,
    questions: Sequence[Question],
    corpus: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    *,
    progress: bool = False,
) -> dict[str, list[str]]:
    """question id -> ranked document ids of a retrieval pass over `corpus` under `cfg` (traces
    from the shared cache, retrieved only where it lacks them)."""
    cfg = cfg.replace(corpora=[corpus], embedder=embedder.id)
    traces = traces_for(conn, questions, cfg, embedder, load_reranker(cfg), progress=progress)
    imported = is_imported(corpus)
    return {q.id: ranked_documents(replay(traces[q.id], cfg).notes, imported) for q in questions}


def ranked_run(
    set_name: str,
    corpus: str,
    questions: Sequence[Question],
    rankings: Mapping[str, list[str]],
    tag: str,
) -> RankedRun:
    """A set's rankings with the qrels of its answerable questions."""
    qrels = {
        q.id: [trec_id(g) for g in q.gold] for q in questions if q.label == "answerable" and q.gold
    }
    return RankedRun(set_name, corpus, tag, {q.id: list(rankings[q.id]) for q in questions}, qrels)


def write_trec(run: RankedRun, folder: Path) -> tuple[Path, Path]:
    """Write `<set>.run` and `<set>.qrels` into `folder`; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    run_path, qrels_path = folder / f"{run.set_name}.run", folder / f"{run.set_name}.qrels"
    lines = [
        f"{trec_id(qid)} Q0 {doc} {rank} {len(docs) - rank + 1} {run.tag}\n"
        for qid, docs in run.rankings.items()
        for rank, doc in enumerate(docs, 1)
    ]
    run_path.write_text("".join(lines), encoding="utf-8")
    qrels_path.write_text(
        "".join(f"{trec_id(q)} 0 {d} 1\n" for q, docs in run.qrels.items() for d in docs),
        encoding="utf-8",
    )
    return run_path, qrels_path


def read_trec_run(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run file as {qid: {docid: score}} (the shape pytrec_eval takes)."""
    out: dict[str, dict[str, float]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        cols = line.split()
        if len(cols) != 6:
            raise InputError(
                path, n, f"expected 6 columns (qid Q0 docid rank score tag), got {len(cols)}"
            )
        out.setdefault(cols[0], {})[cols[2]] = float(cols[4])
    return out


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A TREC qrels file as {qid: {docid: relevance}}."""
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        cols = line.split()
        if len(cols) != 4:
            raise InputError(
                path, n, f"expected 4 columns (qid 0 docid relevance), got {len(cols)}"
            )
        out.setdefault(cols[0], {})[cols[2]] = int(cols[3])
    return out


def scores(run: RankedRun, ks: Sequence[int] = KS) -> dict[str, float]:
    """citegate.evaluation.metrics on the run's answerable questions, at each k."""
    qids = list(run.qrels)
    ranked = [run.rankings.get(q, []) for q in qids]
    gold = [run.qrels[q] for q in qids]
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = gold_recall(ranked, [[[d] for d in g] for g in gold], k)
        out[f"success@{k}"] = recall_at_k(ranked, gold, k)
        out[f"mrr@{k}"] = mrr(ranked, gold, k)
        out[f"ndcg@{k}"] = ndcg_at_k(ranked, gold, k)
    return out


def export(run: RankedRun, folder: Path) -> ExportedRun:
    """Write a run's files and compute citegate's metrics on it."""
    run_file, qrels_file = write_trec(run, folder)
    return ExportedRun(run, run_file, qrels_file, scores(run))


# ---------------------------------------------------------------- from a set or an experiment run


def export_set(
    conn: psycopg.Connection,
    name: str,
    cfg: PipelineConfig,
    embedder: Embedder,
    folder: Path,
    *,
    progress: bool = True,
) -> ExportedRun:
    """Every question of set `name` retrieved against the build it is labeled against."""
    qset = load_set(name)
    if qset.corpus == ANY_CORPUS:
        raise ConfigError(f"set {name!r} has no gold (out of scope): nothing to score a run on")
    rankings = pass_rankings(conn, qset.questions, qset.corpus, cfg, embedder, progress=progress)
    tag = f"citegate-{name}"
    return export(ranked_run(name, qset.corpus, qset.questions, rankings, tag), folder)


def find_run_dir(run_id: str) -> Path:
    """The folder of experiment run `run_id` (or a unique prefix of it) under var/runs."""
    found = []
    for summary in sorted(paths.runs_dir().glob("*/*/summary.json")):
        rid = json.loads(summary.read_text(encoding="utf-8")).get("run_id", "")
        if run_id and rid.startswith(run_id):
            found.append(summary.parent)
    if len(found) != 1:
        what = "no run" if not found else f"{len(found)} runs"
        raise ConfigError(f"{what} with id {run_id!r} under {paths.runs_dir()}")
    return found[0]


def check_finished(run_dir: Path, run_id: str) -> None:
    """Refuse a run that is not FINISHED (its summary.json says FAILED, with the cause): its
    retrieval pass may be partial, and it may not have written what an export reads."""
    summary = _run_json(run_dir, "summary.json")
    summary = summary if isinstance(summary, dict) else {}
    status = summary.get("status", "unknown")
    if status != "FINISHED":
        cause = str(summary.get("error", "no cause recorded")).splitlines()[0][:200]
        raise ConfigError(
            f"run {run_id} is {status} ({cause}); only a FINISHED run can be exported: fix the "
            "cause and run the experiment again"
        )


def _run_json(run_dir: Path, name: str) -> dict[str, Any] | list[Any]:
    """One JSON file a run wrote, or a `ConfigError` naming it when it is missing or bad."""
    path = run_dir / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: the run's {name} is missing or unreadable ({exc})") from exc


def export_experiment_run(
    conn: psycopg.Connection,
    run_id: str,
    embedder: Embedder,
    folder: Path,
    *,
    progress: bool = True,
) -> list[ExportedRun]:
    """The retrieval pass of an experiment run, one pair of files per labeled set it used: the
    questions it sampled, the build it searched, the config and reranker it recorded. Refused
    when a set's content changed since the run (its digest differs)."""
    run_dir = find_run_dir(run_id)
    check_finished(run_dir, run_id)
    datasets = _run_json(run_dir, "datasets.json")
    config = _run_json(run_dir, "config.json")
    if not isinstance(config, dict) or not isinstance(datasets, list):
        raise ConfigError(f"{run_dir}: config.json must hold an object, datasets.json a list")
    cfg = PipelineConfig.from_dict(config, source=str(run_dir / "config.json"))
    out = []
    for d in datasets:
        # A run comparing corpora records its sets as "<corpus>/<set>" (notebooks 03 and 05).
        name = str(d["name"]).rsplit("/", 1)[-1]
        qset = load_set(name)
        if qset.corpus == ANY_CORPUS:
            continue
        if qset.digest != d["digest"]:
            raise InputError(
                d["source"], "-", f"set {name} changed since run {run_id} (digest differs)"
            )
        ids = {r["id"] for r in d.get("records", [])}
        questions = [q for q in qset.questions if q.id in ids]
        corpus = str(d["build_id"]).split("@", 1)[0]
        rankings = pass_rankings(conn, questions, corpus, cfg, embedder, progress=progress)
        tag = f"citegate-{run_dir.name}"
        out.append(export(ranked_run(name, corpus, questions, rankings, tag), folder))
    if not out:
        raise ConfigError(f"run {run_id} used no labeled set (only out-of-scope questions)")
    return out
