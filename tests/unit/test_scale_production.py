"""The scale bench's production row (`research.scale_production`): production's config with only
its corpora and embedder replaced, and a BM25 index built for it only when the bench has none."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from citegate.core import config_files
from citegate.core.config import PipelineConfig
from citegate.research import scale_production
from citegate.research.scale_lexical import CORPUS


def test_only_the_corpora_and_the_embedder_are_replaced() -> None:
    cfg = PipelineConfig(lane_k=40, cap=60, lexical_backend="bm25", memory=True)
    got = scale_production.bench_config(cfg, "e5+scale")
    assert got.corpora == (CORPUS,) and got.embedder == "e5+scale"
    assert got.replace(corpora=cfg.corpora, embedder=cfg.embedder) == cfg


def _builds(monkeypatch: pytest.MonkeyPatch, root: Path) -> list[str]:
    built: list[str] = []
    monkeypatch.setattr(scale_production.bm25, "index_root", lambda: root)

    def build(conn: object, eid: str, corpora: list[str]) -> SimpleNamespace:
        (root / "k1").mkdir()
        built.append(eid)
        return SimpleNamespace(key="k1")

    monkeypatch.setattr(scale_production.bm25, "build", build)
    return built


def test_a_bm25_index_is_built_and_removed_only_when_the_bench_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _builds(monkeypatch, tmp_path)
    bm25 = scale_production.bench_config(PipelineConfig(lexical_backend="bm25"), "e")
    conn: Any = None  # nothing is read: the index build is the fake above
    with scale_production.lexical_index(conn, bm25, built=True):
        assert built == []
    with scale_production.lexical_index(conn, bm25.replace(lexical_backend="postgres"), False):
        assert built == []
    with scale_production.lexical_index(conn, bm25, built=False):
        assert built == ["e"] and (tmp_path / "k1").is_dir()
    assert not (tmp_path / "k1").exists()


def test_the_setup_is_production_as_a_service_loads_it() -> None:
    if not config_files.PRODUCTION.exists():
        pytest.skip("no production config in this checkout")
    setup = scale_production.load_setup()
    assert setup is not None and setup.config == config_files.production()
    assert setup.reranker.id == setup.config.reranker
    assert (setup.gate is not None) == (setup.config.gate == "learned")
    assert setup.facts["lexical_backend"] == setup.config.lexical_backend
    assert scale_production.load_setup(Path("/nonexistent/production.yaml")) is None
