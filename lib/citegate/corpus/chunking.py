"""Read timed transcripts and cut transcripts and prose into bounded fragments.

Subtitles (SRT, WebVTT) and openai-whisper JSON become a list of `Segment`s; every
bad record raises `InputError` naming the file and the 1-based cue/segment number,
so a user can fix the file instead of getting a silently wrong index.
`window_transcript` groups segments into overlapping time windows and `pack_text`
groups paragraphs into chunks; both guarantee a hard upper bound on fragment length.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from citegate.core.errors import InputError

__all__ = [
    "Segment",
    "Window",
    "pack_text",
    "read_segments",
    "read_srt",
    "read_vtt",
    "read_whisper_json",
    "split_sentences",
    "window_transcript",
]


@dataclass(frozen=True)
class Segment:
    """One timed utterance: [start_ms, end_ms) and its whitespace-normalised text."""

    start_ms: int
    end_ms: int
    text: str


@dataclass(frozen=True)
class Window:
    """One transcript fragment covering segments first_segment..last_segment (inclusive)."""

    start_ms: int
    end_ms: int
    text: str
    first_segment: int
    last_segment: int


# --------------------------------------------------------------------------- reading

_TS_SRT = r"(-?)(\d+):(\d{2}):(\d{2})[,.](\d{3})"
_TS_VTT = r"(-?)(?:(\d+):)?(\d{2}):(\d{2})\.(\d{3})"
_SRT_TIMING = re.compile(rf"{_TS_SRT}[ \t]*-->[ \t]*{_TS_SRT}(?:[ \t].*)?", re.ASCII)
_VTT_TIMING = re.compile(rf"{_TS_VTT}[ \t]*-->[ \t]*{_TS_VTT}(?:[ \t].*)?", re.ASCII)
_SRT_INDEX = re.compile(r"\d+", re.ASCII)
_SRT_TAGS = re.compile(r"</?(?:b|i|u|font)(?:\s[^>]*)?>|\{\\[^}]*\}", re.IGNORECASE)
_VTT_TAGS = re.compile(r"<[^>]*>")
_VTT_HEADER = re.compile(r"WEBVTT(?:[ \t].*)?")
_VTT_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def read_srt(path: Path) -> list[Segment]:
    """Parse a SubRip file; tolerates a BOM, CRLF, missing cue numbers and multi-line cues.

    Cue text lines are joined by single spaces and <i>/<b>/<u>/<font> and {\\an8} tags
    are dropped, so the text can be embedded and cited as spoken.
    """
    path = Path(path)
    segments = []
    for record, (lineno, lines) in enumerate(_blocks(_read_text(path)), start=1):
        first = 1 if _SRT_INDEX.fullmatch(lines[0].strip()) and len(lines) > 1 else 0
        start, end = _parse_timing(path, record, lineno + first, lines[first], _SRT_TIMING)
        text = _clean_text(path, record, "\n".join(lines[first + 1 :]), _strip_srt_tags)
        segments.append(Segment(start, end, text))
    _check_order(path, segments)
    return segments


def read_vtt(path: Path) -> list[Segment]:
    """Parse a WebVTT file: header, NOTE/STYLE/REGION blocks, cue ids and cue settings.

    Voice (<v Speaker>), class, timestamp and style tags are removed and HTML entities
    decoded, so only the spoken words remain; hours may be omitted (mm:ss.ttt).
    """
    path = Path(path)
    text = _read_text(path)
    header = text.split("\n", 1)[0]
    if not _VTT_HEADER.fullmatch(header):
        raise InputError(path, "-", f"line 1: expected a 'WEBVTT' header, got {_show(header)}")
    blocks = _blocks(text)
    _check_vtt_header(path, blocks[0])
    segments: list[Segment] = []
    for lineno, lines in blocks[1:]:
        if lines[0].split(maxsplit=1)[0] in _VTT_SKIPPED_BLOCKS and "-->" not in lines[0]:
            continue
        segments.append(_vtt_cue(path, len(segments) + 1, lineno, lines))
    _check_order(path, segments)
    return segments


def read_whisper_json(path: Path) -> list[Segment]:
    """Parse openai-whisper JSON output: {"segments": [{"start", "end", "text"}, ...]}.

    Times are seconds (int or float) and become integer milliseconds; keys other than
    start/end/text (tokens, avg_logprob, words, ...) are ignored.
    """
    path = Path(path)
    raw_segments = _load_whisper_segments(path)
    segments = [_whisper_segment(path, i, raw) for i, raw in enumerate(raw_segments, start=1)]
    _check_order(path, segments)
    return segments


_READERS: dict[str, Callable[[Path], list[Segment]]] = {
    ".srt": read_srt,
    ".vtt": read_vtt,
    ".json": read_whisper_json,
}


def read_segments(path: Path) -> list[Segment]:
    """Read any supported transcript, choosing the parser by file suffix (.srt/.vtt/.json)."""
    path = Path(path)
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        expected = ", ".join(sorted(_READERS))
        raise InputError(path, "-", f"unsupported suffix {path.suffix!r}; expected {expected}")
    return reader(path)


def _read_text(path: Path) -> str:
    """File contents minus a BOM, with LF line ends; bad UTF-8 survives as lone surrogates.

    Keeping undecodable bytes as surrogates (instead of failing here) lets the caller
    report the cue that holds them.
    """
    text = path.read_bytes().decode("utf-8-sig", errors="surrogateescape")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """Blocks of non-blank lines as (1-based line number of the first line, lines)."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            if not current:
                blocks.append((lineno, current))
            current.append(line)
        else:
            current = []
    return blocks


