"""The ways a run can go wrong, end to end: real experiments on their tiny profiles, real papermill,
real PostgreSQL, a throwaway MLflow store.

- a chat server that dies mid-run → notebook 04 is FAILED with the model error as its cause;
- a failing sweep child → a FAILED parent and a non-zero `citegate run` naming the child, while
  `TOKENIZERS_PARALLELISM=false` and a fake API key leave every artifact intact;
- a wiped and re-ingested corpus → traces re-collected for the new fragment ids, recall unchanged.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import mlflow
import psycopg
import pytest
import yaml
from llm_stub import completion, stub_server

from citegate.cli import main
from citegate.core import paths
from citegate.models.cache import DiskCache
from citegate.models.embed import default_embedder
from citegate.store import db
from citegate.store.ingest import ingest_corpus
from citegate.tracking.runner import run_experiment
from citegate.tracking.spec import load_spec

pytestmark = [pytest.mark.slow, pytest.mark.db]

FAKE_KEY = "fake-voyage-key-Zq81x0-PLEASE-dont-LEAK-this"
SPLIT_IDS = "SELECT id FROM fragments WHERE corpus = 'gita-split'"
MEMORY_ANSWER = {
    "answer": "A general answer.",
    "search_queries": ["duty", "action"],
    "disclaimer": "-",
    "in_scope": True,
}


@pytest.fixture()
def tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private MLflow store and var/ folder for one test."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    return tmp_path


def _spec_copy(folder: Path, name: str, **changes: object) -> Path:
    """A shipped experiment spec with some keys replaced, written into `folder`."""
    data = yaml.safe_load((paths.EXPERIMENTS / f"{name}.yaml").read_text(encoding="utf-8"))
    data.update(changes)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _mlflow_status(run_id: str) -> str:
    return mlflow.MlflowClient().get_run(run_id).info.status


def test_a_chat_server_dying_mid_run_fails_notebook_04(
    demo_db: str, tracking: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", demo_db)
    model = f"remote:faults-{uuid.uuid4().hex[:8]}"  # never in the call cache
    reply = (200, completion(json.dumps(MEMORY_ANSWER)))
    with stub_server([reply], die_after=3) as stub:
        monkeypatch.setenv("OPENROUTER_API_KEY", FAKE_KEY)
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.base_url)
        spec = load_spec(paths.EXPERIMENTS / "04_fallback_disclaimer.yaml")
        out = run_experiment(spec, profile="tiny", overrides={"MODELS": [model]})
    assert len(stub.requests) == 3
    assert out.status == "FAILED"
    assert "ModelFailure" in out.error and "failed" in out.error, out.error
    assert _mlflow_status(out.run_id) == "FAILED"
    report = (out.run_dir / "report.html").read_text(encoding="utf-8")
    assert "ModelFailure" in report
    # no headline rate was computed from the failed calls
    assert not any(k.startswith("model_exact_rate") for k in out.metrics), out.metrics


def test_failing_sweep_child_fails_the_run_and_lookalike_vars_leave_artifacts_intact(
    demo_db: str,
    tracking: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", demo_db)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("VOYAGE_API_KEY", FAKE_KEY)
    bad_sets = {"no-such-set": "gita-split"}
    spec = _spec_copy(tracking, "03_gate_roc", sweep={"CORPORA": [{"gita-split": bad_sets}]})

    code = main(["run", str(spec), "--profile", "tiny"])

    printed = capsys.readouterr()
    assert code != 0
    assert "CORPORA=" in printed.out + printed.err and "no-such-set" in printed.out + printed.err
    runs = mlflow.search_runs(experiment_names=["citegate/03_gate_roc"], output_format="list")
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    child = next(r for r in runs if "mlflow.parentRunId" in r.data.tags)
    assert (parent.info.status, child.info.status) == ("FAILED", "FAILED")
    # the look-alike variable changed nothing: every param logged, tags and notebooks intact
    assert parent.data.tags["git_dirty"] in ("true", "false")
    assert {"param.N_BOOT", "param.TARGET_FPR", "param.LIMIT"} <= set(parent.data.params)
    run_dirs = sorted((paths.runs_dir() / "03_gate_roc").iterdir())
    notebook = json.loads((run_dirs[-1] / "notebook.ipynb").read_text(encoding="utf-8"))
    assert notebook["cells"]
    report = (run_dirs[-1] / "report.html").read_text(encoding="utf-8")
    assert "***" not in report and "Conclusion" in report
    for path in tracking.rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path


def test_reingest_recollects_traces_and_keeps_recall(
    pg_url: str, tracking: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"faults_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = pg_url.replace("/postgres?", f"/{name}?")
    monkeypatch.setenv("DATABASE_URL", url)
    emb = default_embedder()
    with db.connect(url) as conn:
        for build in ("gita", "gita-split"):  # out_of_corpus gold is checked in the full build
            ingest_corpus(conn, build, emb, progress=False)
    spec = load_spec(paths.EXPERIMENTS / "01_prefloor_recall.yaml")
    overrides = {"SETS": {"gita-split": "gita-split"}, "FOLLOWUPS": 0}
    traces = DiskCache(paths.cache_dir() / "traces.sqlite")

    first = run_experiment(spec, profile="tiny", overrides=overrides)
    with db.connect(url) as conn:
        old_ids = {r[0] for r in conn.execute(SPLIT_IDS)}
        conn.execute("DELETE FROM fragments WHERE corpus = 'gita-split'")
        ingest_corpus(conn, "gita-split", emb, progress=False)
        new_ids = {r[0] for r in conn.execute(SPLIT_IDS)}
    before = len(traces)
    second = run_experiment(spec, profile="tiny", overrides=overrides)

    assert not old_ids & new_ids  # every fragment has a new id
    assert first.status == second.status == "FINISHED", (first.error, second.error)
    assert len(traces) > before  # re-collected, not served from the stale cache
    recall = {k: v for k, v in first.metrics.items() if k.startswith("recall_")}
    assert recall and recall == {k: second.metrics[k] for k in recall}
    assert any(v > 0 for v in recall.values()), recall
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
