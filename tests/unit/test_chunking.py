"""Tests for citegate.corpus.chunking: transcript readers, time windows and prose packing."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from citegate.core.errors import InputError
from citegate.corpus.chunking import (
    Segment,
    Window,
    pack_text,
    read_segments,
    read_srt,
    read_vtt,
    read_whisper_json,
    split_sentences,
    window_transcript,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "subtitles"

SAMPLE_SRT = [
    Segment(500, 2_000, "Hello, world."),
    Segment(2_000, 4_250, "This cue spans two lines."),
    Segment(4_250, 65_000, "नमस्ते दुनिया। Привет, мир!"),
]

WORDS = (
    "the",
    "a",
    "transcript",
    "citation",
    "Mr.",
    "Dr.",
    "e.g.",
    "J.",
    "word.",
    "end!",
    "why?",
    "wait...",
    "नमस्ते",
    "दुनिया।",
    "है॥",
    "Привет,",
    "мир.",
    "т.е.",
    "Москва",
    "(quoted)",
    "“done.”",
    "x" * 37,
)


# --------------------------------------------------------------------------- helpers


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    """A file under tmp_path holding `content` (str is written as UTF-8)."""
    path = tmp_path / name
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.write_bytes(data)
    return path


def random_text(rng: random.Random, n_words: int) -> str:
    """Random words from WORDS joined by single spaces."""
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def random_segments(rng: random.Random, max_chars: int, overlapping: bool = False) -> list[Segment]:
    """A random, start-sorted segment list; some texts exceed max_chars.

    Without `overlapping` every segment ends no later than the next one starts.
    """
    segments = []
    t = rng.randint(0, 5_000)
    for _ in range(rng.randint(0, 60)):
        duration = rng.choice(
            [rng.randint(1, 3_000), rng.randint(1, 20_000), rng.randint(20_000, 90_000)]
        )
        size = rng.choice([1, 2, 5, 10, 20, max_chars // 3 + 1, max_chars + 5])
        segments.append(Segment(t, t + duration, random_text(rng, rng.randint(1, size))))
        if overlapping:
            t += rng.choice([0, rng.randint(0, 2_000), rng.randint(0, duration)])
        else:
            t += duration + rng.choice([0, 0, rng.randint(0, 3_000), rng.randint(0, 60_000)])
    return segments


def is_split(window: Window, segments: Sequence[Segment], max_chars: int) -> bool:
    """Whether `window` is one piece of an oversized segment."""
    seg = segments[window.first_segment]
    return window.first_segment == window.last_segment and len(seg.text) > max_chars


def check_windows(
    segments: Sequence[Segment],
    windows: Sequence[Window],
    window_ms: int,
    overlap_ms: int,
    max_chars: int,
    ends_monotone: bool = True,
) -> None:
    """Assert every documented property of window_transcript's output."""
    covered = set()
    for w in windows:
        covered.update(range(w.first_segment, w.last_segment + 1))
        assert len(w.text) <= max_chars
        assert w.text
        part = segments[w.first_segment : w.last_segment + 1]
        assert w.start_ms == part[0].start_ms
        assert w.end_ms == max(s.end_ms for s in part)
        if ends_monotone:
            assert w.end_ms == part[-1].end_ms
        if not is_split(w, segments, max_chars):
            assert w.text == " ".join(s.text for s in part)
            if len(part) > 1:
                assert w.end_ms - w.start_ms <= window_ms
            _check_greedy(segments, w, window_ms, max_chars)
    assert covered == set(range(len(segments)))
    for prev, nxt in zip(windows, windows[1:], strict=False):
        assert nxt.start_ms >= prev.start_ms
        if ends_monotone:
            assert nxt.end_ms >= prev.end_ms
        assert nxt.first_segment >= prev.first_segment
        assert nxt.first_segment <= prev.last_segment + 1
        if nxt.first_segment == prev.first_segment:  # pieces of one split segment
            assert is_split(prev, segments, max_chars) and is_split(nxt, segments, max_chars)
            continue
        assert nxt.last_segment > prev.last_segment
        if nxt.first_segment <= prev.last_segment:  # overlap honours the rule and the cap
            assert segments[nxt.first_segment].start_ms >= prev.end_ms - overlap_ms
            assert len(joined(segments, nxt.first_segment, prev.last_segment)) <= max_chars // 2
        _check_overlap_maximal(segments, prev, nxt, window_ms, overlap_ms, max_chars)
    _check_split_pieces(segments, windows, max_chars)


