"""`citegate tts-tracks`: the maintainer's tool that builds the timed lecture tracks (espeak-ng)."""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.corpus.sources import tts_tracks


def cmd_tts_tracks(args: argparse.Namespace) -> int:
    """Build every track; print one summary line per track."""
    for path, record in tts_tracks.build_all(args.src, args.out, args.audio_dir):
        print(f"{path}: {len(record['segments'])} sentences, {record['duration_ms']} ms")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate tts-tracks`."""
    p = sub.add_parser(
        "tts-tracks",
        help="turn the lecture texts into timed speech tracks with espeak-ng (maintainers)",
        description=(tts_tracks.__doc__ or "").splitlines()[0],
    )
    p.add_argument(
        "--src", type=Path, default=tts_tracks.DEFAULT_SRC, help="folder of lecture .txt files"
    )
    p.add_argument(
        "--out", type=Path, default=tts_tracks.DEFAULT_OUT, help="folder for <track_id>.json"
    )
    p.add_argument("--audio-dir", type=Path, default=None, help="also write <track_id>.wav here")
    p.set_defaults(func=cmd_tts_tracks)
