"""Row look-ups in result tables (`research.tables`): floats match within `np.isclose`."""

from __future__ import annotations

import pandas as pd

from citegate.research.tables import first_row, rows_where


def test_rows_match_every_condition_and_floats_match_closely() -> None:
    table = pd.DataFrame(
        {"corpus": ["A", "A", "B"], "alpha": [0.1, 0.05, 0.1], "trained on": ["A", "B", "A"]}
    )
    assert list(rows_where(table, corpus="A", alpha=0.30000000000000004 / 3).index) == [0]
    assert list(rows_where(table, **{"trained on": "A"}).index) == [0, 2]
    assert first_row(table, corpus="B") == {"corpus": "B", "alpha": 0.1, "trained on": "A"}
    assert first_row(table, corpus="C") is None
