"""One study per notebook (`floor` for 01 and `followup` for its comparison arm, `calibration` for
02, `gate` for 03, `fallback` and `citation` for 04). A study package keeps the numbers a notebook
reports (`compute`: pure functions, unit-tested on small golden inputs), its figures (`plots`,
matplotlib imported inside each function) and its conclusion prose (`report`) side by side. Layer
rule: may import every layer from `citegate.research` down; a study never imports promotion, the
runner or the CLI (`citegate.tracking` reads what a study writes, not the other way round).
"""
