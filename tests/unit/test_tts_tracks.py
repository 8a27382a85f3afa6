"""Checks on the committed espeak-ng timed tracks in data/corpora/lectures/."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

LECTURES = Path(__file__).resolve().parents[2] / "data" / "corpora" / "lectures"
TRACK_IDS = (
    "vivekananda-gita-1",
    "vivekananda-gita-2",
    "vivekananda-gita-3",
    "vivekananda-krishna",
)


def load_track(track_id: str) -> dict:
    """The committed JSON of one track."""
    return json.loads((LECTURES / f"{track_id}.json").read_text(encoding="utf-8"))


def version_number(version: str) -> str | None:
    """The bare version ("1.51") out of ``espeak-ng --version`` output."""
    match = re.search(r"text-to-speech:\s*(\S+)", version)
    return match.group(1) if match else None


@pytest.mark.parametrize("track_id", TRACK_IDS)
def test_segments_are_contiguous(track_id: str) -> None:
    track = load_track(track_id)
    segments = track["segments"]
    assert track["track_id"] == track_id
    assert segments and segments[0]["start_ms"] == 0
    for i, seg in enumerate(segments):
        assert seg["id"] == i
        assert seg["end_ms"] > seg["start_ms"]
        assert seg["start"] == seg["start_ms"] / 1000 and seg["end"] == seg["end_ms"] / 1000
        assert seg["text"].strip() == seg["text"] and seg["text"]
    for prev, nxt in zip(segments, segments[1:], strict=False):
        assert nxt["start_ms"] == prev["end_ms"]
        assert nxt["paragraph"] >= prev["paragraph"]
    assert track["duration_ms"] == segments[-1]["end_ms"]


@pytest.mark.parametrize("track_id", TRACK_IDS)
def test_segments_cover_lecture_text(track_id: str) -> None:
    track = load_track(track_id)
    source = (LECTURES / "text" / track["source_file"]).read_text(encoding="utf-8")
    spoken = " ".join(seg["text"] for seg in track["segments"])
    assert spoken.split() == source.split()


@pytest.mark.parametrize("track_id", TRACK_IDS)
def test_metadata(track_id: str) -> None:
    track = load_track(track_id)
    assert track["author"] == "Swami Vivekananda"
    assert re.fullmatch(r"1900-\d\d-\d\d", track["date"])
    assert track["title"]
    tts = track["tts"]
    assert tts["engine"] == "espeak-ng"
    assert version_number(tts["version"])
    assert tts["voice"] == "en-us"
    assert tts["speed_wpm"] == 160
    assert tts["sample_rate"] == 22050


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
def test_resynthesis_is_deterministic(tmp_path: Path) -> None:
    from citegate.corpus.sources import tts_tracks

    track = load_track("vivekananda-gita-1")
    installed = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout
    if version_number(installed) != version_number(track["tts"]["version"]):
        pytest.skip(f"installed espeak-ng differs from the one that made the tracks: {installed}")
    segments = track["segments"][:3]
    texts = [seg["text"] for seg in segments]
    frames = tts_tracks.synthesize_all(texts, tmp_path)
    sentences = [tts_tracks.Sentence(seg["paragraph"], seg["text"]) for seg in segments]
    assert tts_tracks.build_segments(sentences, frames) == segments
