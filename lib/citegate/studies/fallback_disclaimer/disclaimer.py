"""Notebook 04's reading of a fallback answer's disclaimer: is it there verbatim, or in a
normalized form (case, punctuation and spacing ignored, or every key content word present)?

A live turn never asks: the server paints the disclaimer whatever the model wrote
(`pipeline.fallback.paint`). The study asks it of the model's own text, to measure how often a
model keeps the mandated disclaimer, and of the painted text, to show the painted one is always
there.
"""

from __future__ import annotations

from citegate.pipeline.fallback import disclaimer_for, fixed_strings_language, normalize

# Content words (prefixes, so Russian and Hindi inflection pass) that a paraphrase must keep.
DISCLAIMER_KEYS = {
    "en": ("not", "trusted", "source", "general", "knowledge"),
    "ru": ("не", "проверен", "источник", "общ", "знани"),
    "hi": ("नहीं", "विश्वसनीय", "स्रोत", "सामान्य", "ज्ञान"),
}


def disclaimer_present(model_text: str, lang: str) -> tuple[bool, bool]:
    """(exact, normalized): the disclaimer verbatim in the text; or, after `normalize`, as a
    substring, or every key content word of it present (as a word prefix)."""
    want = disclaimer_for(lang)
    exact = want in (model_text or "")
    norm_text = normalize(model_text)
    words = norm_text.split()
    keys = DISCLAIMER_KEYS[fixed_strings_language(lang)]
    keyed = all(any(w.startswith(k) for w in words) for k in keys)
    return exact, exact or normalize(want) in norm_text or keyed
