"""The cut: pure functions from a candidate pool to the notes, and each candidate's fate.

pre-floor (cosine, lexical/address hits exempt) → cap (top n by cosine) → top-k (by rerank rank)
→ reserves (verses and library passages the notes must hold) → dedup (repeated text, overlapping
windows). No database, no model: `retrieve.replay` runs it on a stored trace.

With `verse_notes` the cap, the top-k and the reserves count verse *groups* (every passage of one
verse address is one group, any other candidate a group of its own): a group takes the cap place
of its best cosine and is represented in the rank order by its best-ranked passage, which becomes
the note; the group's other passages are `kept:grouped` when the note is kept (cited through it)
and share the note's fate otherwise. `lane_view` hides the named lane from a config that does not
pin spelled-out verse names, so such a replay sees exactly the lanes it saw before the lane existed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

from citegate.core.config import PipelineConfig
from citegate.core.fragments import LIBRARY_KINDS
from citegate.core.types import NAMED_LANE, Candidate, Stage


def lane_view(pool: Sequence[Candidate], named: bool) -> list[Candidate]:
    """The candidates as a config with `pin_named_verses = named` sees them: without it, the
    named lane's tags are removed, and so are the candidates only that lane found."""
    if named:
        return list(pool)
    out = []
    for c in pool:
        if not any(t.startswith(NAMED_LANE) for t in c.lanes):
            out.append(c)
            continue
        tags = tuple(t for t in c.lanes if not t.startswith(NAMED_LANE))
        if tags:  # only the exact check besides: an ANN miss, as it was without the lane
            missed = all(t.startswith("exact:") for t in tags)
            out.append(replace(c, lanes=tags, ann_missed=missed))
    return out


def verse_group(c: Candidate) -> tuple[str, str]:
    """The note a candidate belongs to under `verse_notes`: its verse address for a verse, its
    own fragment id for anything else."""
    if c.kind == "verse" and c.addr_label:
        return (c.corpus, c.addr_label)
    return (c.corpus, f"#{c.fragment_id}")


def pre_floor(pool: Sequence[Candidate], floor: float) -> tuple[list[Candidate], list[Candidate]]:
    """Split into (kept, dropped) by cosine; lexical and address hits are always kept."""
    kept = [c for c in pool if c.forced or c.score >= floor]
    return kept, [c for c in pool if not (c.forced or c.score >= floor)]


def cap(pool: Sequence[Candidate], n: int) -> tuple[list[Candidate], list[Candidate]]:
    """Keep the top n by cosine (pinned address hits first)."""
    ordered = sorted(pool, key=lambda c: (not c.pinned, -c.score, c.fragment_id))
    return ordered[:n], ordered[n:]


def top_k(pool: Sequence[Candidate], k: int) -> tuple[list[Candidate], list[Candidate]]:
    """Keep the first k by rerank *rank* (no absolute rerank threshold exists on purpose)."""
    ordered = sorted(pool, key=Candidate.rank_key)
    return ordered[:k], ordered[k:]


def _group(kind: str) -> str:
    return "verse" if kind == "verse" else "library" if kind in LIBRARY_KINDS else "other"


def reserves(
    top: Sequence[Candidate],
    rest: Sequence[Candidate],
    cfg: PipelineConfig,
) -> list[Candidate]:
    """Candidates from `rest` (in rank order) admitted so that the final notes hold at least
    `reserve_verses` verses and `reserve_library` library passages, each with cosine ≥ the floor."""
    need = {"verse": cfg.reserve_verses, "library": cfg.reserve_library}
    for c in top:
        if _group(c.kind) in need:
            need[_group(c.kind)] -= 1
    admitted = []
    for c in sorted(rest, key=Candidate.rank_key):
        g = _group(c.kind)
        if need.get(g, 0) > 0 and c.score >= cfg.reserve_floor:
            admitted.append(c)
            need[g] -= 1
    return admitted


def text_signature(text: str) -> str:
    """Digest of the case- and whitespace-normalized text (what dedup compares)."""
    return hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


def _overlap(a: Candidate, b: Candidate) -> float:
    if a.track_id is None or a.track_id != b.track_id:
        return 0.0
    inter = min(a.end_ms, b.end_ms) - max(a.start_ms, b.start_ms)  # type: ignore[operator]
    shorter = min(a.end_ms - a.start_ms, b.end_ms - b.start_ms)  # type: ignore[operator]
    return max(inter, 0) / shorter if shorter > 0 else 0.0