def joined(segments: Sequence[Segment], first: int, last: int) -> str:
    """Texts of segments first..last joined by single spaces."""
    return " ".join(s.text for s in segments[first : last + 1])


def _check_overlap_maximal(
    segments: Sequence[Segment],
    prev: Window,
    nxt: Window,
    window_ms: int,
    overlap_ms: int,
    max_chars: int,
) -> None:
    """Starting one segment earlier would break the overlap rule, the cap or the reach."""
    k = nxt.first_segment - 1
    if not prev.first_segment < k <= prev.last_segment:
        return
    reach = segments[k : prev.last_segment + 2]
    assert (
        segments[k].start_ms < prev.end_ms - overlap_ms
        or len(joined(segments, k, prev.last_segment)) > max_chars // 2
        or len(joined(segments, k, prev.last_segment + 1)) > max_chars
        or max(s.end_ms for s in reach) - segments[k].start_ms > window_ms
    )


def _check_greedy(segments: Sequence[Segment], w: Window, window_ms: int, max_chars: int) -> None:
    """A window stops only when the next segment would break a limit."""
    nxt = w.last_segment + 1
    if nxt == len(segments):
        return
    end = max(w.end_ms, segments[nxt].end_ms)
    chars = len(w.text) + 1 + len(segments[nxt].text)
    assert end - w.start_ms > window_ms or chars > max_chars


def _check_split_pieces(
    segments: Sequence[Segment], windows: Sequence[Window], max_chars: int
) -> None:
    """Pieces of an oversized segment keep its times and, together, all of its words."""
    pieces: dict[int, list[str]] = {}
    for w in windows:
        if is_split(w, segments, max_chars):
            seg = segments[w.first_segment]
            assert (w.start_ms, w.end_ms) == (seg.start_ms, seg.end_ms)
            pieces.setdefault(w.first_segment, []).append(w.text)
    for index, texts in pieces.items():
        words = segments[index].text.split()
        if max(map(len, words)) <= max_chars:
            assert " ".join(texts).split() == words
        else:  # over-long words are cut hard, so compare the characters only
            assert "".join(" ".join(texts).split()) == "".join(words)


# --------------------------------------------------------------------------- SRT


def test_read_srt_sample() -> None:
    assert read_srt(FIXTURES / "sample.srt") == SAMPLE_SRT


def test_read_srt_crlf_and_bom() -> None:
    raw = (FIXTURES / "sample_crlf_bom.srt").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    assert read_srt(FIXTURES / "sample_crlf_bom.srt") == SAMPLE_SRT


def test_read_srt_multiline_cue_and_tags(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "multi.srt",
        "1\n00:00:01,000 --> 00:00:02,000 X1:10 X2:20\n{\\an8}<b>First</b> line\n"
        "  second   line\n<font color='red'>third</font> line\n",
    )
    assert read_srt(path) == [Segment(1_000, 2_000, "First line second line third line")]


def test_read_srt_without_numbers_and_extra_blank_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "nonum.srt",
        "\n\n00:00:01,000 --> 00:00:02,000\nOne.\n\n\n \n00:00:02.000 --> 10:00:00,000\nTwo.\n\n",
    )
    assert read_srt(path) == [Segment(1_000, 2_000, "One."), Segment(2_000, 36_000_000, "Two.")]


def test_read_srt_empty_file(tmp_path: Path) -> None:
    assert read_srt(write(tmp_path, "empty.srt", "")) == []
    assert read_srt(write(tmp_path, "bom.srt", b"\xef\xbb\xbf\r\n")) == []


