"""`citegate models` through `citegate.cli.main`: one row per role with whether the config's
turn runs it, its model, whether it can be reached and its verdict, as text and as JSON. A
remote model is checked by one `GET /models` through the SDK against a real local server; no
database and no model is started."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import make_verdict
from llm_stub import dead_url, error, model_list, stub_server

from citegate.cli import main
from citegate.core.config import DESIGN, save_config
from citegate.core.config_files import production
from citegate.core.verdicts import write_verdict
from citegate.models.llm_server import LOCAL_MODEL_ID

KEYS = ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")
KEY = "sk-or-test-models-7f3a"
REMOTE = "openrouter/vendor/strong"


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No model key set, a private call cache, and a database nobody may reach (none is used)."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CITEGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DATABASE_URL", "postgresql://citegate:pw@127.0.0.1:9/none")


def rows(out: str) -> dict[str, list[str]]:
    """The table's rows by role: its cells split on runs of two or more spaces."""
    import re

    lines = out.strip().splitlines()
    assert lines[0].startswith("config: ") and lines[1].split() == [
        "role", "runs", "model", "reachable", "verdict", "run",
    ]  # fmt: skip
    return {cells[0]: cells for cells in (re.split(r" {2,}", line) for line in lines[2:])}


def remote_config(folder: Path) -> Path:
    """A config whose every role runs: the planner and the fallback with passing verdicts,
    the generative composer on the remote model, the rest on `llm`'s (the same model)."""
    path = folder / "remote.yaml"
    bars = {
        f"{role}_bar": write_verdict(folder, make_verdict(role, REMOTE, run=f"{role}-run")).name
        for role in ("planner", "composer", "fallback")
    }
    cfg = DESIGN.replace(llm=REMOTE, planner="llm", composer="generative", **bars)
    save_config(cfg, path)
    return path


def test_production_lists_every_role_on_the_local_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)  # a key alone moves no role
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    table = rows(out)
    assert out.startswith("config: production (version ")
    assert list(table) == ["planner", "rewrite", "outline", "composer", "fallback", "judge"]
    assert {cells[2] for cells in table.values()} == {LOCAL_MODEL_ID}
    assert table["fallback"][1:] == [
        "no",
        LOCAL_MODEL_ID,
        "yes",
        "no bar passed",
        "-",
    ]  # fmt: skip  (production names no fallback_bar: its turn never runs the model)
    assert table["planner"][4] == table["rewrite"][4] == "no bar passed"
    assert table["composer"][4] == table["outline"][4] == "no bar passed"
    assert all(cells[1] == "no" for cells in table.values())  # extractive, offline, no bar

    assert main(["models", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["source"] == "production" and [r["role"] for r in data["roles"]] == [
        "planner", "rewrite", "outline", "composer", "fallback", "judge",
    ]  # fmt: skip
    assert data["roles"][-1]["runs"] is False  # notebook 06 runs the judge, never a turn
    fallback = data["roles"][-2]
    assert fallback == {
        "role": "fallback",
        "runs": False,
        "model": LOCAL_MODEL_ID,
        "where": "local",
        "reachable": True,
        "detail": "",
        "verdict": "no bar passed",
        "run": production().fallback_bar,
    }


def test_a_config_on_a_remote_model_is_checked_once_through_the_api(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = remote_config(tmp_path)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    with stub_server([], listing=model_list("vendor/strong", "other")) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.base_url)
        assert main(["models", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    table = rows(out)
    assert stub.gets == ["/v1/models"] and stub.requests == []  # one check, no chat call
    assert table["planner"][1:] == ["yes", REMOTE, "yes", "passed", "planner-run"]
    assert table["composer"][1:] == ["yes", REMOTE, "yes", "passed", "composer-run"]
    assert table["outline"][1] == "no"  # the generative composer writes: no outline planner
    assert table["fallback"][1:] == ["yes", REMOTE, "yes", "passed", "fallback-run"]
    assert KEY not in out


@pytest.mark.parametrize(
    ("key", "listing", "flags", "reachable"),
    [
        ("", None, [], "no (OPENROUTER_API_KEY is not set)"),
        (KEY, None, ["--no-check"], "not checked (key set)"),
        (
            KEY,
            (401, error(f"Incorrect API key provided: {KEY}")),
            [],
            "no (the key was refused (HTTP 401): check OPENROUTER_API_KEY)",
        ),
        (KEY, model_list("vendor/other"), [], "no (the API does not list 'vendor/strong')"),
    ],
    ids=["no-key", "no-check", "refused-key", "not-listed"],
)
def test_a_remote_model_that_cannot_be_reached_says_why(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    key: str,
    listing: tuple[int, dict[str, object]] | None,
    flags: list[str],
    reachable: str,
) -> None:
    path = remote_config(tmp_path)
    if key:
        monkeypatch.setenv("OPENROUTER_API_KEY", key)
    with stub_server([], listing=listing) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.base_url)
        assert main(["models", "--config", str(path), *flags]) == 0
    out = capsys.readouterr().out
    assert rows(out)["fallback"][3] == reachable and KEY not in out
    assert stub.gets == ([] if not key or flags else ["/v1/models"])


def test_an_unreachable_api_and_a_core_install_say_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = remote_config(tmp_path)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("OPENROUTER_BASE_URL", dead_url())
    assert main(["models", "--config", str(path), "--json"]) == 0
    planner = json.loads(capsys.readouterr().out)["roles"][0]
    assert planner["reachable"] is False and planner["detail"].startswith("not reachable: ")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if the llm extra were missing
    assert main(["models", "--design"]) == 0
    table = rows(capsys.readouterr().out)
    assert table["composer"][3].startswith("no (") and "llm extra" in table["composer"][3]


def test_a_missing_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--config", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("citegate: error:") and err.count("\n") == 1
