"""What a notebook hands to the runner: metrics, figures, tables, datasets and a conclusion,
written into the run folder. The runner logs them to MLflow and renders the report.

A notebook run interactively (no `RUN_DIR` parameter) records into `var/runs/interactive/<name>`,
so interactive and papermill runs behave the same.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.progress import PROGRESS_FILE, report_to

METRICS_FILE = "metrics.json"
DATASETS_FILE = "datasets.json"
INFO_FILE = "info.json"
CONFIG_FILE = "config.json"


def run_dir_for(run_dir: str | None, name: str) -> Path:
    """The folder a notebook records into (created)."""
    path = Path(run_dir) if run_dir else paths.runs_dir() / "interactive" / name
    (path / "figures").mkdir(parents=True, exist_ok=True)
    (path / "tables").mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Recorder:
    """Collects a notebook's results; every call also writes through to disk, so a notebook that
    raises half-way still leaves what it had for the runner to log."""

    run_dir: Path
    metrics: dict[str, float] = field(default_factory=dict)
    datasets: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, run_dir: str | None, name: str) -> Recorder:
        """A recorder on `run_dir` (or the interactive folder of notebook `name`); the progress bars
        of this process report to its `progress.json` from now on (the runner's display reads it)."""
        folder = run_dir_for(run_dir, name)
        report_to(folder / PROGRESS_FILE)
        return cls(folder)

    def metric(self, name: str, value: float) -> float:
        """Record one scalar metric (must be finite) and return it."""
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"metric {name} is not finite: {value}")
        self.metrics[name] = value
        self._dump(METRICS_FILE, self.metrics)
        return value

    def figure(self, fig: Any, name: str) -> None:
        """Save a matplotlib figure as PNG (the notebook still shows it inline)."""
        fig.savefig(self.run_dir / "figures" / f"{name}.png", dpi=110, bbox_inches="tight")

    def table(self, frame: Any, name: str) -> None:
        """Save a pandas table as CSV and Parquet (returns nothing, so a notebook shows nothing)."""
        frame.to_csv(self.run_dir / "tables" / f"{name}.csv", index=False)
        frame.to_parquet(self.run_dir / "tables" / f"{name}.parquet", index=False)

    def dataset(
        self,
        name: str,
        digest: str,
        rows: int,
        source: str,
        build_id: str,
        records: list[dict[str, Any]] | None = None,
    ) -> None:
        """Record a question set used by the run: its digest, the number of rows used, its source
        and the corpus build searched. `records` (one dict per question used: id, label, language,
        split...) makes the runner log a real MLflow dataset of those rows; without them it logs
        only a tag, never a made-up frame."""
        if records is not None and len(records) != rows:
            raise ValueError(f"dataset {name}: rows={rows} but {len(records)} records")
        entry: dict[str, Any] = {
            "name": name,
            "digest": digest,
            "rows": rows,
            "source": source,
            "build_id": build_id,
        }
        if records is not None:
            entry["records"] = [dict(r) for r in records]
        self.datasets = [d for d in self.datasets if d["name"] != name] + [entry]
        self._dump(DATASETS_FILE, self.datasets)

    def config(self, cfg: dict[str, Any]) -> None:
        """Record the pipeline config the run actually used (e.g. the corpora it searched); the
        runner logs these as the run's `config.*` params instead of the spec's pipeline block."""
        self._dump(CONFIG_FILE, dict(cfg))

    def note(self, **info: Any) -> None:
        """Record run facts for tags (model ids, corpus build ids, sample sizes)."""
        self.info.update(info)
        self._dump(INFO_FILE, self.info)

    def _dump(self, name: str, obj: Any) -> None:
        (self.run_dir / name).write_text(json.dumps(obj, indent=2, default=str), encoding="utf-8")
