"""Role verdicts: a notebook's verdict file round-trips by digest; an altered, lying, malformed or
oversized file is refused in one line; a config's bar naming a missing, failed, other-role or
other-model verdict is refused by the service's config check, `citegate promote` and `ask`, and
shown as refused by `citegate models`; `citegate models adopt` copies only a passing verdict of a
finished run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_verdict
from hypothesis import given, settings
from hypothesis import strategies as st

from citegate.cli import main
from citegate.core.config import DESIGN, save_config
from citegate.core.errors import ConfigError
from citegate.core.verdicts import (
    MAX_VERDICT_BYTES,
    VERDICTS_DIR,
    parse_verdict,
    read_verdict,
    verdict_file_name,
    verdict_text,
    write_verdict,
)
from citegate.evaluation.bars import Criterion, judge, judge_rate
from citegate.models.llm_server import LOCAL_MODEL_ID
from citegate.pipeline.roles import check_bars, role_verdict
from citegate.pipeline.service import choose_config
from citegate.tracking.promote.verdicts import adopt

REMOTE = "openrouter/vendor/model-a"


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_a_verdict_round_trips_under_its_digest_name(tmp_path: Path) -> None:
    v = make_verdict("rewrite", LOCAL_MODEL_ID)
    path = write_verdict(tmp_path, v)
    assert path.name == verdict_file_name(v) and path.name.startswith("verdict-rewrite-")
    back = read_verdict(path)
    assert back == v and back.passed
    assert write_verdict(tmp_path, v) == path  # the same verdict, the same file
    failed = make_verdict("rewrite", LOCAL_MODEL_ID, passed=False)
    assert not failed.passed and "Wilson 95% low" in failed.why_not()
    assert verdict_file_name(failed) != path.name


def test_rules_judge_bounds_not_point_values() -> None:
    c = Criterion("r", "rate", 0.8, "wilson_low>=")
    assert judge_rate(c, [True] * 5).passed is False  # 5 of 5: the Wilson low is 0.57
    assert judge_rate(c, [True] * 40).passed is True
    assert judge_rate(c, []).passed is False and judge_rate(c, []).reason == "not measured"
    flips = Criterion("f", "flip rate", 0.2, "wilson_high<=")
    assert judge(flips, 0.05, 0.01, 0.15, 40).passed is True
    assert judge(flips, 0.05, 0.01, 0.25, 40).passed is False
    auc = Criterion("a", "AUROC", 0.5, "ci_low>")
    assert judge(auc, 0.7, 0.5, 0.8, 30).passed is False  # the bound must clear chance
    info = judge(Criterion("i", "info", 0.0, "info", required=False), 1.0, 0.9, 1.1, 3)
    assert info.passed is None


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d.update(passed=True), "criteria give False"),
        (lambda d: d.update(format="other/1"), "not a verdict file"),
        (lambda d: d.update(role="oracle"), "unknown role"),
        (lambda d: d.update(criteria=[]), "non-empty list"),
        (lambda d: d["criteria"][0].update(n=-1), "whole number"),
        (lambda d: d["criteria"][0].update(rule="vibes"), "unknown rule"),
        (lambda d: d["criteria"][0].update(required="yes"), "'required'"),
        (lambda d: d.update(model=""), "'model'"),
    ],
)
def test_a_malformed_verdict_is_refused_in_one_line(edit, says: str) -> None:
    doc = json.loads(verdict_text(make_verdict("fallback", LOCAL_MODEL_ID, passed=False)))
    edit(doc)
    with pytest.raises(ConfigError, match=says) as exc:
        parse_verdict(doc, "v.json")
    assert one_line(exc).startswith("v.json:")


def test_an_altered_or_oversized_file_is_refused(tmp_path: Path) -> None:
    path = write_verdict(tmp_path, make_verdict("composer", REMOTE))
    path.write_text(path.read_text().replace('"n": 20', '"n": 21'))
    with pytest.raises(ConfigError, match="altered after it was written") as exc:
        read_verdict(path)
    one_line(exc)
    big = tmp_path / "big.json"
    big.write_text(" " * (MAX_VERDICT_BYTES + 1))
    with pytest.raises(ConfigError, match="over the limit"):
        read_verdict(big)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50 + "]" * 50)
    with pytest.raises(ConfigError, match="not a verdict file"):
        read_verdict(deep)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=20,
    )
)
def test_fuzz_any_json_is_a_verdict_or_one_refusal(doc: object) -> None:
    try:
        parse_verdict(doc, "fuzz.json")
    except ConfigError as exc:
        assert "\n" not in str(exc)


def config_with(tmp_path: Path, verdict_name: str = "", **fields: object) -> Path:
    """A plain config file in `tmp_path` whose rewrite bar names `verdict_name`."""
    path = tmp_path / "cfg.yaml"
    save_config(DESIGN.replace(rewrite_bar=verdict_name, **fields), path)
    return path


def test_a_passing_verdict_on_the_model_the_role_runs_is_taken(tmp_path: Path) -> None:
    name = write_verdict(tmp_path, make_verdict("rewrite", LOCAL_MODEL_ID)).name
    choice = choose_config(str(config_with(tmp_path, name)))
    got = check_bars(choice.config, tmp_path, tmp_path)
    assert got["rewrite_bar"].model == LOCAL_MODEL_ID
    assert role_verdict(choice.config, "rewrite", tmp_path, tmp_path)[0] == "passed"


@pytest.mark.parametrize(
    ("verdict", "fields", "says"),
    [
        (make_verdict("rewrite", LOCAL_MODEL_ID, passed=False), {}, "failed on the rewrite"),
        (make_verdict("rewrite", REMOTE), {}, "a verdict vouches only for the model it measured"),
        (make_verdict("fallback", LOCAL_MODEL_ID), {}, "not the rewrite"),
        (make_verdict("rewrite", LOCAL_MODEL_ID), {"rewrite_model": REMOTE}, "runs " + REMOTE),
    ],
)
def test_a_bar_that_does_not_vouch_is_refused_before_anything_runs(
    tmp_path: Path, verdict, fields: dict, says: str
) -> None:
    name = write_verdict(tmp_path, verdict).name
    path = config_with(tmp_path, name, **fields)
    with pytest.raises(ConfigError, match=says) as exc:
        choose_config(str(path))
    one_line(exc)


def test_a_missing_verdict_says_where_it_looked_and_how_to_adopt(tmp_path: Path) -> None:
    path = config_with(tmp_path, "verdict-rewrite-000000000000.json")
    with pytest.raises(ConfigError, match="citegate models adopt") as exc:
        choose_config(str(path))
    assert str(tmp_path) in one_line(exc)
    outside = config_with(tmp_path, "../verdict-rewrite-000000000000.json")
    with pytest.raises(ConfigError, match="lies outside"):
        choose_config(str(outside))


def test_ask_refuses_a_config_whose_bar_names_a_failed_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = write_verdict(tmp_path, make_verdict("rewrite", LOCAL_MODEL_ID, passed=False)).name
    code = main(["ask", "--config", str(config_with(tmp_path, name)), "What is dharma?"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "failed on the rewrite" in err


def test_models_shows_each_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = write_verdict(tmp_path, make_verdict("rewrite", LOCAL_MODEL_ID, passed=False)).name
    code = main(["models", "--no-check", "--json", "--config", str(config_with(tmp_path, name))])
    rows = {r["role"]: r for r in json.loads(capsys.readouterr().out)["roles"]}
    assert code == 0
    assert rows["rewrite"]["verdict"].startswith("refused: rewrite_bar names a verdict")
    assert rows["planner"]["verdict"] == "no bar passed"


def run_folder(tmp_path: Path, *verdicts, status: str = "FINISHED", check: str = "OK") -> Path:
    """A run folder as `citegate run` leaves it: summary.json and the notebook's verdicts/."""
    folder = tmp_path / "runs" / "01_prefloor_recall" / "20261201T000000Z-abcd1234"
    for v in verdicts:
        write_verdict(folder / VERDICTS_DIR, v)
    (folder / "summary.json").write_text(json.dumps({"status": status, "check": check}))
    return folder


