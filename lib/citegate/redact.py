"""Keep secrets out of MLflow, logs and reports: drop secret-looking keys, mask secret values."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|password|passwd|credential|auth)")
SECRET_ENV = (
    "OPENAI_API_KEY",
    "VOYAGE_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "DATABASE_URL",
)
MASK = "***"
TEXT_SUFFIXES = {".ipynb", ".html", ".csv", ".json", ".yaml", ".yml", ".txt", ".md", ".log"}


def secret_values() -> list[str]:
    """Values that must never be written: secret env vars and any URL password in them."""
    values = []
    for name, value in os.environ.items():
        if value and (name in SECRET_ENV or SECRET_KEY.search(name)):
            values.append(value)
            values += re.findall(r"://[^:/@]+:([^@]+)@", value)
    return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)


def scrub(text: str) -> str:
    """The text with every secret value masked and URL passwords hidden."""
    for value in secret_values():
        text = text.replace(value, MASK)
    return re.sub(r"(://[^:/@\s]+:)([^@\s]+)@", r"\1" + MASK + "@", text)


def safe_mapping(data: Mapping[str, Any]) -> dict[str, str]:
    """Params/tags fit to log: secret-named keys dropped, values stringified and scrubbed."""
    return {k: scrub(str(v)) for k, v in data.items() if not SECRET_KEY.search(k)}


def scrub_tree(folder: Path) -> int:
    """Mask secrets in every text artifact under a folder, in place; returns files changed."""
    changed = 0
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            text = path.read_text(encoding="utf-8", errors="replace")
            clean = scrub(text)
            if clean != text:
                path.write_text(clean, encoding="utf-8")
                changed += 1
    return changed
