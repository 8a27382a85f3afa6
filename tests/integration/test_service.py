"""The service facade (`pipeline.service.Service`) against a real database: what a service
calls gives what `citegate ask` prints, and a bad config is refused before anything loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from citegate.core.errors import ConfigError, EmptyCorpus
from citegate.core.types import Branch
from citegate.pipeline.service import Service

pytestmark = pytest.mark.db


def test_a_service_retrieves_and_answers_with_the_config_it_names(tiny: tuple[str, str]) -> None:
    with Service.open("design", corpora=["tiny"]) as svc:
        assert svc.choice.source == "design" and svc.choice.config.corpora == ("tiny",)
        res = svc.retrieve("Is the self eternal?")
        assert res.notes and res.decided_by is not None
        turn = svc.answer("Is the self eternal?", fallback=False)
    assert turn.branch in (Branch.GROUNDED, Branch.DECLINE)
    assert turn.check is not None or turn.branch == Branch.DECLINE


def test_production_names_its_own_models_and_an_empty_corpus_is_refused(
    tiny: tuple[str, str],
) -> None:
    with Service.open() as svc:
        assert svc.choice.source == "production" and svc.reranker.id == svc.choice.config.reranker
        with pytest.raises(EmptyCorpus):  # production's corpus was never ingested here
            svc.retrieve("Is the self eternal?")


def test_a_bad_config_file_is_refused_before_anything_connects(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("pre_floor: 7\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="pre_floor"), Service.open(str(bad)):
        pass
