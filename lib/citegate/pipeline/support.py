"""Support scores of claims against notes: how the claim check turns the retrieval embedder into
one number per (claim, note), in the ways the labeled claim set (`corpus.claims`) compares.

A mode is `<claim role><note role>-<unit>`:
- roles: `q` embeds with the e5 `query:` prefix, `p` with `passage:`. `qp` is the retrieval use
  (a claim as a question, a note as a passage); `qq` and `pp` embed both sides alike, the
  symmetric text-to-text use.
- unit: `note` compares the claim with the whole note; `sentence` with each sentence of the note
  and keeps the best (a claim is usually one sentence of a longer note, and a whole-note vector
  dilutes it with the note's other sentences).

Whatever the mode, a call embeds the claims and the notes (or their sentences) in ONE batched
call when both sides take the same role, and in one call per role otherwise.

`DEFAULT_MODE` is `qp-sentence`, measured on the claim set's tune part (1,400 pairs, 656 tune;
AUROC with the bundled multilingual-e5-small): qp-sentence 0.963 (gita 0.941, xquad 0.981),
qq-sentence 0.959, pp-sentence 0.945, qp-note 0.863, qq-note 0.860, pp-note 0.806. Whole notes
lose because cross-lingual and same-language pairs then sit at different cosine levels (xquad
alone 0.873 for qp-note), which one threshold cannot serve; the best sentence puts them on one
scale.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from citegate.corpus.chunking import split_sentences
from citegate.models.embed import Embedder

ROLES = ("qp", "qq", "pp")
UNITS = ("note", "sentence")
MODES = tuple(f"{r}-{u}" for r in ROLES for u in UNITS)
DEFAULT_MODE = "qp-sentence"
_PARAGRAPH = re.compile(r"\n\s*\n")


def parse_mode(mode: str) -> tuple[str, str]:
    """(roles, unit) of a mode such as `qq-sentence`; ValueError naming the known modes."""
    if mode not in MODES:
        raise ValueError(f"unknown support mode {mode!r}: expected one of {', '.join(MODES)}")
    roles, unit = mode.split("-")
    return roles, unit


def note_units(note: str) -> list[str]:
    """A note's sentences: a blank line ends one too (a verse's translation and its IAST text
    are two); the whole note when it has none."""
    paragraphs = (" ".join(p.split()) for p in _PARAGRAPH.split(note))
    found = [s for p in paragraphs for s in split_sentences(p)]
    return found or [note]


def _embed(embedder: Embedder, role: str, texts: list[str]) -> np.ndarray:
    fn = embedder.embed_queries if role == "q" else embedder.embed_passages
    return np.asarray(fn(texts), dtype=np.float32)


def _vectors(
    embedder: Embedder, roles: str, claims: list[str], units: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Claim and unit vectors: one call when both sides share a role, one per role otherwise."""
    if roles[0] == roles[1]:
        both = _embed(embedder, roles[0], claims + units)
        return both[: len(claims)], both[len(claims) :]
    return _embed(embedder, roles[0], claims), _embed(embedder, roles[1], units)


def support_scores(
    embedder: Embedder, claims: Sequence[str], notes: Sequence[str], mode: str = DEFAULT_MODE
) -> np.ndarray:
    """Support scores claims x notes (rows: claims, columns: notes) in `mode` (`MODES`): the
    cosine of the claim with the note, or with the note's best-matching sentence. Zeros when
    either side is empty."""
    roles, unit = parse_mode(mode)
    if not claims or not notes:
        return np.zeros((len(claims), len(notes)), dtype=np.float32)
    pieces = [[n] if unit == "note" else note_units(n) for n in notes]
    units = [u for p in pieces for u in p]
    c, u = _vectors(embedder, roles, list(claims), units)
    sims = c @ u.T
    starts = np.cumsum([0] + [len(p) for p in pieces[:-1]])
    return np.asarray(np.maximum.reduceat(sims, starts, axis=1), dtype=np.float32)
