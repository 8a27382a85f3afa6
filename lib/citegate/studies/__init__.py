"""One study package per notebook, named after it, each keeping the numbers its notebook reports:

- `prefloor_recall`: notebook 01, recall before and after the cosine pre-floor, where gold is
  lost, the comparison arms; its `followup` subpackage is the rewrite arm (elliptical follow-ups);
- `rerank_calibration`: notebook 02, whether the rerank score or the cosine carries one threshold;
- `gate_roc`: notebook 03, the coverage gate's ROC and recommended thresholds per corpus;
- `fallback_disclaimer`: notebook 04, the fallback model's disclaimer, scope judgement and
  probes; its `citation` subpackage checks whether cited claims are supported (with the related
  design's tagged writer and its checks, kept as a comparison);
- `gate_signals`: notebook 05, gate signals, the learned gate and its certified bounds;
- `answer_faithfulness`: notebook 06, the claim check's threshold, the composers, the blind judge;
- `curated_memory`: notebook 07, the memory pre-check, the lean path and the boost;
- `end_to_end`: notebook 08, the whole turn and the certified floor of the pointers.

A package keeps `compute` (pure functions, unit-tested on small golden inputs), its figures
(`plots`, matplotlib imported inside each function) and its conclusion prose (`report`) side by
side; the studies that call models or the database themselves keep that in `run`, and
`artifacts` writes the recommendation files `citegate promote` reads. What several studies share
lives in `citegate.research` (`study` loads and records studies, `models` and `probe` serve the
model-calling ones). Each package's `__init__` is its notebook's one facade: it re-exports the
names the notebook uses (`from citegate.studies import gate_roc as gs; gs.conclusion(...)`).
Layer rule: may import every layer from `citegate.research` down; a study never imports
promotion, the runner or the CLI (`citegate.tracking` reads what a study writes, not the other
way round).
"""
