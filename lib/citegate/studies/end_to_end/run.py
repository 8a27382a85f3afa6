"""Notebook 08's measurements: every sampled test question through the live turn
(`Service.answer`, the code `citegate ask --answer` runs), and the tune questions' final notes
for the pointer floor (`Service.retrieve`).

Each set searches its own corpus build (gita-split, xquad-split; out-of-scope against gita-split)
with the config named (production by default). A turn that raises is an `error` row with its
message, never dropped: `compute.check_errors` fails the run beyond its share.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from citegate.core.config import EXTRACT_POLICIES, PipelineConfig
from citegate.core.progress import bar
from citegate.corpus.questions import Question, load_set, resolve_gold
from citegate.models.embed import Embedder
from citegate.pipeline.render import where
from citegate.pipeline.service import Service, choose_config
from citegate.pipeline.turn import Turn, grounded_answer
from citegate.research.study import sample
from citegate.studies.end_to_end.compute import NoteRow, TurnRow, outcome


def questions(set_name: str, limits: Mapping[str, int], split: str = "test") -> list[Question]:
    """The set's questions of `split`, up to `limits[label]` per label (0: every one), drawn by
    the suite's salted sample; labels absent from `limits` are left out."""
    qs = [q for q in load_set(set_name).questions if q.split == split]
    out: list[Question] = []
    for label, limit in limits.items():
        out += sample([q for q in qs if q.label == label], limit)
    return out


def _gold_ids(svc: Service, set_name: str, qs: Sequence[Question]) -> dict[str, set[int]]:
    """Question id -> its gold fragment ids in the build searched (empty for negatives)."""
    qset = load_set(set_name)
    if qset.corpus == "*":
        return {}
    sub = type(qset)(qset.name, qset.corpus, tuple(qs))
    with svc.connection() as conn:
        gold = resolve_gold(conn, sub, svc.embedder.id)
    return {k: set(v) for k, v in gold.items()}


def _cited(turn: Turn) -> list[Any]:
    """The notes the kept claims of a grounded answer cite (offered numbers only)."""
    if turn.check is None:
        return []
    notes = {str(n): c for n, c in enumerate(turn.notes, 1)}
    keys = dict.fromkeys(k for v in turn.check.kept for k in v.cited if k in notes)
    return [notes[k] for k in keys]


def _policy_outcomes(svc: Service, turn: Turn, gold: set[int]) -> str:
    """The outcome had each extractive policy composed the same grounded turn (the same notes),
    as "policy=outcome;..." ("" when the turn was not grounded or not extractive)."""
    cfg = svc.choice.config
    if turn.branch != "grounded" or cfg.composer != "extractive":
        return ""
    notes = {str(n): c for n, c in enumerate(turn.notes, 1)}
    out = []
    for policy in EXTRACT_POLICIES:
        alt = cfg.replace(extract_policy=policy)
        g, _ = grounded_answer(turn.question, turn.lang, turn.notes, alt, svc.embedder, svc.roles)
        if g.why or g.check is None:
            out.append(f"{policy}=declined")
            continue
        cited = {k for v in g.check.kept for k in v.cited if k in notes}
        flags = [notes[k].fragment_id in gold for k in cited]
        out.append(f"{policy}={outcome('grounded', flags, False)}")
    return ";".join(out)


def turn_row(
    svc: Service, set_name: str, q: Question, gold: set[int], fallback: bool | None
) -> TurnRow:
    """One question through `svc.answer`, read into a row (an exception is an `error` row)."""
    clock = time.perf_counter()
    try:
        turn = svc.answer(q.text, fallback=fallback)
    except Exception as exc:  # counted as an error row: the run fails beyond its share
        ms = (time.perf_counter() - clock) * 1000
        return _error_row(set_name, q, f"{type(exc).__name__}: {exc}", ms)
    ms = (time.perf_counter() - clock) * 1000
    cited = _cited(turn) if turn.branch == "grounded" else []
    flags = [c.fragment_id in gold for c in cited]
    assert turn.retrieval is not None
    return TurnRow(
        q.id, set_name, svc.choice.config.corpora[0], q.split, q.language, q.label, q.group,
        q.mentions_address, str(turn.branch), str(turn.retrieval.decision),
        outcome(str(turn.branch), flags, False), "; ".join(where(c) for c in cited),
        "; ".join(q.gold), any(c.fragment_id in gold for c in turn.notes),
        any(c.fragment_id in gold for c in turn.pointers), len(turn.pointers),
        _policy_outcomes(svc, turn, gold), ms, turn.model_error,
    )  # fmt: skip


