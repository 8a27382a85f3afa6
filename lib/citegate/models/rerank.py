"""Rerankers behind one protocol, each wrapped in a disk cache keyed by
(reranker id, question hash, passage hash).

- `none`: cosine order (the rerank score is the cosine itself);
- `voyage/rerank-2`: Voyage's cross-encoder through the `voyageai` SDK (production; needs
  `VOYAGE_API_KEY`);
- `ltr/...`: a learning-to-rank scorer (see `citegate.models.ltr`), trained on the tuning split only;
- `llm/...`: a pointwise LLM relevance scorer (see `citegate.models.llm_rerank`).

`make_reranker` builds any of them from the id a config names. The protocols (`Scorable`,
`Reranker`) live in `citegate.models.protocols` (re-exported here) so that the scorers this
factory imports never import this module back.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.models.cache import DiskCache, digest
from citegate.models.llm_rerank import LLMRelevanceScorer
from citegate.models.ltr.model import load_ltr
from citegate.models.protocols import Reranker, Scorable
from citegate.models.remote import auth_failed

__all__ = [
    "CachedReranker",
    "CosineReranker",
    "Reranker",
    "Scorable",
    "VoyageReranker",
    "make_reranker",
]


class CosineReranker:
    """The `none` reranker: keeps cosine order; its rerank score is the cosine."""

    id = "none"

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        """Cosine of each candidate."""
        return [float(c.score) for c in cands]


class VoyageReranker:
    """Voyage `rerank-2` through the official SDK (relevance scores in [0, 1])."""

    def __init__(
        self, model: str = "rerank-2", api_key: str | None = None, base_url: str | None = None
    ) -> None:
        import voyageai

        self.model = model
        self.id = f"voyage/{model}"
        self.base_url = base_url  # None: the SDK's own, which depends on the key
        self.client = voyageai.Client(
            api_key=api_key or os.environ.get("VOYAGE_API_KEY"),
            max_retries=4,
            timeout=60,
            base_url=self.base_url,
        )

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        """One API call per 100 passages; results mapped back by index."""
        out = [0.0] * len(cands)
        for start in range(0, len(cands), 100):
            docs = [c.text for c in cands[start : start + 100]]
            res = self._rerank(question, docs)
            for r in res.results:
                out[start + r.index] = float(r.relevance_score)
        return out

    def _rerank(self, question: str, docs: list[str]) -> Any:
        """One rerank request; a refused key is `AuthFailed` (one line, no reply body)."""
        from voyageai.error import AuthenticationError

        try:
            return self.client.rerank(question, docs, model=self.model, truncation=True)
        except AuthenticationError:
            key = self.client.api_key
            raise auth_failed("voyage", "VOYAGE_API_KEY", self.base_url, key) from None


class CachedReranker:
    """Disk cache around a reranker: each (reranker, question, passage) pair is scored once."""

    def __init__(self, inner: Reranker, cache_path: Path | None = None) -> None:
        self.inner = inner
        self.id = inner.id
        self.cache = DiskCache(cache_path or paths.cache_dir() / "rerank.sqlite")
        self.scored = 0

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        """Cached scores; only unseen pairs reach the inner reranker."""
        qh = digest(question)
        feats = getattr(
            self.inner, "uses_features", False
        )  # feature scorers also read cosine/lanes
        keys = [
            digest(
                self.id,
                qh,
                digest(c.text),
                f"{c.score:.6f}|{','.join(sorted(c.lanes))}" if feats else "",
            )
            for c in cands
        ]
        found = self.cache.get_many(keys)
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            new = self.inner.score(question, [cands[i] for i in todo])
            items = [(keys[i], struct.pack("<d", s)) for i, s in zip(todo, new, strict=True)]
            self.cache.put_many(items)
            found.update(items)
            self.scored += len(todo)
        return [struct.unpack("<d", found[k])[0] for k in keys]


def make_reranker(name: str) -> Reranker:
    """The reranker a config names: `none`, `voyage/rerank-2`, or `ltr/<model file stem>`."""
    if name == "none":
        return CosineReranker()
    if name.startswith("voyage/"):
        if not os.environ.get("VOYAGE_API_KEY"):
            raise ConfigError(f"reranker {name!r} needs VOYAGE_API_KEY")
        return CachedReranker(VoyageReranker(name.split("/", 1)[1]))
    if name.startswith("llm/"):
        scorer = LLMRelevanceScorer(n_threads=1)  # 1 thread: llama.cpp spin-waits on 2 shared cores
        if scorer.id != name:
            raise ConfigError(f"unknown LLM reranker {name!r} (have {scorer.id!r})")
        return CachedReranker(scorer)
    if name.startswith("ltr/"):
        # Not disk-cached: its features depend on the whole candidate pool (rank in pool, gap to
        # the best cosine), so per-pair caching would mix pools; it scores ~40k pairs/s anyway.
        return load_ltr(name)
    raise ConfigError(
        f"unknown reranker {name!r} (none, voyage/rerank-2, ltr/<name>, llm/smollm2-135m-yes-prob)"
    )