def dedup(
    notes: Sequence[Candidate], min_overlap: float
) -> tuple[list[Candidate], list[Candidate]]:
    """Drop a note whose text repeats an earlier one, or a window overlapping an earlier window of
    the same track by at least `min_overlap` of the shorter one. Earlier = better ranked."""
    kept: list[Candidate] = []
    dropped: list[Candidate] = []
    seen_text: set[str] = set()
    for c in notes:
        norm = c.text_sig or text_signature(c.text)
        if norm in seen_text or any(_overlap(c, k) >= min_overlap for k in kept):
            dropped.append(c)
            continue
        seen_text.add(norm)
        kept.append(c)
    return kept, dropped


def cap_groups(pool: Sequence[Candidate], n: int) -> tuple[list[Candidate], list[Candidate]]:
    """`cap` over verse groups: keep every candidate of the first n groups in cap order (a group
    ranks where its best candidate does: pinned first, then cosine, then id)."""
    ordered = sorted(pool, key=lambda c: (not c.pinned, -c.score, c.fragment_id))
    rank: dict[tuple[str, str], int] = {}
    for c in ordered:
        rank.setdefault(verse_group(c), len(rank))
    kept = [c for c in ordered if rank[verse_group(c)] < n]
    return kept, [c for c in ordered if rank[verse_group(c)] >= n]


def keep_lexical(
    kept: Sequence[Candidate], dropped: Sequence[Candidate], within: int, groups: bool
) -> tuple[list[Candidate], list[Candidate]]:
    """Past the cap, what it dropped that the round-1 lexical lane ranked within `within` (with
    `groups`, every candidate of such a candidate's verse group), in the cap's order."""
    if within <= 0:
        return list(kept), list(dropped)
    lexical = {c.fragment_id for c in dropped if c.lex_rank is not None and c.lex_rank <= within}
    back = {verse_group(c) for c in dropped if c.fragment_id in lexical} if groups else set()
    keep = [c for c in dropped if c.fragment_id in lexical or verse_group(c) in back]
    ids = {c.fragment_id for c in keep}
    return [*kept, *keep], [c for c in dropped if c.fragment_id not in ids]


def representatives(
    pool: Sequence[Candidate],
) -> tuple[list[Candidate], dict[int, list[Candidate]]]:
    """(each verse group's best-ranked candidate, in rank order; the group's other candidates by
    the representative's fragment id)."""
    reps: dict[tuple[str, str], Candidate] = {}
    members: dict[int, list[Candidate]] = {}
    for c in sorted(pool, key=Candidate.rank_key):
        rep = reps.setdefault(verse_group(c), c)
        if rep is not c:
            members.setdefault(rep.fragment_id, []).append(c)
    return list(reps.values()), members


def cut(pool: Sequence[Candidate], cfg: PipelineConfig) -> tuple[list[Candidate], dict[int, Stage]]:
    """Apply the cut in the production order; returns the notes and each candidate's fate."""
    pool = lane_view(pool, cfg.pin_named_verses)
    stage: dict[int, Stage] = {c.fragment_id: Stage.ANN_MISSED for c in pool if c.ann_missed}
    live = [c for c in pool if not c.ann_missed]
    live, dropped = pre_floor(live, cfg.pre_floor)
    stage.update((c.fragment_id, Stage.DROPPED_PRE_FLOOR) for c in dropped)
    live, dropped = (cap_groups if cfg.verse_notes else cap)(live, cfg.cap)
    live, dropped = keep_lexical(live, dropped, cfg.cap_lexical, cfg.verse_notes)
    stage.update((c.fragment_id, Stage.DROPPED_CAP) for c in dropped)
    members: dict[int, list[Candidate]] = {}
    if cfg.verse_notes:
        live, members = representatives(live)
    top, rest = top_k(live, cfg.rerank_top_k)
    extra = reserves(top, rest, cfg)
    stage.update((c.fragment_id, Stage.DROPPED_TOP_K) for c in rest)
    stage.update((c.fragment_id, Stage.KEPT_TOP_K) for c in top)
    stage.update((c.fragment_id, Stage.KEPT_RESERVE) for c in extra)
    notes, dropped = dedup([*top, *extra], cfg.dedup_overlap)
    stage.update((c.fragment_id, Stage.DROPPED_DEDUP) for c in dropped)
    for rep_id, group in members.items():
        fate = Stage.KEPT_GROUPED if stage[rep_id].kept else stage[rep_id]
        stage.update((c.fragment_id, fate) for c in group)
    return notes, stage