def test_read_srt_allows_overlap_and_equal_starts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "overlap.srt",
        "1\n00:00:01,000 --> 00:00:05,000\nA\n\n2\n00:00:01,000 --> 00:00:02,000\nB\n",
    )
    assert [s.text for s in read_srt(path)] == ["A", "B"]


# --------------------------------------------------------------------------- WebVTT


def test_read_vtt_sample() -> None:
    assert read_vtt(FIXTURES / "sample.vtt") == [
        Segment(1_000, 3_500, "We are in New York City"),
        Segment(3_500, 6_000, "Then look & listen. Second line."),
        Segment(3_600_000, 3_601_250, "Last cue."),
    ]


def test_read_vtt_minimal_with_bom_and_crlf(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "min.vtt",
        b"\xef\xbb\xbfWEBVTT\r\n\r\nNOTE\r\n\r\n00:00.000 --> 00:00.001\r\nx &lt;y&gt;\r\n",
    )
    assert read_vtt(path) == [Segment(0, 1, "x <y>")]


def test_read_vtt_header_only(tmp_path: Path) -> None:
    assert read_vtt(write(tmp_path, "h.vtt", "WEBVTT\n")) == []


# --------------------------------------------------------------------------- whisper


def test_read_whisper_json() -> None:
    assert read_whisper_json(FIXTURES / "whisper.json") == [
        Segment(0, 2_500, "Hello there."),
        Segment(2_500, 4_000, "General Kenobi!"),
    ]


def test_read_whisper_json_rounds_to_ms_and_allows_no_segments(tmp_path: Path) -> None:
    path = write(
        tmp_path, "w.json", '{"segments": [{"start": 0.0004, "end": 1.2346, "text": "a"}]}'
    )
    assert read_whisper_json(path) == [Segment(0, 1_235, "a")]
    empty = write(tmp_path, "silence.json", '{"text": "", "segments": [], "language": "en"}')
    assert read_whisper_json(empty) == []


# --------------------------------------------------------------------------- dispatch


@pytest.mark.parametrize(
    ("name", "count"),
    [("sample.srt", 3), ("sample_crlf_bom.srt", 3), ("sample.vtt", 3), ("whisper.json", 2)],
)
def test_read_segments_dispatch(name: str, count: int) -> None:
    assert len(read_segments(FIXTURES / name)) == count


def test_read_segments_uppercase_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, "X.SRT", (FIXTURES / "sample.srt").read_bytes())
    assert read_segments(path) == SAMPLE_SRT


def test_read_segments_unknown_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, "talk.txt", "hello")
    with pytest.raises(InputError, match=r"talk\.txt: record -: unsupported suffix '\.txt'"):
        read_segments(path)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("name", "record", "fragment"),
    [
        ("bad_truncated.json", "-", "invalid JSON at line 8"),
        ("bad_types.json", 2, "'start' must be a number of seconds, got string"),
        ("bad_nul.json", 2, "NUL byte"),
        ("bad_empty_text.srt", 2, "empty text"),
        ("bad_nul.srt", 3, "NUL byte"),
        ("bad_utf8.srt", 2, "invalid UTF-8"),
        ("bad_timestamp.vtt", 2, "line 6: malformed timing line"),
    ],
)
def test_bad_fixtures(name: str, record: object, fragment: str) -> None:
    path = FIXTURES / name
    with pytest.raises(InputError) as info:
        read_segments(path)
    err = info.value
    assert err.record == record
    assert Path(err.path).name == name
    assert name in str(err) and f"record {record}:" in str(err)
    assert fragment in str(err)


