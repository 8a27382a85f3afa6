"""The production path of one question: the query plan (`plan`), the SQL retrieval lanes (`lanes`),
the pure cut (`cut`), the coverage gate (`gate`), the comparison arms (`arms`), retrieval itself
(`retrieve`), follow-up rewriting (`rewrite`), the outline planner, corpus fallback and whole turn
(`fallback`), the citation checks and composer (`citations`, `compose`) and how results are shown
(`render`). Layer rule: may import `citegate.core`, `evaluation`, `corpus`, `models` and `store`; it
never imports research, studies, tracking or the CLI, and takes typed arguments, never an
`argparse.Namespace`.
"""
