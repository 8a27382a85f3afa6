"""The production path of one question, and nothing else: every module here runs when
`citegate.pipeline.service` (`Service`) answers, retrieves or streams a question, or when
`citegate ask` / `citegate chat` do (`tests/unit/test_pipeline_scope.py` checks it).

Retrieval: the query plan (`plan`), the SQL retrieval lanes (`lanes`, all of a retrieve in one
statement: `lane_batch`), the pure cut (`cut`), the coverage gate (`gate`), Reciprocal Rank
Fusion and the two-scale gate score (`fusion`), the gate signals and the learned gate's decision
(`signals`, `decide`), curated memory (`memory`) and retrieval itself (`retrieve`, with `replay`).
The turn: follow-up rewriting (`rewrite`) over a conversation (`conversation`), the outline
planner (`outline`), the composers (`extractive`, `compose`), the claim check (`citations` reads
the claims, `support` scores them, `claimcheck` judges them), the corpus fallback (`fallback`),
the pointers of an "I don't know" (`pointers`), model-written text checked before it is searched
(`model_output`), the model of each role (`roles`) and what their calls share (`llm_calls`), the
whole turn (`turn`), the facade (`service`) and how results are shown (`render`). What studies
and benchmarks alone run lives above: the vectorised replay in `citegate.research`, the
comparisons a notebook measures in its study package. Layer rule: may import `citegate.core`,
`evaluation`, `corpus`, `models` and `store`; it never imports research, studies, tracking or
the CLI, and takes typed arguments, never an `argparse.Namespace`.
"""