CUE = "00:00:01,000 --> 00:00:02,000\nok\n\n"
BAD_SRT = [
    ("end_before_start", "1\n00:00:05,000 --> 00:00:04,000\ntext\n", 1, "is not after start"),
    ("zero_length", CUE + "00:00:03,000 --> 00:00:03,000\ntext\n", 2, "is not after start"),
    ("negative", "-00:00:01,000 --> 00:00:02,000\ntext\n", 1, "negative"),
    ("minutes_60", "00:60:00,000 --> 01:00:00,000\ntext\n", 1, "above 59"),
    ("short_ms", CUE + CUE + "00:00:03,00 --> 00:00:04,000\nx\n", 3, "malformed timing"),
    ("no_arrow", "1\n00:00:01,000 00:00:02,000\ntext\n", 1, "malformed timing"),
    ("index_only", CUE + "7\n", 2, "malformed timing"),
    ("text_without_timing", CUE + "just text\n", 2, "malformed timing"),
    ("out_of_order", CUE + "00:00:00,500 --> 00:00:03,000\nx\n", 2, "before the previous"),
    ("tags_only", "00:00:01,000 --> 00:00:02,000\n<i></i>\n", 1, "empty text"),
]


@pytest.mark.parametrize(
    ("content", "record", "fragment"),
    [case[1:] for case in BAD_SRT],
    ids=[case[0] for case in BAD_SRT],
)
def test_bad_srt(tmp_path: Path, content: str, record: int, fragment: str) -> None:
    path = write(tmp_path, "bad.srt", content)
    with pytest.raises(InputError, match=rf"bad\.srt: record {record}: .*{fragment}"):
        read_srt(path)


VCUE = "00:01.000 --> 00:02.000\nok\n\n"
BAD_VTT = [
    ("no_header", "00:01.000 --> 00:02.000\nx\n", "-", "expected a 'WEBVTT' header"),
    ("header_typo", "WEBVTTX\n\n" + VCUE, "-", "expected a 'WEBVTT' header"),
    ("cue_in_header", "WEBVTT\n00:01.000 --> 00:02.000\nx\n", 1, "inside the header"),
    ("id_without_timing", "WEBVTT\n\n" + VCUE + "cue-id\n", 2, "without a timing line"),
    ("comma_ms", "WEBVTT\n\n" + VCUE + "00:01,000 --> 00:02.000\nx\n", 2, "malformed"),
    ("seconds_60", "WEBVTT\n\n00:60.000 --> 01:02.000\nx\n", 1, "above 59"),
    ("empty_payload", "WEBVTT\n\n" + VCUE + "00:03.000 --> 00:04.000\n<v Bob></v>\n", 2, "empty"),
    ("nul", "WEBVTT\n\n" + VCUE + VCUE + "00:05.000 --> 00:06.000\na\x00\n", 3, "NUL"),
    ("out_of_order", "WEBVTT\n\n00:05.000 --> 00:06.000\na\n\n" + VCUE, 2, "before the"),
]


@pytest.mark.parametrize(
    ("content", "record", "fragment"),
    [case[1:] for case in BAD_VTT],
    ids=[case[0] for case in BAD_VTT],
)
def test_bad_vtt(tmp_path: Path, content: str, record: object, fragment: str) -> None:
    path = write(tmp_path, "bad.vtt", content)
    with pytest.raises(InputError, match=rf"bad\.vtt: record {record}: .*{fragment}"):
        read_vtt(path)


def seg_json(start: str = "0.0", end: str = "1.0", text: str = '"ok"') -> str:
    """One whisper segment as JSON source text."""
    return f'{{"start": {start}, "end": {end}, "text": {text}}}'


