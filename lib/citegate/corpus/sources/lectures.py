"""The four 1900 Vivekananda lectures as timed tracks (espeak-ng time codes, see tts_tracks.py),
cut into ~45 s transcript windows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.core.fragments import Fragment
from citegate.corpus.chunking import read_segments, read_whisper_json, window_transcript

CORPUS = "gita"  # the lectures are commentary on the Gita and are searched with it


def fmt_ms(ms: int) -> str:
    """`83500` -> `1:23.5`: a span label a person can seek to."""
    minutes, rest = divmod(ms, 60_000)
    return f"{minutes}:{rest / 1000:04.1f}"


def track_fragments(
    path: Path,
    corpus: str,
    track_id: str,
    title: str,
    lang: str = "en",
) -> Iterator[Fragment]:
    """Transcript windows of one timed track file (SRT, WebVTT or Whisper JSON)."""
    segments = read_whisper_json(path) if path.suffix == ".json" else read_segments(path)
    for w in window_transcript(segments):
        yield Fragment(
            key=f"track:{track_id}:{w.start_ms}-{w.end_ms}",
            corpus=corpus,
            kind="track_transcript",
            source_id=track_id,
            text=w.text,
            lang=lang,
            track_id=track_id,
            start_ms=w.start_ms,
            end_ms=w.end_ms,
            book=title,
            addr_label=f"{title} @ {fmt_ms(w.start_ms)}–{fmt_ms(w.end_ms)}",
            tokens=title,
        )


def read_lectures(root: Path | None = None) -> Iterator[Fragment]:
    """Every transcript window of the lecture tracks in `data/corpora/lectures/*.json`."""
    root = Path(root or paths.CORPORA / "lectures")
    files = sorted(root.glob("*.json"))
    if not files:
        raise InputError(root, "-", "no lecture track files (*.json) found")
    for path in files:
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(path, "-", f"not valid JSON: {exc}") from exc
        track_id = meta.get("track_id") or path.stem
        title = f"Vivekananda, {meta.get('title', track_id)} ({meta.get('date', 'n.d.')[:4]})"
        yield from track_fragments(path, CORPUS, track_id, title)