def _check_vtt_header(path: Path, header: tuple[int, list[str]]) -> None:
    """Reject a cue glued to the header: it would otherwise vanish silently."""
    lineno, lines = header
    for offset, line in enumerate(lines):
        if "-->" in line:
            raise InputError(
                path,
                1,
                f"line {lineno + offset}: cue timing inside the header block; "
                "add a blank line after the header",
            )


def _vtt_cue(path: Path, record: int, lineno: int, lines: list[str]) -> Segment:
    """One WebVTT cue block: optional identifier line, timing line, payload lines."""
    first = 0 if "-->" in lines[0] else 1
    if first >= len(lines):
        raise InputError(path, record, f"line {lineno}: cue without a timing line")
    start, end = _parse_timing(path, record, lineno + first, lines[first], _VTT_TIMING)
    text = _clean_text(path, record, "\n".join(lines[first + 1 :]), _strip_vtt_markup)
    return Segment(start, end, text)


def _parse_timing(
    path: Path, record: int, lineno: int, line: str, pattern: re.Pattern[str]
) -> tuple[int, int]:
    """(start_ms, end_ms) of a 'start --> end [settings]' line, validated."""
    match = pattern.fullmatch(line.strip())
    if match is None:
        raise InputError(path, record, f"line {lineno}: malformed timing line {_show(line)}")
    groups = match.groups()
    start = _timestamp_ms(path, record, lineno, groups[:5])
    end = _timestamp_ms(path, record, lineno, groups[5:])
    _check_times(path, record, start, end)
    return start, end


def _timestamp_ms(path: Path, record: int, lineno: int, parts: tuple[str | None, ...]) -> int:
    """Milliseconds of one (sign, hours, minutes, seconds, millis) timestamp match."""
    sign, hours, minutes, seconds, millis = parts
    if sign:
        raise InputError(path, record, f"line {lineno}: negative timestamp")
    if int(minutes or 0) > 59 or int(seconds or 0) > 59:
        raise InputError(path, record, f"line {lineno}: minutes or seconds above 59")
    total_s = int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    return total_s * 1000 + int(millis or 0)


def _check_times(path: Path, record: object, start_ms: int, end_ms: int) -> None:
    """Times must be non-negative and the segment must have positive duration."""
    if start_ms < 0 or end_ms < 0:
        raise InputError(path, record, "negative time")
    if end_ms <= start_ms:
        raise InputError(
            path, record, f"end {_fmt_ms(end_ms)} is not after start {_fmt_ms(start_ms)}"
        )


def _check_order(path: Path, segments: Sequence[Segment]) -> None:
    """Segments must not start before their predecessor (overlaps are allowed)."""
    for i in range(1, len(segments)):
        prev, seg = segments[i - 1], segments[i]
        if seg.start_ms < prev.start_ms:
            raise InputError(
                path,
                i + 1,
                f"starts at {_fmt_ms(seg.start_ms)}, before the previous "
                f"segment's start {_fmt_ms(prev.start_ms)}",
            )