def test_adopt_copies_a_passing_verdict_and_names_the_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = make_verdict("rewrite", LOCAL_MODEL_ID), make_verdict("rewrite", REMOTE, False)
    folder = run_folder(tmp_path, good, bad)
    into = tmp_path / "experiments" / "models"
    args = ["models", "adopt", str(folder), "--role", "rewrite", "--into", str(into)]
    assert main([*args, "--model", LOCAL_MODEL_ID]) == 0
    out = capsys.readouterr().out
    name = verdict_file_name(good)
    assert (into / name).is_file() and f"rewrite_bar: models/{name}" in out
    assert main([*args, "--model", REMOTE]) == 2
    assert "only a passing verdict is adopted" in capsys.readouterr().err
    assert main(args) == 2
    assert "name one with --model" in capsys.readouterr().err


@pytest.mark.parametrize(("status", "check", "says"), [
    ("FAILED", "OK", "did not finish"),
    ("FINISHED", "FAIL", "expected-metric check FAILED"),
])  # fmt: skip
def test_adopt_refuses_a_verdict_of_a_run_whose_numbers_are_not_right(
    tmp_path: Path, status: str, check: str, says: str
) -> None:
    folder = run_folder(tmp_path, make_verdict("planner", REMOTE), status=status, check=check)
    with pytest.raises(ConfigError, match=says):
        adopt(folder, "planner", tmp_path / "models")
    assert not (tmp_path / "models").exists()
