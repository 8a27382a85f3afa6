"""The one reader of every YAML file a user hands us: the production file, a `--config` file,
an experiment spec, the guards and bench goals, a `--set` value.

YAML can make a small file expand without bound: an anchor (`&a`) aliased (`*a`) eight levels
deep is a few hundred bytes that expand to millions of nodes, and validation that formats or
walks the expanded structure then runs for minutes. No file we ship uses anchors, aliases or
explicit tags, so they are refused while the file is parsed, before anything is built or
expanded; so is nesting deeper than `MAX_YAML_DEPTH` (the shipped files nest at most 4 deep)
and a file over `MAX_YAML_BYTES` (the largest shipped file has 7.7 KB). A key written twice in
one mapping is refused too: YAML keeps the last value, so a notes file with `body:` twice would
lose its first body without a word. A value the YAML rules read but Python cannot hold (the date
2026-02-30, an integer of over 4,300 digits) is refused at its line and column too.

Every refusal is a `ConfigError` of one line naming the file, the line and column and the rule,
never the input. A refusal at a place in the file is a `YamlRefusal`, which also carries the
line, column and the keys and list indices leading to the refused node (`path`), so that a
reader of one file kind can name the record and field it falls in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from citegate.core.errors import ConfigError
from citegate.core.inputs import megabytes, read_file_bytes

MAX_YAML_BYTES = 1024 * 1024
MAX_YAML_DEPTH = 32
_QUOTED = re.compile(r"'[^'\n]*'")
_MERGE = "tag:yaml.org,2002:merge"  # `<<:` merges a mapping in: its keys may be overridden
YamlPath = tuple[str | int, ...]  # mapping keys as written, list indices


class YamlRefusal(ConfigError):
    """A refusal at a place in a YAML file: `line` and `column` (1-based; 0 when the parser
    gives none), `path` (the mapping keys, as written, and list indices from the top of the
    document to the refused node; empty when unknown) and `reason` (the rule, one line)."""

    def __init__(
        self, where: object, reason: str, line: int = 0, column: int = 0, path: YamlPath = ()
    ) -> None:
        at = f"line {line}, column {column}: " if line else ""
        super().__init__(f"{where}: {at}{reason}")
        self.line, self.column, self.path, self.reason = line, column, path, reason


class _Refused(yaml.MarkedYAMLError):
    """A rule of this reader broken at a mark of the file (an alias, an anchor, a tag, depth, a
    key written twice, a value Python cannot hold), with the node it was found at, if built."""

    def __init__(self, problem: str, mark: Any, node: yaml.Node | None = None) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.node = node


class _StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` refusing aliases, anchors, explicit tags and deep nesting as each node
    is composed: nothing is built before the rule is checked, so no alias is ever expanded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused("an alias (*name) is not accepted", event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise _Refused("an anchor (&name) is not accepted", event.start_mark)
        if getattr(event, "tag", None) is not None:
            raise _Refused("an explicit tag (!...) is not accepted", event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _Refused(f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """The node's value; one Python cannot hold (a ValueError of the date 2026-02-30, of an
        integer over Python's 4,300 digits) is refused at the node, not lost in a bare error."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise _Refused(_unreadable(node, exc), node.start_mark, node) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping, refusing a key that appears twice in it (marked at the second one)."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _Refused(
                    "a key appears twice in one mapping (the last would win)",
                    key_node.start_mark,
                    key_node,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def loads_yaml(text: str, where: object) -> Any:
    """The plain data of one YAML document (mappings, lists, strings, numbers, booleans, dates,
    null), or a one-line `ConfigError` naming `where`, the line and column and the rule broken
    (bad syntax, an alias, an anchor, a tag, nesting deeper than `MAX_YAML_DEPTH`, a key written
    twice, a value Python cannot hold): a `YamlRefusal` wherever the parser gives a place."""
    if len(text) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{where}: {megabytes(len(text.encode('utf-8', 'surrogatepass')))} of YAML, over the "
            f"limit of {megabytes(MAX_YAML_BYTES)}"
        )
    loader, root = None, None
    try:
        loader = _StrictLoader(text)  # checks every character: a ReaderError here
        root = loader.get_single_node()
        return None if root is None else loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        line, column = _line_column_of(exc.problem_mark)
        path = _path_to(root, getattr(exc, "node", None))
        raise YamlRefusal(where, _reason(exc), line, column, path) from None
    except yaml.reader.ReaderError as exc:
        line, column = _line_column(text, exc.position)
        char = exc.character  # PyYAML gives the code point (an int); a str is taken too
        code = ord(char) if isinstance(char, str) else char if isinstance(char, int) else 0
        raise YamlRefusal(where, f"not YAML text (character U+{code:04X})", line, column) from None
    except yaml.YAMLError:
        raise ConfigError(f"{where}: not valid YAML") from None
    except (RecursionError, ValueError, OverflowError, TypeError) as exc:
        raise ConfigError(f"{where}: not valid YAML ({type(exc).__name__})") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml(path: Path | str, what: str = "YAML file") -> Any:
    """The data of the YAML file at `path` (`loads_yaml`'s rules), read as `read_file_bytes`
    reads (a regular file, at most `MAX_YAML_BYTES`; a FIFO or device is refused, never read).
    A file that is missing or unreadable, not UTF-8 or breaks a rule is a one-line
    `ConfigError` naming it and `what` it is."""
    try:
        data = read_file_bytes(path, what, MAX_YAML_BYTES)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the {what} is not UTF-8 text (byte {exc.start + 1})") from None
    return loads_yaml(text, path)


def _line_column_of(mark: Any) -> tuple[int, int]:
    """1-based line and column of a YAML mark, (0, 0) without one."""
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def _unreadable(node: yaml.Node, exc: Exception) -> str:
    """Why a node's value cannot be held: a date's own reason ('day is out of range for
    month', never the value), else the error's kind."""
    if node.tag == "tag:yaml.org,2002:timestamp":
        return f"not a valid date or time ({' '.join(str(exc).split())[:60]})"
    return f"a value that cannot be read ({type(exc).__name__})"


def _path_to(root: yaml.Node | None, target: yaml.Node | None) -> YamlPath:
    """The mapping keys (as written) and list indices from `root` to `target` (a value or a
    key node), () when either is unknown or `target` is not under `root`."""
    if root is None or target is None:
        return ()
    stack: list[tuple[yaml.Node, YamlPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                if key_node is target:
                    return (*path, key)
                stack.append((value_node, (*path, key)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, (*path, i)) for i, v in enumerate(node.value))
    return ()


def _reason(exc: yaml.MarkedYAMLError) -> str:
    """The parser's problem in one short line, quoted input cut out (only a quoted character
    or token of up to 4 characters stays: "found character '\\t' that cannot start any token")."""
    problem = " ".join(str(exc.problem or "not valid YAML").split())
    problem = _QUOTED.sub(
        lambda m: m[0] if len(m[0]) <= 6 or m[0].startswith("'<") else "'…'", problem
    )
    return problem if len(problem) <= 120 else problem[:119] + "…"


def _line_column(text: str, position: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    before = text[:position]
    return before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1


__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "YamlRefusal", "loads_yaml", "read_yaml"]
