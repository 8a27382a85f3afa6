"""The folders say what runs where, checked on the source with `ast` (no import runs).

- `citegate.pipeline` holds one question's production path only: every module in it is reached
  by imports from the service facade (`citegate.pipeline.service`) or from the commands that ask
  a question (`citegate ask`, `citegate chat`), walking the core layers alone. A module that only
  studies, research or tests import belongs with them.
- pandas stays out of the core layers except two function-local uses: `RetrievalTrace.to_frame`
  (the candidate table of `citegate ask --trace`) and `core.redact` scrubbing a run folder's
  parquet tables.
- A notebook reads its own study package (named after it) through that package's facade, imports
  at most five citegate modules and defines no function or class.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from citegate.core import paths

PACKAGE = paths.ROOT / "lib" / "citegate"
NOTEBOOKS = sorted((paths.ROOT / "notebooks").glob("*.ipynb"))
CORE_LAYERS = ("core", "corpus", "store", "models", "evaluation", "pipeline")
ENTRY_POINTS = ("citegate.pipeline.service", "citegate.cli.ask", "citegate.cli.chat")
PANDAS_ALLOWED = {"citegate.core.types", "citegate.core.redact"}
MAX_NOTEBOOK_MODULES = 5


def module_name(source: Path) -> str:
    """`lib/citegate/core/paths.py` -> `citegate.core.paths`; a package's `__init__` -> the package."""
    parts = list(source.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """True when `name` is a citegate module or package on disk (not an attribute)."""
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def imported(tree: ast.AST, parents: bool = True) -> Iterator[str]:
    """Every citegate module a tree imports: `from a.b import c` names `a.b.c` when c is a
    module, else `a.b`; with `parents`, a module brings its parent packages (their `__init__`
    runs too)."""
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
            names = [n if is_module(n) else node.module for n in names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "citegate":
                first = 2 if parents else len(parts)
                yield from (".".join(parts[:i]) for i in range(first, len(parts) + 1))


def import_graph() -> dict[str, set[str]]:
    """Module -> the citegate modules it imports, over lib/citegate."""
    return {
        module_name(p): set(imported(ast.parse(p.read_text(encoding="utf-8"))))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def in_core_layers(module: str) -> bool:
    return module.split(".")[1] in CORE_LAYERS if module.count(".") else False


def production_reach(graph: dict[str, set[str]]) -> set[str]:
    """The modules reached from the entry points, following imports inside the core layers."""
    seen: set[str] = set()
    todo = [m for e in ENTRY_POINTS for m in graph[e] if in_core_layers(m)]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += [m for m in graph.get(module, ()) if in_core_layers(m)]
    return seen


def test_every_pipeline_module_is_on_a_questions_production_path() -> None:
    graph = import_graph()
    reached = production_reach(graph)
    pipeline = {m for m in graph if m.startswith("citegate.pipeline.")}
    stray = {
        m: sorted(src for src, targets in graph.items() if m in targets)
        for m in sorted(pipeline - reached - {"citegate.pipeline.service"})
    }
    assert not stray, f"pipeline modules no production path imports (imported by): {stray}"


def test_the_walk_does_not_count_what_only_a_study_imports() -> None:
    graph = import_graph()
    graph["citegate.pipeline.study_only"] = set()
    graph["citegate.studies.gate_roc.compute"].add("citegate.pipeline.study_only")
    graph["citegate.research.study"].add("citegate.pipeline.study_only")
    assert "citegate.pipeline.study_only" not in production_reach(graph)
    graph["citegate.pipeline.turn"].add("citegate.pipeline.study_only")
    assert "citegate.pipeline.study_only" in production_reach(graph)


def pandas_imports(source: Path) -> Iterator[tuple[int, bool]]:
    """(line, inside a function) of every pandas import of a file."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    local = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(n.split(".")[0] == "pandas" for n in names):
            yield node.lineno, id(node) in local


def test_pandas_stays_out_of_the_core_layers_but_for_two_local_uses() -> None:
    found = {
        module_name(p): list(pandas_imports(p))
        for layer in CORE_LAYERS
        for p in sorted((PACKAGE / layer).rglob("*.py"))
    }
    found = {m: lines for m, lines in found.items() if lines}
    assert set(found) <= PANDAS_ALLOWED, f"pandas imported in the core layers: {found}"
    assert all(local for lines in found.values() for _, local in lines), found


def notebook_code(path: Path) -> ast.Module:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return ast.parse("\n".join(s for s in sources if not s.lstrip().startswith(("%", "!"))))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebook_reads_its_own_study_through_its_facade(path: Path) -> None:
    tree = notebook_code(path)
    study = "citegate.studies." + path.stem.split("_", 1)[1]
    modules = set(imported(tree, parents=False))
    studies = {m for m in modules if m.startswith("citegate.studies.")}
    assert studies and all(m == study or m.startswith(study + ".") for m in studies), studies
    assert len(modules) <= MAX_NOTEBOOK_MODULES, sorted(modules)
    defined = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert not defined, f"{path.name} defines {defined}: they belong in {study}"
