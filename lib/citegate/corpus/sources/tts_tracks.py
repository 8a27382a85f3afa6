"""Turn the Vivekananda lecture texts into timed speech tracks with espeak-ng.

Each lecture is split into sentences (paragraph breaks are sentence breaks too),
every sentence is synthesized on its own with fixed espeak-ng settings, and the
sentence durations are read exactly from the WAV sample counts.  The result is a
Whisper-style JSON file per lecture whose segments are exact, contiguous spans of
the track made by concatenating the sentence WAVs in order.

Usage (from the repository root)::

    citegate tts-tracks --out data/corpora/lectures --audio-dir /tmp/tracks

Without ``--audio-dir`` the audio is synthesized in a temporary folder and thrown
away; only the JSON time codes are kept.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import wave
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from citegate.core.errors import ConfigError
from citegate.core.paths import CORPORA

ENGINE = "espeak-ng"
VOICE = "en-us"
SPEED_WPM = 160
SAMPLE_RATE = 22050
AUTHOR = "Swami Vivekananda"
MAX_WORKERS = 2

DEFAULT_SRC = CORPORA / "lectures" / "text"
DEFAULT_OUT = CORPORA / "lectures"


@dataclass(frozen=True)
class Lecture:
    """Catalogue entry for one lecture text."""

    track_id: str
    title: str
    date: str
    source_file: str


LECTURES: tuple[Lecture, ...] = (
    Lecture("vivekananda-gita-1", "The Gita I", "1900-05-26", "vivekananda_the_gita_i_1900.txt"),
    Lecture("vivekananda-gita-2", "The Gita II", "1900-05-28", "vivekananda_the_gita_ii_1900.txt"),
    Lecture(
        "vivekananda-gita-3", "The Gita III", "1900-05-29", "vivekananda_the_gita_iii_1900.txt"
    ),
    Lecture("vivekananda-krishna", "Krishna", "1900-04-01", "vivekananda_krishna_1900.txt"),
)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a lecture and the paragraph (0-based) it belongs to."""

    paragraph: int
    text: str


# --------------------------------------------------------------------------- text

# A candidate break: sentence-final punctuation, optional closing quotes/brackets,
# whitespace, then something that starts a sentence (capital, quote, bracket).
_BREAK = re.compile(r"""[.!?]["'\u201d\u2019)\]]*(?=\s+["'\u201c\u2018(\[]?[A-Z])""")
# Words whose trailing period is not a sentence end.
_ABBREV = re.compile(r"(?:\b(?:Mr|Mrs|Dr|St)|\be\.g|\bi\.e|\b[A-HJ-Z])\.$")
_HAS_WORD = re.compile(r"\w")


def split_paragraphs(text: str) -> list[str]:
    """Split a text on blank lines; each paragraph is whitespace-normalized."""
    chunks = re.split(r"\n\s*\n", text.strip())
    return [" ".join(chunk.split()) for chunk in chunks if chunk.strip()]


def _is_false_break(head: str, piece: str) -> bool:
    """True when a break candidate follows an abbreviation or sits inside ``( ... )``.

    ``head`` ends at the punctuation mark, ``piece`` also holds the closing marks
    after it, so a citation like ``(Ibid. IV. 18.)`` stays in one piece.
    """
    return bool(_ABBREV.search(head)) or piece.count("(") > piece.count(")")


def _raw_splits(paragraph: str) -> Iterator[str]:
    """Yield the pieces of a paragraph cut at every sentence break."""
    start = 0
    for match in _BREAK.finditer(paragraph):
        if _is_false_break(paragraph[start : match.start() + 1], paragraph[start : match.end()]):
            continue
        yield paragraph[start : match.end()].strip()
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        yield tail


def split_sentences(paragraph: str) -> list[str]:
    """Split one paragraph into sentences.

    Pieces without any word character (a lone ``...`` omission mark) are joined
    to the following sentence, or to the previous one at the paragraph's end.
    """
    sentences: list[str] = []
    pending = ""
    for piece in _raw_splits(paragraph):
        piece = f"{pending} {piece}".strip() if pending else piece
        if _HAS_WORD.search(piece):
            sentences.append(piece)
            pending = ""
        else:
            pending = piece
    if pending:
        if sentences:
            sentences[-1] = f"{sentences[-1]} {pending}"
        else:
            sentences.append(pending)
    return sentences


def sentences_of(text: str) -> list[Sentence]:
    """All sentences of a lecture text, tagged with their paragraph index."""
    return [
        Sentence(p, s)
        for p, paragraph in enumerate(split_paragraphs(text))
        for s in split_sentences(paragraph)
    ]


# -------------------------------------------------------------------------- audio


