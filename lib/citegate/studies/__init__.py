"""One study per notebook (`floor` for 01 and `followup` for its comparison arm, `calibration` for
02, `gate` for 03, `fallback` and `citation` for 04). A study package keeps the numbers a notebook
reports (`compute`: pure functions, unit-tested on small golden inputs), its figures (`plots`,
matplotlib imported inside each function) and its conclusion prose (`report`) side by side; the
studies that call models or the database themselves keep that in `run` (fallback, followup,
citation), and `gate.artifacts` reads the production config and writes the recommendation files.
Each package's `__init__` re-exports the names its notebook uses (`from citegate.studies import
gate as gs; gs.conclusion(...)`). Layer rule: may import every layer from `citegate.research` down;
a study never imports promotion, the runner or the CLI (`citegate.tracking` reads what a study
writes, not the other way round).
"""
