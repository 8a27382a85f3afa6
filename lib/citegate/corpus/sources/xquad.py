"""The `xquad` demo corpus: the 240 XQuAD paragraphs in English and in Russian."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.core.fragments import Fragment

CORPUS = "xquad"
LANGS = ("en", "ru")


def load_xquad(lang: str, root: Path | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """The SQuAD-format article list of one language, validated at the top level."""
    path = Path(root or paths.CORPORA / "xquad") / f"xquad.{lang}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, "-", f"not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError(path, "-", "expected {'data': [articles]}")
    return path, data["data"]


def paragraph_key(lang: str, title: str, index: int) -> str:
    """Identity of one paragraph; the same (title, index) is the parallel paragraph in EN and RU."""
    return f"xquad:{lang}:{title}:{index}"


def read_xquad(root: Path | None = None) -> Iterator[Fragment]:
    """One `prose_chapter` fragment per XQuAD paragraph and language."""
    for lang in LANGS:
        path, articles = load_xquad(lang, root)
        for a, art in enumerate(articles, 1):
            title = art.get("title") if isinstance(art, dict) else None
            if not isinstance(title, str) or not isinstance(art.get("paragraphs"), list):
                raise InputError(path, a, "article needs a 'title' and a 'paragraphs' list")
            for p, par in enumerate(art["paragraphs"], 1):
                ctx = par.get("context") if isinstance(par, dict) else None
                if not isinstance(ctx, str):
                    raise InputError(path, f"{title}/{p}", "paragraph 'context' must be a string")
                yield Fragment(
                    key=paragraph_key(lang, title, p),
                    corpus=CORPUS,
                    kind="prose_chapter",
                    source_id=f"xquad-{lang}",
                    text=ctx,
                    lang=lang,
                    book=title.replace("_", " "),
                    loc_token=str(p),
                    addr_label=f"{title.replace('_', ' ')} ¶{p}",
                    tokens=title.replace("_", " "),
                )