def espeak_version() -> str:
    """The stripped output of ``espeak-ng --version``."""
    done = subprocess.run([ENGINE, "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def synthesize(text: str, wav_path: Path) -> int:
    """Speak ``text`` into ``wav_path`` with the fixed settings; return its sample count."""
    subprocess.run(
        [ENGINE, "-v", VOICE, "-s", str(SPEED_WPM), "-w", str(wav_path), "--stdin"],
        input=text.encode("utf-8"),
        capture_output=True,
        check=True,
    )
    return wav_frames(wav_path)


def wav_frames(wav_path: Path) -> int:
    """Number of samples in a mono 16-bit WAV at ``SAMPLE_RATE``; reject other formats."""
    with wave.open(str(wav_path), "rb") as wav:
        params = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
        if params != (1, 2, SAMPLE_RATE):
            raise RuntimeError(f"{wav_path}: unexpected WAV format {params}")
        frames = wav.getnframes()
    if frames <= 0:
        raise RuntimeError(f"{wav_path}: espeak-ng produced no audio")
    return frames


def synthesize_all(texts: Sequence[str], work_dir: Path, desc: str = "") -> list[int]:
    """Synthesize ``texts`` to ``work_dir/00000.wav ...``; return sample counts in order."""
    paths = [work_dir / f"{i:05d}.wav" for i in range(len(texts))]
    with ThreadPoolExecutor(max_workers=MAX_WORKERS) as pool:
        results = pool.map(synthesize, texts, paths)
        return list(_progress(results, total=len(texts), desc=desc))


def _progress(items: Iterable[int], total: int, desc: str) -> Iterable[int]:
    """Wrap ``items`` in a tqdm progress bar."""
    return tqdm(items, total=total, desc=desc, unit="sent")


def concatenate(wav_paths: Sequence[Path], out_path: Path) -> int:
    """Join WAVs of identical format into ``out_path``; return its sample count."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(out_path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        for path in wav_paths:
            with wave.open(str(path), "rb") as part:
                out.writeframes(part.readframes(part.getnframes()))
    return wav_frames(out_path)


# --------------------------------------------------------------------------- json


def samples_to_ms(samples: int) -> int:
    """Integer milliseconds for a sample offset at ``SAMPLE_RATE``."""
    return round(samples * 1000 / SAMPLE_RATE)


def build_segments(sentences: Sequence[Sentence], frames: Sequence[int]) -> list[dict]:
    """Whisper-style segments from cumulative sample counts."""
    segments = []
    offset = 0
    for i, (sentence, n) in enumerate(zip(sentences, frames, strict=True)):
        start_ms, end_ms = samples_to_ms(offset), samples_to_ms(offset + n)
        segments.append(
            {
                "id": i,
                "start": start_ms / 1000,
                "end": end_ms / 1000,
                "start_ms": start_ms,
                "end_ms": end_ms,
                "paragraph": sentence.paragraph,
                "text": sentence.text,
            }
        )
        offset += n
    return segments


def track_record(lecture: Lecture, version: str, segments: list[dict]) -> dict:
    """The JSON document for one track."""
    return {
        "track_id": lecture.track_id,
        "title": lecture.title,
        "author": AUTHOR,
        "date": lecture.date,
        "source_file": lecture.source_file,
        "tts": {
            "engine": ENGINE,
            "version": version,
            "voice": VOICE,
            "speed_wpm": SPEED_WPM,
            "sample_rate": SAMPLE_RATE,
        },
        "duration_ms": segments[-1]["end_ms"] if segments else 0,
        "segments": segments,
    }


# --------------------------------------------------------------------------- main


def build_track(lecture: Lecture, src_dir: Path, version: str, audio_dir: Path | None) -> dict:
    """Synthesize one lecture and return its JSON record (optionally keeping the WAV)."""
    text = (src_dir / lecture.source_file).read_text(encoding="utf-8")
    sentences = sentences_of(text)
    with tempfile.TemporaryDirectory(prefix=f"{lecture.track_id}-") as tmp:
        work = Path(tmp)
        frames = synthesize_all([s.text for s in sentences], work, desc=lecture.track_id)
        if audio_dir is not None:
            parts = [work / f"{i:05d}.wav" for i in range(len(sentences))]
            total = concatenate(parts, audio_dir / f"{lecture.track_id}.wav")
            if total != sum(frames):
                raise RuntimeError(
                    f"{lecture.track_id}: concatenated length {total} != {sum(frames)}"
                )
    return track_record(lecture, version, build_segments(sentences, frames))


def write_json(record: dict, out_dir: Path) -> Path:
    """Write ``<track_id>.json`` into ``out_dir`` (stable formatting, trailing newline)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{record['track_id']}.json"
    path.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def build_all(
    src: Path = DEFAULT_SRC, out: Path = DEFAULT_OUT, audio_dir: Path | None = None
) -> Iterator[tuple[Path, dict]]:
    """Build every lecture's track and write its JSON into `out`; yields (path, record) as each
    is written (`citegate tts-tracks` prints one line per track). Refused without espeak-ng."""
    if shutil.which(ENGINE) is None:
        raise ConfigError(f"{ENGINE} not found; install it with: apt-get install -y espeak-ng")
    version = espeak_version()
    for lecture in LECTURES:
        record = build_track(lecture, src, version, audio_dir)
        yield write_json(record, out), record
