"""Hostile YAML and model files through the commands a user runs: `citegate ask --config` and
`citegate doctor` with an alias bomb, a syntax error, a tag, a FIFO, and a config naming a model
file outside its folder. Each is refused in one line naming the file and the rule, exit 2, with
no expansion printed and no wait on a pipe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from citegate.cli import main
from citegate.core import config_files
from citegate.models.gate_model import LearnedGate

pytestmark = pytest.mark.db

QUESTION = "What is the soul?"
BOMB = (
    "version: 3\nprovenance:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    + "pipeline: {lane_k: 40}\naccepted_on: {}\n"
)


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert len(err) < 500, err  # nothing expanded is printed
    for n in needles:
        assert n in err, err
    return err


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (BOMB, ("line 3, column 7", "an anchor (&name) is not accepted")),
        ("version: 1\npipeline:\n  lane_k: [40\nprovenance: {}\n", ("line 4, column 11",)),
        ("pipeline:\n  lane_k: !!python/object/apply:os.system [ls]\n", ("line 2", "tag")),
    ],
)
def test_ask_refuses_a_hostile_config_file_in_one_line(
    cli_db: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    needles: tuple[str, ...],
) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    refused(["ask", QUESTION, "--config", str(path)], capsys, str(path), *needles)


def test_ask_refuses_a_fifo_config_without_waiting_for_a_writer(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    refused(["ask", QUESTION, "--config", str(fifo)], capsys, "a FIFO (named pipe)")


def test_doctor_names_a_bomb_in_the_production_file_in_one_line(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prod = tmp_path / "production.yaml"
    prod.write_text(BOMB, encoding="utf-8")
    monkeypatch.setattr(config_files, "PRODUCTION", prod)
    capsys.readouterr()
    assert main(["doctor"]) == 2  # every check printed first, then the one error line
    out, err = capsys.readouterr()
    assert "production config unreadable" in out and err.count("\n") == 1
    lines = [x for x in (out + err).splitlines() if str(prod) in x]
    assert len(lines) == 1 and "line 3, column 7: an anchor" in lines[0], out + err
    assert len(out + err) < 5000 and "Traceback" not in err
    refused(["ask", QUESTION], capsys, str(prod), "an anchor")


def learned_config(folder: Path, gate_model: str, digest: str) -> Path:
    """A production-shaped config file in `folder` running the learned gate from `gate_model`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "production.yaml"
    path.write_text(
        "version: 2\nprovenance: {source_run: x}\npipeline:\n  gate: learned\n"
        f"  gate_model: {gate_model}\n  gate_model_digest: {digest}\n",
        encoding="utf-8",
    )
    return path


def test_ask_refuses_a_model_outside_the_config_folders_models_or_not_a_file(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = LearnedGate(
        features=("max_cosine",),
        language_stats={"*": (0.8, 0.1)},
        mean=(0.8,),
        scale=(0.1,),
        coef=(1.0,),
        intercept=0.0,
        threshold=0.5,
    )
    outside = tmp_path / "elsewhere" / "g.json"
    outside.parent.mkdir()
    digest = gate.save(outside)
    folder = tmp_path / "exp"
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "link.json").symlink_to(outside)
    for name in (str(outside), "../elsewhere/g.json", "models/link.json"):
        path = learned_config(folder, name, digest)
        refused(["ask", QUESTION, "--config", str(path)], capsys, "model file lies outside")
    os.mkfifo(folder / "models" / "pipe.json")
    path = learned_config(folder, "models/pipe.json", digest)
    refused(["ask", QUESTION, "--config", str(path)], capsys, "pipe.json", "a FIFO")
