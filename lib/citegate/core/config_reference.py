"""The configuration reference page, rendered from `PipelineConfig`'s field declarations.

`render()` is pure: every field, grouped by what its value feeds (`config_fields.Group`), with its
default (the design number, `DESIGN`), the values it allows and its doc. The page
docs/pages/engineers/configuration.md is this text; tests/unit/test_config_reference.py fails
when the two differ and says how to write it again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from citegate.core.config import PipelineConfig
from citegate.core.config_fields import (
    COLLECTED,
    COLLECTED_WHEN_SET,
    GROUP_DOCS,
    Knob,
    default_of,
    in_groups,
    knob_of,
)

PAGE = "docs/pages/engineers/configuration.md"  # relative to the repository root

_INTRO = """\
# Configuration reference

<!-- Generated from the field declarations in lib/citegate/core/config.py by
citegate.core.config_reference.render(); edit those, then write this page again:
CITEGATE_REGENERATE=1 .venv/bin/pytest tests/unit/test_config_reference.py -->

Every field of `PipelineConfig`, the one typed object that holds the pipeline's thresholds and
knobs, grouped by what its value feeds. The default is the design number (`DESIGN`), the value the
pipeline was designed with; production's values are in `experiments/production.yaml`, which only
`citegate promote` writes. A config file (YAML, optionally under a `pipeline:` key) names the
fields it changes; an unknown key, a value of the wrong type or outside what its field allows is
refused when the config loads, naming the key. So are values that contradict each other: a
`bail_out_score` above `sufficient_score` (globally or for one language), the `two_scale` gate off
the `rrf_hybrid` arm, a learned gate without its model file and digest or off the production arm,
and an LTR reranker file without its digest or its `ltr/` reranker.

A field marked *collected* decides which candidates a retrieval collects: cached traces are keyed
on it, so a replay under another value is refused; every other field is replayed from the trace.
"""


def _value(value: Any) -> str:
    """A default as it reads in YAML's flow style (JSON is a subset): `0.18`, `false`, `""`."""
    plain = list(value) if isinstance(value, tuple) else value
    return f"`{json.dumps(plain, ensure_ascii=False)}`"


def _allowed(k: Knob, default: Any) -> str:
    """What a field allows, in words: its declaration's, else its type's."""
    if k.allowed is not None:
        return k.allowed.describe()
    if isinstance(default, bool):
        return "`true`, `false`"
    return "text"


def _doc(k: Knob, names: Sequence[str]) -> str:
    """The field's doc with each field name that holds an underscore set as code outside the
    doc's own code spans (a one-word name is set so in the doc itself: "the gate" is prose), and
    whether the field decides what a retrieval collects."""
    named = re.compile(rf"\b({'|'.join(n for n in names if '_' in n)})\b")
    parts = k.doc.split("`")
    doc = "`".join(named.sub(r"`\1`", p) if i % 2 == 0 else p for i, p in enumerate(parts))
    if k.collects == COLLECTED:
        return f"{doc} *Collected.*"
    if k.collects == COLLECTED_WHEN_SET:
        return f"{doc} *Collected* when set."
    return doc


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    """The reference page: the introduction, then one section per group, a table row per field
    (name, default, allowed values, doc), fields in declaration order."""
    parts, names = [_INTRO], [f.name for f in fields(PipelineConfig)]
    for group, group_fields in in_groups(fields(PipelineConfig)).items():
        parts.append(f"\n## {group.capitalize()}\n\n{GROUP_DOCS[group]}\n")
        parts.append("\n| field | default | allowed | what it does |\n|---|---|---|---|\n")
        for f in group_fields:
            k, default = knob_of(f), default_of(f)
            row = (f"`{f.name}`", _value(default), _allowed(k, default), _doc(k, names))
            parts.append("| " + " | ".join(_cell(c) for c in row) + " |\n")
    return "".join(parts)


__all__ = ["PAGE", "render"]
