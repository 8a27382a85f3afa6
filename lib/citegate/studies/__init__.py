"""One study package per notebook question, each keeping the numbers its notebook reports:

- `floor`: notebook 01, recall before and after the cosine pre-floor, where gold is lost;
- `followup`: notebook 01's comparison arm, rewriting elliptical follow-up questions;
- `calibration`: notebook 02, whether the rerank score or the cosine carries one threshold;
- `gate`: notebook 03, the coverage gate's ROC and recommended thresholds per corpus;
- `fallback`: notebook 04, the fallback model's disclaimer, scope judgement and probes;
- `citation`: notebook 04's second part, whether cited claims are supported;
- `signals`: notebook 05, gate signals, the learned gate and its certified bounds.

A package keeps `compute` (pure functions, unit-tested on small golden inputs), its figures
(`plots`, matplotlib imported inside each function) and its conclusion prose (`report`) side by
side; the studies that call models or the database themselves keep that in `run` (fallback,
followup, citation, signals), and `artifacts` writes the recommendation files (gate, signals).
What several studies share lives in `citegate.research` (`study` loads and records studies,
`models` and `probe` serve the model-calling ones). Each package's `__init__` re-exports the names
its notebook uses (`from citegate.studies import gate as gs; gs.conclusion(...)`). Layer rule: may
import every layer from `citegate.research` down; a study never imports promotion, the runner or
the CLI (`citegate.tracking` reads what a study writes, not the other way round).
"""
