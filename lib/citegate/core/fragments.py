"""The searchable unit: a fragment of a transcript or of library text, with its address."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

KINDS = ("track_transcript", "verse", "commentary", "prose_chapter", "letter")
LIBRARY_KINDS = ("verse", "commentary", "prose_chapter", "letter")


@dataclass(frozen=True)
class Fragment:
    """One fragment as read from a source, before it is embedded and stored."""

    key: str
    corpus: str
    kind: str
    source_id: str
    text: str
    lang: str
    track_id: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    book: str | None = None
    loc_token: str | None = None
    addr_label: str | None = None
    tokens: str = ""

    @property
    def content_hash(self) -> str:
        """sha256 over everything stored except the embedding; a change means re-embed."""
        parts = (
            self.kind,
            self.source_id,
            self.text,
            self.lang,
            self.track_id,
            self.start_ms,
            self.end_ms,
            self.book,
            self.loc_token,
            self.addr_label,
            self.tokens,
        )
        return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()

    def problems(self) -> list[str]:
        """What makes this fragment invalid (empty when it is valid); mirrors the DB constraints."""
        out: list[str] = []
        if self.kind not in KINDS:
            out.append(f"unknown kind {self.kind!r}")
        if not isinstance(self.text, str) or not self.text.strip():
            out.append("empty text")
        elif "\x00" in self.text:
            out.append("NUL byte in text")
        out.extend(self._span_problems())
        if self.kind in LIBRARY_KINDS and not self.addr_label:
            out.append("library fragment without an address")
        return out

    def _span_problems(self) -> list[str]:
        span = (self.track_id, self.start_ms, self.end_ms)
        if self.kind != "track_transcript":
            return [] if span == (None, None, None) else ["span on a non-transcript fragment"]
        if any(v is None for v in span):
            return ["transcript without its (track_id, start_ms, end_ms) span"]
        if not isinstance(self.start_ms, int) or not isinstance(self.end_ms, int):
            return ["span times are not integers"]
        if self.start_ms < 0 or self.end_ms <= self.start_ms:
            return [f"bad span {self.start_ms}..{self.end_ms} ms"]
        return []
