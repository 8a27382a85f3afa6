"""The README's "Your own corpus in four commands" on the shipped example, through the command
line: import, split, run notebook 03 on it, a report that names the imported set; then the run's
retrieval pass exported as TREC files. And `--corpus` against either question-set parameter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citegate.cli import main
from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.corpus.builds import import_folder
from citegate.corpus.questions import load_set
from citegate.tracking.spec import (
    ExperimentSpec,
    NotebookParam,
    corpus_overrides,
    load_spec,
    with_corpus,
)

EXAMPLE = paths.DATA / "examples" / "xquad-mini"


def fake_import(name: str, split: bool, oos: str = "out-of-scope", folds: int = 0) -> None:
    """A build.json as an import writes it (what `--corpus` reads)."""
    builds = {name: {"build_id": f"{name}@x", "origin": "o"}}
    if split:
        builds[f"{name}-split"] = {"build_id": f"{name}-split@y", "origin": "o"}
    for i in range(1, folds + 1):
        builds[f"{name}-fold{i}"] = {"build_id": f"{name}-fold{i}@z", "origin": "o", "fold": i}
    folder = import_folder(name)
    folder.mkdir(parents=True, exist_ok=True)
    record: dict[str, object] = {"name": name, "builds": builds, "out_of_scope": oos}
    if folds:
        record["folds"] = {"k": folds, "field": None, "salt": "s"}
    (folder / "build.json").write_text(json.dumps(record), encoding="utf-8")


def spec_with(*params: str) -> ExperimentSpec:
    declared = {p: NotebookParam(p, "{}", dict) for p in params}
    declared["RERANKER"] = NotebookParam("RERANKER", "'ltr/default'", str)
    return ExperimentSpec(
        "x", Path("nb.ipynb"), "", {}, {}, {}, {}, notebook_params=declared, path=Path("x.yaml")
    )


def test_corpus_replaces_whichever_set_parameter_the_notebook_declares() -> None:
    fake_import("ov1", split=True, oos="ov1-out-of-scope")
    sets = {"ov1-split": "ov1-split", "ov1-out-of-scope": "ov1-split"}
    assert corpus_overrides(spec_with("SETS"), "ov1") == {"SETS": sets, "RERANKER": "none"}
    assert corpus_overrides(spec_with("CORPORA"), "ov1")["CORPORA"] == {"ov1-split": sets}
    # a notebook comparing corpora recommends for the imported one, not for gita-split
    chosen = corpus_overrides(spec_with("CORPORA", "RECOMMEND_FOR"), "ov1")
    assert chosen["RECOMMEND_FOR"] == "ov1-split"
    fake_import("ov2", split=False)
    assert corpus_overrides(spec_with("SETS"), "ov2")["SETS"] == {
        "ov2": "ov2",
        "out-of-scope": "ov2",
    }
    assert with_corpus(spec_with("SETS"), "ov2", {"RERANKER": "ltr/x"})["RERANKER"] == "ltr/x"
    with pytest.raises(ConfigError, match="do not --set it"):
        with_corpus(spec_with("SETS"), "ov2", {"SETS": {}})
    with pytest.raises(ConfigError, match="no imported corpus"):
        corpus_overrides(spec_with("SETS"), "never-imported")
    with pytest.raises(ConfigError, match="declares none of"):
        corpus_overrides(spec_with("LIMIT"), "ov1")


def test_corpus_cross_fits_the_imported_folds_or_nothing() -> None:
    fake_import("ov4", split=True, folds=3)
    fake_import("ov5", split=True)
    spec = spec_with("CORPORA", "FOLD_CORPORA", "FOLD_GOALS")
    got = corpus_overrides(spec, "ov4")
    assert (got["FOLD_CORPORA"], got["FOLD_GOALS"]) == (["ov4"], {})
    assert corpus_overrides(spec, "ov5")["FOLD_CORPORA"] == []  # no folds: nothing cross-fitted
    shipped = load_spec(paths.EXPERIMENTS / "05_gate_signals.yaml")
    params = shipped.resolved("tiny", with_corpus(shipped, "ov4", {}))
    assert params["FOLD_CORPORA"] == ["ov4"] and params["FOLD_GOALS"] == {}


def test_shipped_03_spec_takes_the_corpus_override() -> None:
    fake_import("ov3", split=True)
    spec = load_spec(paths.EXPERIMENTS / "03_gate_roc.yaml")
    params = spec.resolved("tiny", with_corpus(spec, "ov3", {}))
    chosen = params.get("CORPORA", params.get("SETS"))
    assert "ov3-split" in json.dumps(chosen) and "gita" not in json.dumps(chosen)
    assert params.get("RECOMMEND_FOR", "ov3-split") == "ov3-split"


@pytest.mark.db
@pytest.mark.slow
def test_four_commands_on_the_example(
    fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))
    assert main(["data", "import-beir", str(EXAMPLE), "--name", "mini"]) == 0
    assert main(["data", "split", "mini", "--holdout-by", "article"]) == 0
    spec = str(paths.EXPERIMENTS / "03_gate_roc.yaml")
    assert main(["run", spec, "--corpus", "mini", "--profile", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "FINISHED" in out and "held out 40 of 150 documents" in out
    report = next((tmp_path / "var" / "runs" / "03_gate_roc").glob("*/report.html"))
    html = report.read_text(encoding="utf-8")
    digest = load_set("mini-split").digest
    assert "imported corpus" in html and digest[:16] in html and "mini-split@" in html
    summary = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))
    assert main(["export-run", summary["run_id"], "--out", str(tmp_path / "trec")]) == 0
    run_lines = (tmp_path / "trec" / "mini-split.run").read_text(encoding="utf-8").splitlines()
    assert run_lines and all(len(line.split()) == 6 for line in run_lines)
    assert (tmp_path / "trec" / "mini-split.qrels").read_text(encoding="utf-8")
