"""Experiment 05's certificate over independent units, beside the per-question one.

The per-question certificate (`certified.certified_points`) counts calibration negatives as
independent questions; questions written about one verse (gita) or one article (xquad) are not.
Here every gate is certified again with the question GROUP as the exchangeable unit
(`certified.certified_points(..., per_group=True)`, which passes `units=` to
`evaluation.certify`): a group counts once, as a false answer when any of its negative
questions is answered. The assumption (`report.ASSUMPTION`): calibration groups are
exchangeable with the groups production meets; questions inside a group may depend on each other
in any way. `levels_table` sets both certificates side by side on the test split (`report.
unit_lines` turns it into sentences; its MLflow metrics: `headline.certified_metrics` with the
suffix `UNIT`).
"""

from __future__ import annotations

import pandas as pd

from citegate.studies.gate_signals.compute.contrasts import ALL, RAW

UNIT = "_unit"  # metric-name suffix of the per-unit certificate


_KEEP = ["threshold", "bound", "n_neg cal", "answer rate", "false-answer rate", "FA high"]


def levels_table(by_question: pd.DataFrame, by_unit: pd.DataFrame) -> pd.DataFrame:
    """Per corpus, gate, α and kind (raw labels, every language): the per-question and the
    per-unit certificate side by side (threshold, bound on tune and n it rests on: questions or
    units; answer rate and realised false-answer rate on test, with the Wilson upper end)."""
    keys = ["corpus", "gate", "alpha", "delta", "negatives"]

    def part(t: pd.DataFrame, level: str) -> pd.DataFrame:
        """One certificate's rows (raw labels, every language), columns named by level."""
        sub = t[(t["labels"] == RAW) & (t["language"] == ALL)]
        return sub[keys + _KEEP].rename(columns={c: f"{c} ({level})" for c in _KEEP})

    if by_question.empty or by_unit.empty:
        return pd.DataFrame()
    return part(by_question, "question").merge(part(by_unit, "unit"), on=keys, how="inner")


__all__ = ["UNIT", "levels_table"]
