"""A learning-to-rank reranker: a scikit-learn classifier over (question, candidate) pair features,
trained on the TUNING split only.

`features` computes the pair features, `model` holds the fitted reranker and its file
(`var/models/ltr-<name>.json`), `fit` builds pairs and selects the model by cross-validated
nDCG@10. Collecting the training pools from traces and the database, and the `train` entry point,
live one layer up in `citegate.research.ltr_training`; the command in `citegate.cli.ltr`.
This package may import `citegate.core`, `citegate.evaluation`, `citegate.corpus` and the rest of
`citegate.models`, never the pipeline or anything above it.
"""
