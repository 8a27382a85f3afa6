"""The configuration reference page is the text `core.config_reference.render` makes from the
field declarations, lists every field once with its default and what it allows, and every field is
declared with a group, a doc and (for a number or a choice) the values it allows.

CITEGATE_REGENERATE=1 writes the page from the declarations instead of failing."""

from __future__ import annotations

import os
import re
from dataclasses import fields

from citegate.core import paths
from citegate.core.config import DESIGN, PipelineConfig
from citegate.core.config_fields import GROUP_DOCS, Between, Count, OneOf, knob_of
from citegate.core.config_reference import PAGE, render

REGENERATE = "CITEGATE_REGENERATE=1 .venv/bin/pytest tests/unit/test_config_reference.py"


def test_the_committed_page_is_the_rendered_reference() -> None:
    page, text = paths.ROOT / PAGE, render()
    if os.environ.get("CITEGATE_REGENERATE") == "1":
        page.write_text(text, encoding="utf-8")
    committed = page.read_text(encoding="utf-8") if page.is_file() else ""
    assert committed == text, f"{PAGE} is not the rendered reference; write it again: {REGENERATE}"


def test_the_page_lists_every_field_once_with_its_design_default() -> None:
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", render(), flags=re.M)
    names = [name for name, _ in rows]
    assert sorted(names) == sorted(f.name for f in fields(PipelineConfig))
    assert len(names) == len(set(names))
    shown = dict(rows)
    assert shown["pre_floor"] == "0.18" and shown["corpora"] == '["gita"]'
    assert shown["memory"] == "false" and shown["gate"] == '"coverage"'
    assert float(shown["sufficient_score"]) == DESIGN.sufficient_score


def test_every_field_is_declared_with_a_group_a_doc_and_its_allowed_values() -> None:
    for f in fields(PipelineConfig):
        k = knob_of(f)
        assert k.group in GROUP_DOCS and k.doc.strip().endswith((".", ")")), f.name
        if type(f.default) in (int, float) and not isinstance(f.default, bool):
            assert isinstance(k.allowed, Between | Count | OneOf), f"{f.name} declares no range"
