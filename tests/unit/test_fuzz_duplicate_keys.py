"""A key written twice in one YAML mapping is refused by the one YAML reader (`core.yamlfile`):
generated mappings (hypothesis), block and flow, nested in mappings and lists, the key quoted or
plain, are refused in one line naming the line and column of the second key, never echoing the
value written under it; and every file kind the reader reads (production, a `--config` file, an
experiment spec, guards, bench goals, a notes file, a `--set` value) refuses the shipped file
with one key written twice, in one line naming line and column. 500 examples, the same inputs
every run."""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citegate.core import paths
from citegate.core.config import DESIGN, load_config, save_config
from citegate.core.config_files import named, read_production
from citegate.core.errors import CitegateError
from citegate.core.yamlfile import YamlRefusal, loads_yaml
from citegate.corpus.memory_questions import DEMO_NOTES
from citegate.corpus.notes import read_notes
from citegate.research.bench.goals import load_goals
from citegate.tracking.promote.guards import load_guards
from citegate.tracking.spec import load_spec

FUZZ = settings(
    max_examples=500,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
SECRET = "Zq9secretvalue"
MARK = "\x00"  # where the second key starts in the generated text, taken out before parsing
TWICE = "a key appears twice in one mapping"


@dataclass
class Node:
    """A generated YAML node: a scalar (`text`), a mapping (`pairs`) or a list (`items`)."""

    text: str | None = None
    pairs: list[tuple[str, Node, bool]] | None = None  # (key, value, is the key written twice)
    items: list[Node] = field(default_factory=list)
    flow: bool = False


# Keys start with k: never a YAML boolean, null or number, so quoted and plain read the same.
KEYS = st.from_regex(r"k[a-z0-9_]{0,8}", fullmatch=True)
SCALARS = st.builds(Node, text=st.text(max_size=12))


def _mapping(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    pairs = st.lists(st.tuples(KEYS, children), min_size=1, max_size=4, unique_by=lambda p: p[0])
    return st.builds(
        lambda ps, flow: Node(pairs=[(k, v, False) for k, v in ps], flow=flow), pairs, st.booleans()
    )


def _list(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.builds(
        lambda items, flow: Node(items=items, flow=flow),
        st.lists(children, min_size=1, max_size=3),
        st.booleans(),
    )


TREES = st.recursive(SCALARS, lambda c: _mapping(c) | _list(c), max_leaves=12)
ROOTS = _mapping(TREES)


def mappings(node: Node) -> list[Node]:
    """Every mapping in the tree, the root first."""
    out = [node] if node.pairs is not None else []
    for child in [v for _, v, _ in node.pairs or []] + node.items:
        out += mappings(child)
    return out


def key_text(key: str, style: int, twice: bool) -> str:
    """The key plain, single-quoted or double-quoted (its second writing in the next style):
    YAML reads each to the same string, so each pair of styles is a key written twice. The
    second writing is marked where it starts."""
    text = [key, f"'{key}'", json.dumps(key)][(style + twice) % 3]
    return MARK + text if twice else text


def inline(node: Node, style: int) -> str:
    """The node in flow style (a scalar double-quoted, JSON's escapes being YAML's too)."""
    if node.text is not None:
        return json.dumps(node.text)
    if node.pairs is not None:
        pairs = [f"{key_text(k, style, twice)}: {inline(v, style)}"
                 for k, v, twice in node.pairs]  # fmt: skip
        return "{" + ", ".join(pairs) + "}"
    return "[" + ", ".join(inline(c, style) for c in node.items) + "]"


def block(node: Node, indent: int, style: int) -> list[str]:
    """The node's lines in block style; a scalar or flow child stays on its key's line."""
    pad, lines = " " * indent, []
    for key, child, twice in node.pairs or []:
        head = f"{pad}{key_text(key, style, twice)}:"
        if child.text is not None or child.flow:
            lines.append(f"{head} {inline(child, style)}")
        else:
            lines += [head, *block(child, indent + 2, style)]
    for child in node.items:
        if child.text is not None or child.flow:
            lines.append(f"{pad}- {inline(child, style)}")
        else:
            lines += [f"{pad}-", *block(child, indent + 2, style)]
    return lines


def render(root: Node, style: int) -> str:
    """The document, the root in flow or block style."""
    return inline(root, style) + "\n" if root.flow else "\n".join(block(root, 0, style)) + "\n"


def line_column(text: str, at: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


@FUZZ
@given(root=ROOTS, data=st.data(), style=st.integers(0, 2))
def test_a_key_written_twice_is_refused_in_one_line_at_its_line_and_column(
    root: Node, data: st.DataObject, style: int
) -> None:
    root = copy.deepcopy(root)  # the key is added in place: never into a generated example
    target = data.draw(st.sampled_from(mappings(root)), label="mapping")
    assert target.pairs is not None
    first = data.draw(st.integers(0, len(target.pairs) - 1), label="key")
    at = data.draw(st.integers(first + 1, len(target.pairs)), label="position")
    value = Node(text=SECRET + data.draw(st.text(max_size=6), label="value"))
    target.pairs.insert(at, (target.pairs[first][0], value, True))
    marked = render(root, style)
    text = marked.replace(MARK, "")
    line, column = line_column(text, marked.index(MARK))
    with pytest.raises(YamlRefusal) as err:
        loads_yaml(text, "fuzz.yaml")
    msg = str(err.value)
    assert msg == f"fuzz.yaml: line {line}, column {column}: {TWICE} (the last would win)", text
    assert (err.value.line, err.value.column) == (line, column)
    assert "\n" not in msg and SECRET not in msg


# ---------------------------------------------------------------- every file kind


def with_key_twice(text: str) -> tuple[str, int, int]:
    """`text` with the first key of its deepest block mapping of two keys or more written again
    (under a secret value) just before the mapping's second key; the line and column of that
    second writing."""
    best: tuple[int, Any] | None = None
    stack = [(yaml.compose(text), 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, yaml.MappingNode):
            if (
                len(node.value) >= 2
                and node.flow_style is False
                and (best is None or depth > best[0])
            ):
                best = (depth, node)
            stack += [(v, depth + 1) for _, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(v, depth + 1) for v in node.value]
    assert best is not None
    (k1, _), (k2, _) = best[1].value[:2]
    lines = text.splitlines(keepends=True)
    row, column = k2.start_mark.line, k2.start_mark.column
    lines.insert(row, " " * column + f"{k1.value}: {SECRET}\n")
    return "".join(lines), row + 1, column + 1


def _design_config() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        save_config(DESIGN, Path(tmp) / "c.yaml")
        return (Path(tmp) / "c.yaml").read_text(encoding="utf-8")


def _spec() -> Path:
    return sorted(paths.EXPERIMENTS.glob("0*.yaml"))[0]


READERS: dict[str, tuple[Callable[[], str], Callable[[Path], object]]] = {
    "production": (lambda: paths.EXPERIMENTS.joinpath("production.yaml").read_text("utf-8"),
                   read_production),
    "--config file": (_design_config, named),
    "config file": (_design_config, load_config),
    "experiment spec": (lambda: _spec().read_text("utf-8"), load_spec),
    "guards": (lambda: paths.EXPERIMENTS.joinpath("guards.yaml").read_text("utf-8"), load_guards),
    "bench goals": (lambda: paths.BENCH_GOALS.read_text("utf-8"), load_goals),
    "notes file": (lambda: DEMO_NOTES.read_text("utf-8"), read_notes),
}  # fmt: skip


@pytest.mark.parametrize("kind", READERS)
def test_every_file_kind_refuses_a_key_written_twice(kind: str, tmp_path: Path) -> None:
    shipped, reader = READERS[kind]
    text, line, column = with_key_twice(shipped())
    path = tmp_path / "twice.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CitegateError) as err:
        reader(path)
    msg = str(err.value)
    assert msg.startswith(str(path)) and f"line {line}, column {column}: " in msg, msg
    assert TWICE in msg and "\n" not in msg and SECRET not in msg


def test_a_set_value_refuses_a_key_written_twice() -> None:
    with pytest.raises(YamlRefusal) as err:
        loads_yaml(f"{{lane_k: 3, rounds: 2, lane_k: {SECRET}}}", "--set pipeline")
    assert str(err.value) == f"--set pipeline: line 1, column 24: {TWICE} (the last would win)"