BAD_JSON = [
    ("not_object", "[]", "-", "expected a JSON object, got array"),
    ("no_segments", '{"text": "hi"}', "-", "'segments' must be an array, got null"),
    ("segments_string", '{"segments": "abc"}', "-", "'segments' must be an array, got string"),
    ("segment_not_object", '{"segments": [' + seg_json() + ", 3]}", 2, "got number"),
    ("start_bool", '{"segments": [' + seg_json(start="true") + "]}", 1, "got boolean"),
    ("start_null", '{"segments": [' + seg_json(start="null") + "]}", 1, "got null"),
    ("missing_end", '{"segments": [{"start": 0, "text": "x"}]}', 1, "missing 'end'"),
    ("text_number", '{"segments": [' + seg_json(text="5") + "]}", 1, "'text' must be a string"),
    ("empty_text", '{"segments": [' + seg_json(text='"  "') + "]}", 1, "empty text"),
    ("nan", '{"segments": [' + seg_json(end="NaN") + "]}", 1, "not a finite"),
    ("huge", '{"segments": [' + seg_json(end="1e308") + "]}", 1, "not a finite"),
    ("negative", '{"segments": [' + seg_json(start="-1") + "]}", 1, "negative time"),
    ("end_equals_start", '{"segments": [' + seg_json(end="0.0") + "]}", 1, "not after"),
    (
        "out_of_order",
        '{"segments": [' + seg_json("5", "6") + ", " + seg_json() + "]}",
        2,
        "before the previous",
    ),
    ("lone_surrogate", '{"segments": [' + seg_json(text='"\\ud800"') + "]}", 1, "surrogate"),
    ("trailing_garbage", '{"segments": []} x', "-", "invalid JSON at line 1, column 18"),
    ("empty_file", "", "-", "invalid JSON at line 1, column 1"),
    ("deep_nesting", "[" * 100_000, "-", "invalid JSON"),
]


@pytest.mark.parametrize(
    ("content", "record", "fragment"),
    [case[1:] for case in BAD_JSON],
    ids=[case[0] for case in BAD_JSON],
)
def test_bad_whisper_json(tmp_path: Path, content: str, record: object, fragment: str) -> None:
    path = write(tmp_path, "bad.json", content)
    with pytest.raises(InputError) as info:
        read_whisper_json(path)
    assert str(info.value).startswith(f"{path}: record {record}: ")
    assert fragment in str(info.value)


def test_invalid_utf8_outside_json_string(tmp_path: Path) -> None:
    path = write(tmp_path, "bin.json", b'{"segments": \xff[]}')
    with pytest.raises(InputError, match=r"bin\.json: record -: invalid JSON"):
        read_whisper_json(path)


def test_missing_file_is_not_input_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_segments(tmp_path / "absent.srt")


# --------------------------------------------------------------------------- windows


def uniform(n: int, step_ms: int) -> list[Segment]:
    """n back-to-back segments of step_ms each, texts 's0', 's1', ..."""
    return [Segment(i * step_ms, (i + 1) * step_ms, f"s{i}") for i in range(n)]


def spans(windows: Sequence[Window]) -> list[tuple[int, int]]:
    """(first_segment, last_segment) of each window."""
    return [(w.first_segment, w.last_segment) for w in windows]


def test_window_empty() -> None:
    assert window_transcript([]) == []


def test_window_overlap_example() -> None:
    segments = uniform(20, 5_000)
    windows = window_transcript(segments, window_ms=45_000, overlap_ms=5_000)
    assert spans(windows) == [(0, 8), (8, 16), (16, 19)]
    assert [(w.start_ms, w.end_ms) for w in windows] == [
        (0, 45_000),
        (40_000, 85_000),
        (80_000, 100_000),
    ]
    assert windows[0].text == " ".join(f"s{i}" for i in range(9))
    check_windows(segments, windows, 45_000, 5_000, 8_000)


def test_window_without_overlap() -> None:
    windows = window_transcript(uniform(10, 10_000), window_ms=30_000, overlap_ms=0)
    assert spans(windows) == [(0, 2), (3, 5), (6, 8), (9, 9)]


def test_window_single_segment() -> None:
    segments = [Segment(0, 100_000, "long but short text")]
    assert window_transcript(segments) == [Window(0, 100_000, "long but short text", 0, 0)]


def test_window_limited_by_chars() -> None:
    segments = [Segment(i * 10, i * 10 + 10, "abcd") for i in range(10)]
    windows = window_transcript(segments, window_ms=10_000, overlap_ms=0, max_chars=14)
    assert spans(windows) == [(0, 2), (3, 5), (6, 8), (9, 9)]
    assert windows[0].text == "abcd abcd abcd"


def test_window_never_repeats_a_subset() -> None:
    # s2 is too long to join a window from s1, so the overlap candidate s1 is skipped.
    segments = [Segment(0, 5_000, "a"), Segment(5_000, 10_000, "b"), Segment(10_000, 60_000, "c")]
    windows = window_transcript(segments, window_ms=45_000, overlap_ms=5_000)
    assert spans(windows) == [(0, 1), (2, 2)]


