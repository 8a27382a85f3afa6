"""One chat client per model role, made when a role first needs it.

A turn has five model roles (`ROLES`): the query planner, the follow-up rewrite (a conversation's
later turns), the outline planner, the composer and the corpus fallback. Each names its model in
the config (`PipelineConfig.planner_model`, `rewrite_model`, `outline_model`, `composer_model`,
`fallback_model`; empty means `llm`), so the ladder of the
design holds: cheap roles first, the strong model only on a coverage miss. With keys set a role
gets the remote model it names (`ChatClient.from_env`); without them every role shares the
bundled local model on one llama.cpp server, started only when a role first asks for a client:
a turn the extractive composer answers starts no model at all.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from types import TracebackType

from citegate.core.config import PipelineConfig
from citegate.models.llm import ChatClient, LLMUsage
from citegate.models.llm_server import LOCAL_MODEL_ID, LocalLlamaServer

ROLES = ("planner", "rewrite", "outline", "composer", "fallback")


def role_model(cfg: PipelineConfig, role: str, override: str | None = None) -> str | None:
    """The model a role names: `override` (a per-call choice) first, then the role's own field,
    then `llm`; None for "none" (the provider's default, or the local model without keys)."""
    fields = {
        "planner": cfg.planner_model,
        "outline": cfg.outline_model,
        "composer": cfg.composer_model,
        "fallback": cfg.fallback_model,
        "rewrite": cfg.rewrite_model,
    }
    if role not in fields:
        raise ValueError(f"unknown model role {role!r}; known: {ROLES}")
    name = override or fields[role] or cfg.llm
    return None if name == "none" else name


def runnable_roles(cfg: PipelineConfig, fallback: bool | None = None) -> tuple[str, ...]:
    """The roles a turn under `cfg` can run: the query planner when it is `llm`, the outline
    planner or the composer when the composer is theirs, the fallback when it may run
    (`fallback`: the per-call choice; None: enabled and its model passed notebook 04's bar)."""
    can = {
        "planner": cfg.planner == "llm",
        "rewrite": bool(cfg.rewrite_bar),
        "outline": cfg.composer == "outline",
        "composer": cfg.composer == "generative",
        "fallback": bool(cfg.enable_corpus_fallback and cfg.fallback_bar)
        if fallback is None
        else fallback,
    }
    return tuple(r for r in ROLES if can[r])


class RoleClients:
    """The chat client of each role, made lazily and shared between roles naming one model.

    `RoleClients.single(client)` hands one ready client to every role (tests, studies).
    `usage()` sums the usage counters of every client made so far."""

    def __init__(self, cfg: PipelineConfig, override: str | None = None) -> None:
        self.cfg, self.override = cfg, override
        self._clients: dict[str | None, ChatClient] = {}
        self._fixed: ChatClient | None = None
        self._local_client: ChatClient | None = None
        self._stack = ExitStack()
        self._making = threading.Lock()  # threads sharing a Service make each client once

    @classmethod
    def single(cls, client: ChatClient, cfg: PipelineConfig | None = None) -> RoleClients:
        """Every role answered by `client` (nothing is started or closed here)."""
        roles = cls(cfg or PipelineConfig())
        roles._fixed = client
        return roles

    def __call__(self, role: str) -> ChatClient:
        """The client of `role` (the local server starts here, once, if no keys are set)."""
        if self._fixed is not None:
            return self._fixed
        model = role_model(self.cfg, role, self.override)
        with self._making:
            if model not in self._clients:
                self._clients[model] = ChatClient.from_env(model) or self._local()
            return self._clients[model]

    def _local(self) -> ChatClient:
        """The bundled model's client, its server started on first use (one thread)."""
        if self._local_client is None:
            url = self._stack.enter_context(LocalLlamaServer(n_threads=1))
            self._local_client = ChatClient(LOCAL_MODEL_ID, url)
        return self._local_client

    def models(self) -> dict[str, str]:
        """Role -> the model id it would use now (the local model's id without keys)."""
        local = LOCAL_MODEL_ID if ChatClient.from_env() is None else None
        return {r: role_model(self.cfg, r, self.override) or local or "default" for r in ROLES}

    def usage(self) -> dict[str, float]:
        """Usage counters summed over every client made so far."""
        made = [self._fixed] if self._fixed is not None else list(self._clients.values())
        total = LLMUsage().as_dict()  # every counter, zero before any call
        for client in {id(c): c for c in made}.values():
            for k, v in client.usage.as_dict().items():
                total[k] = total.get(k, 0.0) + v
        return total

    def close(self) -> None:
        """Stop the local server if one was started."""
        self._stack.close()

    def __enter__(self) -> RoleClients:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["ROLES", "RoleClients", "role_model", "runnable_roles"]
