"""The one reader of every YAML file a user hands us: the production file, a `--config` file,
an experiment spec, the guards and bench goals, a `--set` value.

YAML can make a small file expand without bound: an anchor (`&a`) aliased (`*a`) eight levels
deep is a few hundred bytes that expand to millions of nodes, and validation that formats or
walks the expanded structure then runs for minutes. No file we ship uses anchors, aliases or
explicit tags, so they are refused while the file is parsed, before anything is built or
expanded; so is nesting deeper than `MAX_YAML_DEPTH` (the shipped files nest at most 4 deep)
and a file over `MAX_YAML_BYTES` (the largest shipped file has 7.7 KB). A key written twice in
one mapping is refused too: YAML keeps the last value, so a notes file with `body:` twice would
lose its first body without a word. Every refusal is a `ConfigError` of one line naming the file,
the line and column and the rule, never the input.
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


class _Refused(yaml.MarkedYAMLError):
    """A rule of this reader broken at a mark of the file (an alias, an anchor, a tag, depth)."""


class _StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` refusing aliases, anchors, explicit tags and deep nesting as each node
    is composed: nothing is built before the rule is checked, so no alias is ever expanded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(
                problem="an alias (*name) is not accepted", problem_mark=event.start_mark
            )
        if getattr(event, "anchor", None) is not None:
            raise _Refused(
                problem="an anchor (&name) is not accepted", problem_mark=event.start_mark
            )
        if getattr(event, "tag", None) is not None:
            raise _Refused(
                problem="an explicit tag (!...) is not accepted", problem_mark=event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _Refused(
                    problem=f"nested deeper than {MAX_YAML_DEPTH} levels",
                    problem_mark=event.start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping, refusing a key that appears twice in it (marked at the second one)."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _Refused(
                    problem="a key appears twice in one mapping (the last would win)",
                    problem_mark=key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def loads_yaml(text: str, where: object) -> Any:
    """The plain data of one YAML document (mappings, lists, strings, numbers, booleans, dates,
    null), or a one-line `ConfigError` naming `where`, the line and column and the rule broken
    (bad syntax, an alias, an anchor, a tag, nesting deeper than `MAX_YAML_DEPTH`)."""
    if len(text) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{where}: {megabytes(len(text.encode('utf-8', 'surrogatepass')))} of YAML, over the "
            f"limit of {megabytes(MAX_YAML_BYTES)}"
        )
    loader = None
    try:
        loader = _StrictLoader(text)  # checks every character: a ReaderError here
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(f"{where}: {_at(exc.problem_mark)}{_reason(exc)}") from None
    except yaml.reader.ReaderError as exc:
        line, column = _line_column(text, exc.position)
        raise ConfigError(
            f"{where}: line {line}, column {column}: not YAML text "
            f"(character U+{ord(exc.character) if isinstance(exc.character, str) else 0:04X})"
        ) from None
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


def _at(mark: Any) -> str:
    """'line L, column C: ' of a YAML mark (1-based), or '' without one."""
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


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


__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "loads_yaml", "read_yaml"]
