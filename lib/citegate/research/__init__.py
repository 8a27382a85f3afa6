"""What the experiments share on top of the pipeline: the cached retrieval pass over a question set
(`traces`), its vectorised replay (`vector_pack` packs a question set's traces into arrays once,
`vector_replay` replays a config over all of them, note for note what `pipeline.retrieve.replay`
gives), loading sampled question sets, traces and resolved gold for a study (`study`), the
chat models and probe search the model-calling studies use (`models`, `probe`), the
learning-to-rank training data and training run (`ltr_training`), the reranker comparison
(`rerank_eval`) and the benchmarks (`bench`). Layer rule: may import every layer from
`citegate.pipeline` down; never studies, tracking or the CLI.
"""
