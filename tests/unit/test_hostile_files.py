"""The readers of files a user hands us: YAML (`core.yamlfile`: production, `--config`, specs,
`--set`) refuses anchors, aliases, explicit tags, deep nesting, oversized and non-regular files in
one line naming the file, line and column, never echoing the input; model files
(`core.inputs.read_file_bytes`, the gate and LTR loaders) refuse FIFOs, devices, oversized and
deeply nested files, and a config cannot name a model outside its models folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from citegate.cli.run import parse_sets
from citegate.core import paths
from citegate.core.config import DESIGN, load_config
from citegate.core.config_files import named, read_production
from citegate.core.errors import ConfigError
from citegate.core.inputs import MAX_MODEL_BYTES, json_depth, loads_json
from citegate.core.yamlfile import MAX_YAML_BYTES, MAX_YAML_DEPTH, loads_yaml, read_yaml
from citegate.models import gate_model as gm
from citegate.models.ltr.model import load_ltr
from citegate.store.production import gate_model_path, load_gate, load_reranker
from citegate.tracking.spec import load_spec

SECRET = "hunter2-do-not-echo"
# Eight levels of nine aliases each: 9**8 = 43 million strings once expanded.
BOMB = (
    "a0: &a0 ["
    + ", ".join(["x"] * 9)
    + "]\n"
    + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
)
PRODUCTION_SHAPE = "version: 1\nprovenance: {{}}\npipeline:\n  lane_k: {}\n"


def one_line_refusal(exc: pytest.ExceptionInfo[ConfigError], *needles: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and len(text) < 400, text
    assert SECRET not in text, text
    for n in needles:
        assert n in text, text
    return text


@pytest.mark.parametrize(
    ("text", "rule", "line"),
    [
        (f"version: 1\nprovenance: {{i: &i {SECRET}}}\nversion2: *i\n", "anchor", 2),
        ("version: 1\nprovenance: {}\npipeline: *nowhere\n", "alias", 3),
        (BOMB, "anchor", 1),
        (f"version: !!python/object/apply:os.system [{SECRET}]\n", "tag", 1),
        (f"version: !!str {SECRET}\n", "tag", 1),
        (f"version: !custom {SECRET}\n", "tag", 1),
        ("pipeline: " + "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1), "deeper", 1),
        (f"version: 1\nprovenance:\n  note: '{SECRET}\n  x: [1\n", "", 5),
        (f"version: 1\npipeline:\n\tlane_k: {SECRET}\n", "'\\t'", 3),
        (f"version: 1\npipeline: {{lane_k: 3 {SECRET}: x: y}}\n", "", 2),
    ],
)
def test_every_yaml_reader_refuses_in_one_line_naming_file_line_and_rule(
    tmp_path: Path, text: str, rule: str, line: int
) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    for reader in (read_production, load_config, named, load_spec):
        with pytest.raises(ConfigError) as exc:
            reader(path)
        one_line_refusal(exc, str(path), f"line {line}, column ", rule)


def test_a_file_over_the_size_limit_or_not_utf8_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("x: [" + "1, " * (MAX_YAML_BYTES // 3) + "]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_config(big)
    one_line_refusal(exc, str(big), "over the limit of 1.0 MB")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"lane_k: 3\nnote: caf\xe9\n")
    with pytest.raises(ConfigError) as exc:
        load_config(latin)
    one_line_refusal(exc, str(latin), "not UTF-8 text (byte 20)")
    with pytest.raises(ConfigError) as exc:
        loads_yaml("a: \x00", "--set a")
    one_line_refusal(exc, "--set a: line 1, column 4: not YAML text (character U+0000)")


def test_a_fifo_or_a_device_is_refused_without_being_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # opened for reading it would wait for a writer forever
    with pytest.raises(ConfigError) as exc:
        load_config(fifo)
    one_line_refusal(exc, str(fifo), "a FIFO (named pipe); give a regular file")
    with pytest.raises(ConfigError) as exc:
        read_production(Path("/dev/zero"))  # never ends: read whole, it exhausts memory
    one_line_refusal(exc, "/dev/zero", "a device")
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path)
    one_line_refusal(exc, "cannot read the config file: it is a folder")


def test_plain_yaml_still_reads_as_safe_load_does(tmp_path: Path) -> None:
    for path in sorted(paths.EXPERIMENTS.rglob("*.yaml")):
        assert read_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path
    nested = "a: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)
    assert json_depth(loads_yaml(nested, "x")) == MAX_YAML_DEPTH
    assert loads_yaml("when: 2024-01-02\nq: 'it''s'\n<<: {k: 1}\n", "x")["q"] == "it's"
    path = tmp_path / "c.yaml"
    path.write_text(PRODUCTION_SHAPE.format(7), encoding="utf-8")
    assert named(path).config.lane_k == 7


def test_set_values_meet_the_same_rules() -> None:
    assert parse_sets(["K=[1, 2]", "L=x"]) == {"K": [1, 2], "L": "x"}
    with pytest.raises(ConfigError) as exc:
        parse_sets([f"K=&a [{SECRET}]"])
    one_line_refusal(exc, "--set K: line 1, column 1: an anchor")


# ---------------------------------------------------------------- model files


def test_json_nested_too_deep_is_bad_json_not_a_recursion_error() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        loads_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(json.JSONDecodeError, match="nested deeper than 4 levels"):
        loads_json('{"a": [[[[1]]]]}', 4)
    assert loads_json('{"a": [[[1]]]}', 4) == {"a": [[[1]]]}


@pytest.mark.parametrize("depth", [100_000, 40])
def test_a_deeply_nested_gate_or_ltr_model_is_refused(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"format": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        gm.load(path)
    one_line_refusal(exc, str(path), "not a JSON gate model (nested")
    with pytest.raises(ConfigError) as exc:
        load_ltr("deep", path)
    one_line_refusal(exc, str(path), "not a JSON LTR model (nested")


def test_a_model_that_is_a_fifo_a_device_or_too_large_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_MODEL_BYTES + 1)  # sparse: no disk used
    for path, rule in ((fifo, "a FIFO"), (Path("/dev/zero"), "a device"), (big, "16.0 MB")):
        with pytest.raises(ConfigError) as exc:
            gm.load(path)
        one_line_refusal(exc, str(path), rule)
        with pytest.raises(ConfigError) as exc:
            load_ltr("x", path)
        one_line_refusal(exc, str(path), rule)
        with pytest.raises(ConfigError):
            gm.file_digest(path)


def gate_file(folder: Path) -> tuple[Path, str]:
    """A valid gate model file in `folder`, and its digest."""
    folder.mkdir(parents=True, exist_ok=True)
    g = gm.LearnedGate(
        features=("max_cosine",),
        language_stats={"*": (0.8, 0.1)},
        mean=(0.8,),
        scale=(0.1,),
        coef=(1.0,),
        intercept=0.0,
        threshold=0.5,
    )
    return folder / "g.json", g.save(folder / "g.json")


def test_a_config_cannot_name_a_model_outside_its_models_folder(tmp_path: Path) -> None:
    config_dir = tmp_path / "experiments"
    outside, digest = gate_file(tmp_path / "elsewhere")
    inside, _ = gate_file(config_dir / "models")
    (config_dir / "models" / "link.json").symlink_to(outside)
    cfg = DESIGN.replace(gate="learned", gate_model="models/g.json", gate_model_digest=digest)
    assert load_gate(cfg.replace(gate_model="models/g.json"), config_dir).threshold == 0.5
    for name in (str(outside), "../elsewhere/g.json", "models/link.json", "g.json", "/dev/zero"):
        with pytest.raises(ConfigError) as exc:
            load_gate(cfg.replace(gate_model=name), config_dir)
        one_line_refusal(exc, "model file lies outside", str((config_dir / "models").resolve()))
    ltr = cfg.replace(
        gate="coverage", reranker="ltr/x", reranker_model=str(outside), reranker_model_digest=digest
    )
    with pytest.raises(ConfigError, match="LTR reranker's model file lies outside"):
        load_reranker(ltr, config_dir)
    # A plain --config file (a run folder) names its model next to itself: inside its folder.
    run = cfg.replace(gate_model="g.json")
    assert gate_model_path(run, inside.parent, inside.parent) == inside
    with pytest.raises(ConfigError, match="lies outside"):
        gate_model_path(run.replace(gate_model=str(outside)), inside.parent, inside.parent)
    # An absolute path a caller already resolved and checked is taken as given.
    assert load_gate(cfg.replace(gate_model=str(outside))).threshold == 0.5


def test_a_shipped_ltr_model_still_loads_through_the_reader(tmp_path: Path) -> None:
    shipped = sorted((paths.EXPERIMENTS / "models").glob("ltr-*.json"))[0]
    copy = tmp_path / "ltr.json"
    shutil.copy(shipped, copy)
    model = load_ltr("shipped", copy)
    assert load_ltr("shipped", copy, model.digest).digest == model.digest


@pytest.mark.parametrize("key", ["version", "pipeline", "provenance", "pipeline.lane_k"])
def test_a_value_of_the_wrong_shape_is_named_not_printed_whole(tmp_path: Path, key: str) -> None:
    doc: dict[str, object] = {"version": 1, "pipeline": {"lane_k": 40}, "provenance": {}}
    value = SECRET[:6] + "x" * 500_000 + SECRET
    if key == "pipeline.lane_k":
        doc["pipeline"] = {"lane_k": value}
    else:
        doc[key] = value
    path = tmp_path / "production.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        read_production(path)
    one_line_refusal(exc, str(path), key.split(".")[-1])
