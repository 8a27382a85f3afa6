"""Text from users' files and the corpus made safe to show on a terminal.

A note's body, a passage, a file name or a model's reply may hold characters a terminal obeys
instead of showing: ESC starts a control sequence (colours, cursor moves, a window title, a
cleared screen), BEL rings, a carriage return overwrites the line, a bidi control (U+202E
RIGHT-TO-LEFT OVERRIDE, the isolates U+2066-U+2069) makes text read other than it is stored, a
zero-width character (U+200B-U+200D, U+FEFF) hides a difference between two texts. `visible`
writes each such character as its escape (`\\x1b`, `\\u202e`) so that it is seen, not obeyed.
Only what is shown changes: stored text keeps every character as written.
"""

from __future__ import annotations

import unicodedata

# Control (C0, DEL, C1), format (bidi controls, zero-width, tags), lone surrogates (an
# undecodable byte, which no terminal encoding can write) and the line and paragraph separators.
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def visible(text: str, keep: str = "\n\t", *, as_json: bool = False) -> str:
    """`text` with every control, format, surrogate and line-separator character but those in
    `keep` written as its escape: `\\x1b`, `\\u202e`, `\\U000e0001` (Python's notation), or with
    `as_json` the JSON escape `\\u001b` (`\\udb40\\udc01` for a character beyond U+FFFF), so
    that JSON text stays valid and parses to the same data. Printable text comes back
    unchanged (a backslash included). `keep` holds the characters the output's layout needs:
    newline and tab for a block of text, none for one field of a one-line record."""
    if text.isprintable():  # none of the escaped characters: the common case, at C speed
        return text
    escape = _json_escape if as_json else _python_escape
    return "".join(
        escape(ch) if ch not in keep and unicodedata.category(ch) in ESCAPED_CATEGORIES else ch
        for ch in text
    )


def _python_escape(ch: str) -> str:
    """`\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`: the escape Python's own string notation uses."""
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _json_escape(ch: str) -> str:
    """`\\uNNNN`, a surrogate pair of them beyond U+FFFF: JSON's only escape for any character."""
    n = ord(ch)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


__all__ = ["ESCAPED_CATEGORIES", "visible"]