def _clean_text(path: Path, record: object, raw: str, strip: Callable[[str], str]) -> str:
    """Validate raw cue text, remove markup with `strip`, and collapse whitespace."""
    if "\x00" in raw:
        raise InputError(path, record, "NUL byte in text")
    if _SURROGATE.search(raw):
        raise InputError(path, record, "invalid UTF-8 (or lone surrogate) in text")
    text = " ".join(strip(raw).split())
    if not text:
        raise InputError(path, record, "empty text")
    return text


def _strip_srt_tags(text: str) -> str:
    """SubRip text without <i>/<b>/<u>/<font> and {\\...} override tags."""
    return _SRT_TAGS.sub("", text)


def _strip_vtt_markup(text: str) -> str:
    """WebVTT payload without tags, with entities such as &amp; decoded."""
    return html.unescape(_VTT_TAGS.sub("", text))


def _load_whisper_segments(path: Path) -> list[object]:
    """The raw 'segments' list of a whisper JSON file, type-checked at the top level."""
    try:
        doc = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(
            path, "-", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise InputError(path, "-", "invalid JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise InputError(path, "-", f"expected a JSON object, got {_json_type(doc)}")
    segments = doc.get("segments")
    if not isinstance(segments, list):
        raise InputError(path, "-", f"'segments' must be an array, got {_json_type(segments)}")
    return segments


def _whisper_segment(path: Path, record: int, raw: object) -> Segment:
    """One validated whisper segment."""
    if not isinstance(raw, dict):
        raise InputError(path, record, f"segment must be an object, got {_json_type(raw)}")
    start = _seconds_to_ms(path, record, raw, "start")
    end = _seconds_to_ms(path, record, raw, "end")
    _check_times(path, record, start, end)
    text = raw.get("text")
    if not isinstance(text, str):
        raise InputError(path, record, f"'text' must be a string, got {_json_type(text)}")
    return Segment(start, end, _clean_text(path, record, text, lambda s: s))


def _seconds_to_ms(path: Path, record: int, raw: dict[str, object], key: str) -> int:
    """Integer milliseconds of the number of seconds under `key`."""
    if key not in raw:
        raise InputError(path, record, f"missing {key!r}")
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(
            path,
            record,
            f"{key!r} must be a number of seconds, got {_json_type(value)} {_show(value)}",
        )
    if value < 0:
        raise InputError(path, record, f"negative time {key!r}: {value}")
    millis = value * 1000
    if not math.isfinite(millis):
        raise InputError(path, record, f"{key!r} is not a finite number: {value}")
    return round(millis)


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, int | float) else "?")