def test_window_splits_oversized_segment() -> None:
    big = "First sentence here. " * 30 + "word " * 50 + "x" * 250
    segments = [Segment(0, 1_000, "before"), Segment(1_000, 2_000, big), Segment(2_000, 3_000, "y")]
    windows = window_transcript(segments, window_ms=45_000, overlap_ms=5_000, max_chars=100)
    assert windows[0] == Window(0, 1_000, "before", 0, 0)
    assert windows[-1] == Window(2_000, 3_000, "y", 2, 2)
    middle = windows[1:-1]
    assert len(middle) > 5
    assert all((w.start_ms, w.end_ms, w.first_segment) == (1_000, 2_000, 1) for w in middle)
    assert all(len(w.text) <= 100 for w in middle)
    assert "".join(" ".join(w.text for w in middle).split()) == "".join(big.split())
    check_windows(segments, windows, 45_000, 5_000, 100)


@pytest.mark.parametrize(
    ("window_ms", "overlap_ms", "max_chars"),
    [(0, 0, 10), (-1, 0, 10), (1_000, 1_000, 10), (1_000, -1, 10), (1_000, 0, 0)],
)
def test_window_rejects_bad_arguments(window_ms: int, overlap_ms: int, max_chars: int) -> None:
    with pytest.raises(ValueError):
        window_transcript(uniform(3, 100), window_ms, overlap_ms, max_chars)


def test_window_rejects_unsorted_segments() -> None:
    with pytest.raises(ValueError, match="starts before"):
        window_transcript([Segment(1_000, 2_000, "a"), Segment(0, 500, "b")])


def random_params(rng: random.Random) -> tuple[int, int, int]:
    """(window_ms, overlap_ms, max_chars) drawn at random."""
    window_ms = rng.choice([1_000, 10_000, 45_000, 120_000])
    overlap_ms = rng.choice([0, rng.randint(0, window_ms - 1), window_ms - 1])
    return window_ms, overlap_ms, rng.choice([40, 200, 1_000, 8_000])


