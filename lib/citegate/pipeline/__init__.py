"""The production path of one question: the query plan (`plan`), the SQL retrieval lanes (`lanes`),
the pure cut (`cut`), the coverage gate (`gate`), the comparison arms (`arms`), retrieval itself
(`retrieve`) and its vectorised replay (`vector_pack`, `vector_replay`), follow-up rewriting
(`rewrite`), the outline planner (`outline`), the corpus fallback (`fallback`), the whole turn
(`turn`) and what their model calls share (`llm_calls`), the citation checks and composer
(`citations`, `compose`) and how results are shown (`render`). Layer rule: may import
`citegate.core`, `evaluation`, `corpus`, `models` and `store`; it never imports research, studies,
tracking or the CLI, and takes typed arguments, never an `argparse.Namespace`.
"""
