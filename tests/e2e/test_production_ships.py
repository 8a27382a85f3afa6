"""The committed production config is self-contained: every model file it names is tracked by git
with the digest it records, and `citegate ask` answers through it with no trained model under
var/ (a fresh clone's state: nothing but the repository and an ingested corpus)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from citegate.cli import main
from citegate.core import paths
from citegate.core.config_files import PRODUCTION, production
from citegate.store import load_production_config


def tracked(path: Path) -> bool:
    """Whether git tracks `path` (what a clone of the repository holds)."""
    rel = path.resolve().relative_to(paths.ROOT.resolve())
    out = subprocess.run(
        ["git", "ls-files", "--error-unmatch", str(rel)],
        cwd=paths.ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return out.returncode == 0


def test_every_model_production_names_is_committed_with_its_digest() -> None:
    cfg = production()
    named = [
        (cfg.gate_model, cfg.gate_model_digest),
        (cfg.reranker_model, cfg.reranker_model_digest),
    ]
    if cfg.reranker.startswith("ltr/"):
        assert cfg.reranker_model, "production runs an LTR reranker without naming its model file"
    for name, digest in named:
        if not name:
            continue
        path = PRODUCTION.parent / name
        assert not Path(name).is_absolute() and path.is_file() and tracked(path), name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name
        assert json.loads(path.read_text(encoding="utf-8"))  # data, not a pickle


@pytest.mark.db
def test_ask_answers_through_production_with_an_empty_var(
    demo_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", demo_db)
    monkeypatch.setenv("CITEGATE_VAR", str(tmp_path / "var"))  # no var/models: nothing trained
    cfg = load_production_config()
    assert main(["ask", "What does Chapter 2, Verse 13 say about the soul?", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["source"] == "production"
    assert data["gate"]["kind"] == cfg.gate
    assert not (tmp_path / "var" / "models").exists()  # nothing was trained to answer
