"""Looking rows up in a study's result tables by column values: one helper for every notebook's
"the row of this corpus, gate and α" instead of a mask written out each time.

Pure pandas; float values match within `np.isclose` (an α read back from a table need not be the
literal it was written as), every other value exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def rows_where(table: pd.DataFrame, **conds: Any) -> pd.DataFrame:
    """Rows of `table` whose columns equal the given values (keys with spaces: use a dict)."""
    mask = np.ones(len(table), dtype=bool)
    for k, v in conds.items():
        col = table[k]
        mask &= np.isclose(col, v) if isinstance(v, float) else (col == v).to_numpy()
    return table[mask]


def first_row(table: pd.DataFrame, **conds: Any) -> dict[str, Any] | None:
    """The first row `rows_where` finds, as a dict (None when none matches)."""
    rows = rows_where(table, **conds)
    return rows.iloc[0].to_dict() if len(rows) else None