def _show(value: object, limit: int = 60) -> str:
    """Short repr of an offending value for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fmt_ms(ms: int) -> str:
    """HH:MM:SS.mmm rendering of milliseconds."""
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


# --------------------------------------------------------------------------- windows


def window_transcript(
    segments: Sequence[Segment],
    window_ms: int = 45_000,
    overlap_ms: int = 5_000,
    max_chars: int = 8_000,
) -> list[Window]:
    """Group consecutive whole segments into overlapping windows of at most `max_chars`.

    A window grows from its first segment while its time span stays within `window_ms`
    and its text (segment texts joined by single spaces) within `max_chars`. The next
    window starts at the earliest segment of the previous one that begins no earlier
    than `overlap_ms` before the previous window's end, but always adds at least one
    new segment, so every segment is covered and the loop terminates; the carried-over
    text is capped at max_chars // 2 so the number of windows stays linear. A lone segment
    longer than `max_chars` is split on sentence/word boundaries into several windows
    with that segment's times. Window end_ms is the latest end of its segments, which
    is the last segment's end whenever ends do not go backwards.
    """
    _check_window_args(segments, window_ms, overlap_ms, max_chars)
    lengths = [len(seg.text) for seg in segments]
    windows: list[Window] = []
    first = 0
    while first < len(segments):
        last, end = _grow_window(segments, lengths, first, window_ms, max_chars)
        windows.extend(_make_windows(segments, first, last, end, max_chars))
        if last == len(segments) - 1:
            break
        first = _next_first(segments, lengths, (first, last, end), window_ms, overlap_ms, max_chars)
    return windows


def _check_window_args(
    segments: Sequence[Segment], window_ms: int, overlap_ms: int, max_chars: int
) -> None:
    """Reject parameter values and segment orders the windowing cannot honour."""
    if window_ms <= 0 or max_chars <= 0:
        raise ValueError("window_ms and max_chars must be positive")
    if not 0 <= overlap_ms < window_ms:
        raise ValueError("overlap_ms must be >= 0 and < window_ms")
    for i in range(1, len(segments)):
        if segments[i].start_ms < segments[i - 1].start_ms:
            raise ValueError(f"segment {i} starts before segment {i - 1}")


def _grow_window(
    segments: Sequence[Segment], lengths: list[int], first: int, window_ms: int, max_chars: int
) -> tuple[int, int]:
    """(last index, end_ms) of the greedy window that starts at segment `first`."""
    start = segments[first].start_ms
    last, end, chars = first, segments[first].end_ms, lengths[first]
    while last + 1 < len(segments):
        nxt = segments[last + 1]
        new_end, new_chars = max(end, nxt.end_ms), chars + 1 + lengths[last + 1]
        if new_end - start > window_ms or new_chars > max_chars:
            break
        last, end, chars = last + 1, new_end, new_chars
    return last, end


def _make_windows(
    segments: Sequence[Segment], first: int, last: int, end: int, max_chars: int
) -> list[Window]:
    """The window for segments first..last, or the pieces of one oversized segment."""
    seg = segments[first]
    if first == last and len(seg.text) > max_chars:
        pieces = _pack_long(seg.text, max_chars, max_chars) or [""]
        return [Window(seg.start_ms, seg.end_ms, piece, first, first) for piece in pieces]
    text = " ".join(s.text for s in segments[first : last + 1])
    return [Window(seg.start_ms, end, text, first, last)]


def _next_first(
    segments: Sequence[Segment],
    lengths: list[int],
    previous: tuple[int, int, int],
    window_ms: int,
    overlap_ms: int,
    max_chars: int,
) -> int:
    """First segment of the window after `previous` = (first, last, end_ms).

    The overlap rule picks the earliest segment of the previous window, other than its
    first, that starts at or after end - overlap_ms. Two guards keep the output linear:
    the carried-over segments hold at most max_chars // 2 characters (otherwise dense,
    character-limited windows would advance one segment at a time), and the start moves
    later until a window from it reaches the segment after `last`, so no window merely
    repeats a subset of the previous one. Scanning backwards works because every
    condition only gets harder to meet as the start moves earlier.
    """
    first, last, end = previous
    best = last + 1
    chars, max_end, carried = lengths[best], segments[best].end_ms, -1
    for k in range(last, first, -1):
        seg = segments[k]
        chars += 1 + lengths[k]
        carried += 1 + lengths[k]
        max_end = max(max_end, seg.end_ms)
        if seg.start_ms < end - overlap_ms or carried > max_chars // 2:
            break
        if chars > max_chars or max_end - seg.start_ms > window_ms:
            break
        best = k
    return best


# --------------------------------------------------------------------------- prose

_SENTENCE_END = re.compile(r"[.!?…।॥]+[\"'”’»)\]]*\s+")
# Lower-cased, without the final period. Words that often end a sentence ("no", "etc",
# month names) are left out on purpose: after them a break is the likelier reading.
_ABBREVIATIONS = frozenset(
    (
        *("mr", "mrs", "ms", "dr", "st", "prof", "sr", "jr", "vs", "e.g", "i.e", "cf"),
        *("fig", "approx", "al", "vol", "pp"),
        *("т.е", "т.к", "т.н", "см", "напр", "ул", "проф", "рис", "стр"),
    )
)
_TOKEN_OPENERS = "([{\"'«“‘"


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, keeping final punctuation (and closing quotes) attached.

    Breaks after . ! ? … । ॥ (or runs of them) followed by whitespace, except after
    common abbreviations (Mr., Dr., e.g., т.е., ...) and initials (J., А. С.), and except
    where a single '.' is followed by a lowercase word ("3 p.m. on Monday", "etc. and so on",
    "1799 г. в Москве") or an abbreviation-like token by a digit ("p. 5", "с. 12"): those
    continue the sentence. The one splitter of the package (text packing, citation claims),
    so citations quote whole sentences in Latin, Cyrillic and Devanagari text alike.
    """
    sentences = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if _is_abbreviation(text, match.start(), match.group()):
            continue
        if _continues(text, match.start(), match.group(), match.end()):
            continue
        sentence = text[start : match.end()].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _token_before(text: str, punct_at: int) -> str:
    """The word that ends at `punct_at` (opening quotes/brackets removed), '' after a space."""
    before = text[max(0, punct_at - 32) : punct_at]
    if not before or before[-1].isspace():
        return ""
    return before.split()[-1].lstrip(_TOKEN_OPENERS)


