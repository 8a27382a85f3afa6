"""The measuring sticks of the research suite, one copy of each: retrieval recall, nDCG and MRR,
score calibration and the coverage gate's ROC with bootstrap intervals (`metrics`), and the
deterministic salted-hash sampler every split and sample draws from (`sampling`). Layer rule: pure
functions on plain values and NumPy arrays; may import `citegate.core` only, never corpora, models,
the database or the pipeline.
"""
