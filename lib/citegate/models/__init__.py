"""Local and remote models behind small protocols, each with a disk cache: the reranking protocols
(`protocols`), the embedders (`embed`), the chat clients and the bundled llama.cpp server (`llm`),
the rerankers and the factory that builds one from the id a config names (`rerank`), the pointwise
LLM relevance scorer (`llm_rerank`), the learning-to-rank reranker's features, fitted model and
model selection (`ltr/`), and the hash-keyed SQLite cache they share (`cache`). Layer rule: may
import `citegate.core`, `citegate.evaluation` and `citegate.corpus`; never the store, the pipeline
or anything above (collecting LTR training data from traces lives in `citegate.research`).
"""