@pytest.mark.parametrize("seed", range(4))
def test_window_properties_random(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        window_ms, overlap_ms, max_chars = random_params(rng)
        segments = random_segments(rng, max_chars)
        windows = window_transcript(segments, window_ms, overlap_ms, max_chars)
        check_windows(segments, windows, window_ms, overlap_ms, max_chars)


@pytest.mark.parametrize("seed", range(100, 103))
def test_window_properties_random_overlapping_segments(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        window_ms, overlap_ms, max_chars = random_params(rng)
        segments = random_segments(rng, max_chars, overlapping=True)
        windows = window_transcript(segments, window_ms, overlap_ms, max_chars)
        check_windows(segments, windows, window_ms, overlap_ms, max_chars, ends_monotone=False)


def _seconds(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def test_window_many_tiny_segments_scales_linearly() -> None:
    """10x the segments costs about 10x, not 100x (a ratio in one run, not a wall-clock limit:
    the machine's load cancels out; a quadratic scan would give ~100)."""

    def run(n: int) -> tuple[float, object]:
        segments = [Segment(i, i + 1, "w") for i in range(n)]
        return _seconds(lambda: window_transcript(segments, 45_000, 5_000, 8_000))

    small, _ = run(20_000)
    large, windows = run(200_000)
    assert large / max(small, 1e-3) < 35, f"10x the segments took {large / small:.0f}x as long"
    segments = [Segment(i, i + 1, "w") for i in range(200_000)]
    check_windows(segments, windows, 45_000, 5_000, 8_000)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   \n ", []),
        ("no punctuation at all", ["no punctuation at all"]),
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Pi is 3.14 today. Yes.", ["Pi is 3.14 today.", "Yes."]),
        (
            "Mr. Smith and Dr. Jones live on St. Mark St. now. Next.",
            ["Mr. Smith and Dr. Jones live on St. Mark St. now.", "Next."],
        ),
        (
            "Fruit, e.g. apples, i.e. Malus, cf. pears. Done.",
            ["Fruit, e.g. apples, i.e. Malus, cf. pears.", "Done."],
        ),
        (
            "Written by J. R. R. Tolkien. Then J.K. Rowling.",
            ["Written by J. R. R. Tolkien.", "Then J.K. Rowling."],
        ),
        ("So do I. Then we left.", ["So do I.", "Then we left."]),
        ("Wait... what? Really…  Yes!!", ["Wait...", "what?", "Really…", "Yes!!"]),
        ('He said "Stop." Then (quietly.) left.', ['He said "Stop."', "Then (quietly.) left."]),
        # a single '.' before a lowercase word, or an abbreviation-like token before a digit,
        # continues the sentence
        (
            "We met at 3 p.m. on Monday. Then we left.",
            ["We met at 3 p.m. on Monday.", "Then we left."],
        ),
        ("Apples, pears, etc. and so on. Done.", ["Apples, pears, etc. and so on.", "Done."]),
        (
            "Он родился в 1799 г. в Москве. Потом уехал.",
            ["Он родился в 1799 г. в Москве.", "Потом уехал."],
        ),
        (
            "See p. 5 and с. 12 there. He slept. 5 hours later: up.",
            ["See p. 5 and с. 12 there.", "He slept.", "5 hours later: up."],
        ),
        (
            "the soul is eternal [1]. the body changes [2].",
            ["the soul is eternal [1].", "the body changes [2]."],
        ),
        ("Line one.\nLine two.\n\nPara two.", ["Line one.", "Line two.", "Para two."]),
        (
            "А. С. Пушкин родился в Москве. Он писал стихи, т.е. был поэтом! Правда?",
            ["А. С. Пушкин родился в Москве.", "Он писал стихи, т.е. был поэтом!", "Правда?"],
        ),
        (
            "यह पहला वाक्य है। यह दूसरा है॥ और तीसरा ।  अंत",
            ["यह पहला वाक्य है।", "यह दूसरा है॥", "और तीसरा ।", "अंत"],
        ),
        (
            "Hello world. नमस्ते दुनिया। Привет, мир! Dr. Who? Конец.",
            ["Hello world.", "नमस्ते दुनिया।", "Привет, мир!", "Dr. Who?", "Конец."],
        ),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize("seed", range(3))
def test_split_sentences_keeps_every_word(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        text = random_text(rng, rng.randint(0, 80)).replace(" ", rng.choice([" ", "\n", "  \t"]))
        sentences = split_sentences(text)
        assert " ".join(sentences).split() == text.split()
        assert all(s == s.strip() and s for s in sentences)


# --------------------------------------------------------------------------- packing


def words_of(chunks: Sequence[str]) -> list[str]:
    """All whitespace-separated words of the chunks, in order."""
    return [word for chunk in chunks for word in chunk.split()]


def test_pack_empty() -> None:
    assert pack_text("") == []
    assert pack_text(" \n\n \t\n") == []


def test_pack_joins_small_paragraphs() -> None:
    text = "Alpha one.\n\nBeta two.\r\n \r\nGamma three.\n\n\n\nDelta."
    assert pack_text(text, target_chars=25, max_chars=40) == [
        "Alpha one.\n\nBeta two.",
        "Gamma three.\n\nDelta.",
    ]
    assert pack_text(text) == ["Alpha one.\n\nBeta two.\n\nGamma three.\n\nDelta."]


def test_pack_keeps_medium_paragraph_whole() -> None:
    medium = "word " * 7 + "end."  # 39 chars: above target, within max
    assert pack_text(f"a.\n\n{medium}\n\nb.", target_chars=20, max_chars=40) == [
        "a.",
        medium,
        "b.",
    ]


def test_pack_long_paragraph_by_sentence() -> None:
    paragraph = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = pack_text(f"Intro.\n\n{paragraph}\n\nOutro.", target_chars=100, max_chars=140)
    assert chunks[0] == "Intro." and chunks[-1] == "Outro."
    for chunk in chunks[1:-1]:
        assert len(chunk) <= 100
        assert chunk.startswith("Sentence") and chunk.endswith("here.")
    assert words_of(chunks) == ["Intro.", *paragraph.split(), "Outro."]


def test_pack_long_sentence_by_words() -> None:
    sentence = " ".join(f"w{i}" for i in range(500)) + "."
    chunks = pack_text(sentence, target_chars=50, max_chars=60)
    assert all(len(c) <= 60 for c in chunks)
    assert words_of(chunks) == sentence.split()


def test_pack_giant_word_is_cut_hard() -> None:
    text = "a " + "x" * 1_000 + " b"
    chunks = pack_text(text, target_chars=90, max_chars=100)
    assert all(len(c) <= 100 for c in chunks)
    assert "".join("".join(chunks).split()) == "".join(text.split())


@pytest.mark.parametrize(("target", "maximum"), [(0, 10), (11, 10), (-5, -1)])
def test_pack_rejects_bad_arguments(target: int, maximum: int) -> None:
    with pytest.raises(ValueError):
        pack_text("x", target, maximum)


def test_pack_mixed_scripts() -> None:
    text = (
        "Hello world. This is Mr. Smith speaking.\n\n"
        + "नमस्ते दुनिया। यह एक परीक्षण है॥ " * 20
        + "\n\n"
        + "Привет, мир! Это т.е. проверка. " * 20
    )
    chunks = pack_text(text, target_chars=120, max_chars=160)
    assert all(len(c) <= 160 for c in chunks)
    assert words_of(chunks) == text.split()
    assert chunks[0] == "Hello world. This is Mr. Smith speaking."
    for chunk in chunks[1:]:  # packed sentence by sentence, never inside one
        assert chunk.split()[0] in {"नमस्ते", "यह", "Привет,", "Это"}
        assert chunk.endswith(("दुनिया।", "है॥", "мир!", "проверка."))
    assert any("है॥ नमस्ते" in c for c in chunks) and any("мир! Это" in c for c in chunks)


def random_document(rng: random.Random) -> str:
    """Paragraphs of random words with random blank-line separators."""
    paragraphs = [random_text(rng, rng.choice([1, 5, 30, 300])) for _ in range(rng.randint(0, 20))]
    return "".join(p + rng.choice(["\n\n", "\n \n", "\r\n\r\n", "\n\n\n"]) for p in paragraphs)


@pytest.mark.parametrize("seed", range(3))
def test_pack_properties_random(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        target = rng.choice([10, 50, 300, 900])
        maximum = target + rng.choice([0, 1, 100, 500])
        text = random_document(rng)
        chunks = pack_text(text, target, maximum)
        assert all(0 < len(c) <= maximum for c in chunks)
        assert words_of(chunks) == text.split() or max(map(len, text.split())) > maximum


def _text_of(rng: random.Random, paragraphs: list[str], size: int) -> str:
    parts: list[str] = []
    total = 0
    while total < size:
        paragraph = rng.choice(paragraphs)
        parts.append(paragraph)
        total += len(paragraph) + 2
    return "\n\n".join(parts)


def test_pack_ten_megabytes_scales_linearly() -> None:
    """10 MB packs correctly and costs about 10x what 1 MB does (a ratio in one run: a quadratic
    step would give ~100, whatever the machine's load)."""
    rng = random.Random(7)
    paragraphs = [random_text(rng, rng.choice([5, 50, 150, 2_000])) for _ in range(200)]
    small_text, text = _text_of(rng, paragraphs, 1_000_000), _text_of(rng, paragraphs, 10_000_000)
    small, _ = _seconds(lambda: pack_text(small_text))
    large, chunks = _seconds(lambda: pack_text(text))
    assert large / max(small, 1e-3) < 35, f"10 MB took {large / small:.0f}x as long as 1 MB"
    assert all(len(c) <= 1_400 for c in chunks)  # type: ignore[union-attr]
    assert words_of(chunks) == text.split()  # type: ignore[arg-type]