def _error_row(set_name: str, q: Question, error: str, ms: float) -> TurnRow:
    return TurnRow(
        q.id, set_name, "", q.split, q.language, q.label, q.group, q.mentions_address,
        "error", "", "error", "", "; ".join(q.gold), False, False, 0, "", ms, error,
    )  # fmt: skip


def turn_rows(
    sets: Mapping[str, str],
    limits: Mapping[str, Mapping[str, int]],
    config: str,
    overrides: Mapping[str, Any],
    embedder: Embedder,
    *,
    fallback: bool | None = None,
    progress: bool = True,
) -> list[TurnRow]:
    """Every sampled test question of each set (`set -> corpus build searched`; `limits[set]`:
    label -> how many) through the live turn of `config` with `overrides`."""
    rows: list[TurnRow] = []
    for set_name, build in sets.items():
        qs = questions(set_name, limits.get(set_name, {}))
        with Service.open(config, corpora=[build], embedder=embedder) as svc:
            svc.choice = svc.choice.with_config(svc.choice.config.replace(**overrides))
            gold = _gold_ids(svc, set_name, qs)
            for q in bar(qs, desc=f"turns {set_name}", unit="q", disable=not progress):
                rows.append(turn_row(svc, set_name, q, gold.get(q.id, set()), fallback))
    return rows


def note_rows(
    sets: Mapping[str, str],
    limits: Mapping[str, Mapping[str, int]],
    config: str,
    overrides: Mapping[str, Any],
    embedder: Embedder,
    *,
    splits: Sequence[str] = ("tune", "test"),
    progress: bool = True,
) -> list[NoteRow]:
    """The final notes of every sampled question the gate finds insufficient (where an "I don't
    know" shows pointers), labeled gold or not, per split: the pointer floor's data."""
    rows: list[NoteRow] = []
    for set_name, build in sets.items():
        for split in splits:
            qs = questions(set_name, limits.get(set_name, {}), split)
            rows += _insufficient_notes(set_name, build, qs, config, overrides, embedder, progress)
    return rows


def _insufficient_notes(
    set_name: str,
    build: str,
    qs: Sequence[Question],
    config: str,
    overrides: Mapping[str, Any],
    embedder: Embedder,
    progress: bool,
) -> list[NoteRow]:
    rows: list[NoteRow] = []
    with Service.open(config, corpora=[build], embedder=embedder) as svc:
        svc.choice = svc.choice.with_config(svc.choice.config.replace(**overrides))
        gold = _gold_ids(svc, set_name, qs)
        for q in bar(
            qs, desc=f"notes {set_name} {qs[0].split if qs else ''}", unit="q", disable=not progress
        ):
            res = svc.retrieve(q.text)
            if str(res.decision) != "insufficient":
                continue
            ids = gold.get(q.id, set())
            rows += [
                NoteRow(q.id, q.split, q.label, q.language, q.group, r, where(c), float(c.score), c.fragment_id in ids)
                for r, c in enumerate(res.notes, 1)
            ]  # fmt: skip
    return rows


def config_of(config: str, overrides: Mapping[str, Any]) -> PipelineConfig:
    """The config the turns ran (for the run's record)."""
    return choose_config(config).config.replace(**overrides)


__all__ = ["config_of", "note_rows", "questions", "turn_row", "turn_rows"]
