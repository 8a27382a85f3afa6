"""Promoting a tuned config to production: gated, versioned, reversible.

The production file (`experiments/production.yaml`, `production_file`) holds the full
`PipelineConfig`, its provenance and the metrics it was accepted on. `citegate promote RUN_ID`
reads the config a run recommends, diffs it against production, evaluates both on the TEST split
with the same cached traces (`evaluate`), and writes the file only if the candidate loses on no
guard metric beyond its tolerance (`guards`; `--force` with a reason overrides, and says so) and
its certificate holds for every kind (`evaluate`). Every promotion is an MLflow run, and the file
is registered in the MLflow Model Registry with aliases `production` and `previous` (`registry`);
`--rollback` restores the previous file byte for byte by the same path. The model files a
promotion carries are `models`; the reviewer's report and the terminal summary are `report`.
"""

from __future__ import annotations

from citegate.tracking.promote.decision import PromotionDecision, decide
from citegate.tracking.promote.evaluate import CertificateCheck, certificate_checks, evaluate
from citegate.tracking.promote.guards import EvalRow, Guard, compute_metrics, load_guards
from citegate.tracking.promote.production_file import accepted_on_block, render_production
from citegate.tracking.promote.registry import REGISTERED_NAME, latest_run, promote, rollback
from citegate.tracking.promote.report import as_json, render, summary

__all__ = [
    "REGISTERED_NAME",
    "CertificateCheck",
    "EvalRow",
    "Guard",
    "PromotionDecision",
    "accepted_on_block",
    "as_json",
    "certificate_checks",
    "compute_metrics",
    "decide",
    "evaluate",
    "latest_run",
    "load_guards",
    "promote",
    "render",
    "render_production",
    "rollback",
    "summary",
]