def _is_abbreviation(text: str, punct_at: int, boundary: str) -> bool:
    """Whether a single '.' at `punct_at` ends an abbreviation or initial, not a sentence.

    Initials are single capital letters, possibly chained ("J.R.R."); the pronoun "I"
    is not treated as one.
    """
    if not boundary.startswith(".") or boundary[1:2] == ".":
        return False
    token = _token_before(text, punct_at)
    if not token:
        return False
    if token.lower() in _ABBREVIATIONS:
        return True
    if token == "I":
        return False
    parts = token.split(".")
    return all(len(part) == 1 and part.isalpha() and part.isupper() for part in parts)


def _continues(text: str, punct_at: int, boundary: str, next_at: int) -> bool:
    """Whether the text after a single '.' continues its sentence: the next word starts
    lowercase, or a digit follows an abbreviation-like token (dotted like "p.m", or one or
    two lowercase letters like "p", "г", "гг"). Scripts without case never continue here, nor
    does a period right after a citation marker ("... [1]. the next claim")."""
    if not boundary.startswith(".") or boundary[1:2] == "." or text[punct_at - 1 : punct_at] == "]":
        return False
    nxt = text[next_at : next_at + 1]
    if nxt.islower():
        return True
    if not nxt.isdigit():
        return False
    token = _token_before(text, punct_at)
    return "." in token or (len(token) <= 2 and token.isalpha() and token.islower())


def pack_text(text: str, target_chars: int = 900, max_chars: int = 1_400) -> list[str]:
    """Pack paragraphs (blank-line separated) into chunks of about `target_chars`.

    Consecutive paragraphs are joined with a blank line while the chunk stays within
    `target_chars`; a paragraph longer than `max_chars` is packed sentence by sentence
    (joined by spaces), and a sentence longer than `max_chars` is cut at word
    boundaries (a single word longer than that is cut hard). No chunk exceeds
    `max_chars` and every word of the input appears, in order, in the output.
    """
    if not 0 < target_chars <= max_chars:
        raise ValueError("need 0 < target_chars <= max_chars")
    chunks: list[str] = []
    pending: list[str] = []
    for paragraph in _paragraphs(text):
        if len(paragraph) <= max_chars:
            pending.append(paragraph)
            continue
        chunks.extend(_greedy(pending, "\n\n", target_chars))
        pending = []
        chunks.extend(_pack_long(paragraph, target_chars, max_chars))
    chunks.extend(_greedy(pending, "\n\n", target_chars))
    return chunks


def _paragraphs(text: str) -> list[str]:
    """Non-empty, stripped paragraphs separated by blank (or whitespace-only) lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [p.strip() for p in _BLANK_LINES.split(text) if p.strip()]


def _pack_long(text: str, target_chars: int, max_chars: int) -> list[str]:
    """Sentence-level packing of an over-long text; every piece is <= max_chars."""
    units: list[str] = []
    for sentence in split_sentences(text):
        if len(sentence) <= max_chars:
            units.append(sentence)
        else:
            units.extend(_split_words(sentence, target_chars, max_chars))
    return _greedy(units, " ", target_chars)


def _split_words(text: str, target_chars: int, max_chars: int) -> list[str]:
    """Word-level packing of one over-long sentence; over-long words are cut hard."""
    words: list[str] = []
    for word in text.split():
        words.extend(word[i : i + max_chars] for i in range(0, len(word), max_chars))
    return _greedy(words, " ", target_chars)


def _greedy(units: Iterable[str], sep: str, limit: int) -> list[str]:
    """Join consecutive units with `sep` while the result stays <= limit.

    A unit longer than `limit` becomes a chunk of its own (callers bound unit length).
    """
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    for unit in units:
        grown = length + len(sep) + len(unit) if current else len(unit)
        if current and grown > limit:
            chunks.append(sep.join(current))
            current, grown = [], len(unit)
        current.append(unit)
        length = grown
    if current:
        chunks.append(sep.join(current))
    return chunks
