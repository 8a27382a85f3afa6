"""One chat client per model role, made when a role first needs it, and what each role runs.

A turn has five model roles: the query planner, the follow-up rewrite (a conversation's later
turns), the outline planner, the composer and the corpus fallback; the pairwise judge, the sixth
of `ROLES`, runs only in notebook 06. Each names its model in the config
(`PipelineConfig.planner_model`, `rewrite_model`, `outline_model`, `composer_model`,
`fallback_model`, `judge_model`; empty means `llm`), so the ladder of the design holds: cheap roles first, the strong model only on a coverage miss. A model id is "none"
(the bundled local model) or `openrouter/<id>` / `openai/<id>` (`models.llm.PROVIDERS`): a role
runs a remote model only when its config (or a caller's explicit `--model`) names one, and a
key set in the environment never moves a role by itself, so a role runs the model that was
measured. Every role naming the local model shares one llama.cpp server, started only when a
role first asks for a client: a turn the extractive composer answers starts no model at all.

A role may also need a verdict: a generative role runs only on a model that passed the bar its
notebook measures, and its bar field names that verdict's file (`core.verdicts`; `check_bars`
reads and checks each one). The fallback's is `fallback_bar` (notebook 04; without it the turn
says "I don't know", `turn.fallback_skipped`); the follow-up rewrite's is `rewrite_bar` (notebook
01; without it a follow-up no rule resolves is searched as written, `turn.live_rewrite`); the
query planner's is `planner_bar` (notebook 01): a service refuses planner `llm` without one
(`bar_problem`); the composer's and the outline planner's is `composer_bar`, the judge's
`judge_bar` (notebook 06). `role_statuses` lists each role's model, whether it can be reached and
its verdict (`citegate models`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from citegate.core.config import LOCAL_CHAT_MODEL, PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.verdicts import BAR_FIELDS, RoleVerdict
from citegate.models.llm import ChatClient, LLMUsage, missing_key, remote_client, split_model
from citegate.models.llm_server import LOCAL_MODEL_ID, LocalLlamaServer, local_model_ready
from citegate.store.production import load_verdict

ROLES = ("planner", "rewrite", "outline", "composer", "fallback", "judge")
_FIELDS = {r: f"{r}_model" for r in ROLES}


def role_source(cfg: PipelineConfig, role: str, override: str | None = None) -> tuple[str, str]:
    """(the config key or flag that names the model of `role`, the id it names): `override`
    (a per-call choice, "--model") first, then the role's own field, then `llm`."""
    if role not in _FIELDS:
        raise ValueError(f"unknown model role {role!r}; known: {ROLES}")
    if override:
        return "--model", override
    own = getattr(cfg, _FIELDS[role])
    return (_FIELDS[role], own) if own else ("llm", cfg.llm)


def role_model(cfg: PipelineConfig, role: str, override: str | None = None) -> str:
    """The model `role` runs: a remote id as named (`openrouter/...`, `openai/...`), or the
    bundled model's id (`LOCAL_MODEL_ID`) for "none". The same whatever keys are set."""
    _, named = role_source(cfg, role, override)
    return LOCAL_MODEL_ID if named == LOCAL_CHAT_MODEL else named


def runnable_roles(cfg: PipelineConfig, fallback: bool | None = None) -> tuple[str, ...]:
    """The roles a turn under `cfg` can run: the query planner when it is `llm`, the follow-up
    rewrite when its model passed notebook 01's bar (a conversation's later turns), the outline
    planner or the composer when the composer is theirs and its model passed notebook 06's bar
    (`unvetted_composer`), the fallback when it may run
    (`fallback`: the per-call choice; None: enabled and its model passed notebook 04's bar)."""
    can = {
        "planner": cfg.planner == "llm",
        "rewrite": bool(cfg.rewrite_bar),
        "outline": cfg.composer == "outline" and bool(cfg.composer_bar),
        "composer": cfg.composer == "generative" and bool(cfg.composer_bar),
        "fallback": bool(cfg.enable_corpus_fallback and cfg.fallback_bar)
        if fallback is None
        else fallback,
        "judge": False,  # notebook 06 runs the judge, never a turn
    }
    return tuple(r for r in ROLES if can[r])


def unvetted_composer(cfg: PipelineConfig) -> str:
    """Why the composer `cfg` names does not answer a live turn ("" when it does): a model
    composer (generative, outline) whose model has passed no bar (`composer_bar`, notebook 06).
    The turn answers with the extractive composer instead and records why
    (`Turn.composer_skipped`); `citegate promote` refuses such a config."""
    if cfg.composer != "extractive" and not cfg.composer_bar:
        return (
            f"composer {cfg.composer!r} has passed no bar (notebook 06; composer_bar is "
            "empty): the extractive composer answers"
        )
    return ""


def bar_problem(cfg: PipelineConfig) -> str:
    """Why a service may not answer with `cfg` ("" when it may): its query planner is `llm`
    but `planner_bar` names no verdict (the file `check_bars` then reads and checks). (The fallback has its
    own answer to a missing bar: the turn skips it and says "I don't know".)"""
    if cfg.planner == "llm" and not cfg.planner_bar:
        return (
            "planner is 'llm' but planner_bar names no verdict (notebook 01 measures the "
            "planner's bar; citegate models adopt copies a passing one): use planner: offline, "
            "or set planner_bar to that verdict"
        )
    return ""


def bar_role(cfg: PipelineConfig, field: str) -> str:
    """The role whose verdict the bar field `field` names under `cfg` (`composer_bar` vouches
    for the outline planner when the composer is "outline", else for the generative composer)."""
    if field == "composer_bar":
        return "outline" if cfg.composer == "outline" else "composer"
    return next(r for r, f in BAR_FIELDS.items() if f == field and r in ROLES)


def bar_fields(cfg: PipelineConfig) -> dict[str, str]:
    """Each bar field of the roles a config can run and the verdict file it names (set ones)."""
    fields = dict.fromkeys(BAR_FIELDS[r] for r in ROLES)
    return {f: getattr(cfg, f) for f in fields if getattr(cfg, f)}


def verdict_problem(
    cfg: PipelineConfig, field: str, verdict: RoleVerdict, override: str | None = None
) -> str:
    """Why the verdict `field` names does not let its role run under `cfg` ("" when it does):
    a verdict on another role, on another model than the role runs (a per-call `override`
    included: a verdict vouches only for the model it measured), or a failed one."""
    role = bar_role(cfg, field)
    model = role_model(cfg, role, override)
    if verdict.role != role:
        return f"{field} names a verdict on the {verdict.role} role, not the {role}"
    if verdict.model != model:
        return (
            f"{field} names a verdict on {verdict.model}, but the {role} runs {model}: a "
            "verdict vouches only for the model it measured"
        )
    if not verdict.passed:
        return f"{field} names a verdict {verdict.model} failed on the {role}: {verdict.why_not()}"
    return ""


def check_bars(
    cfg: PipelineConfig,
    base: Path | None = None,
    root: Path | None = None,
    override: str | None = None,
) -> dict[str, RoleVerdict]:
    """Read every verdict `cfg`'s bar fields name (relative to `base`, the config file's
    folder, confined to `root`: `store.production.load_verdict`) and refuse in one line the
    first that is missing, altered, failed, or on another role or model (`verdict_problem`).
    Returns them by field."""
    out = {}
    for field, name in bar_fields(cfg).items():
        verdict = load_verdict(name, field, base, root)
        if why := verdict_problem(cfg, field, verdict, override):
            raise ConfigError(why)
        out[field] = verdict
    return out


def require_keys(cfg: PipelineConfig, roles: Iterable[str], override: str | None = None) -> None:
    """A one-line ConfigError when one of `roles` names a remote model whose provider's key is
    not set (`models.llm.missing_key`: it names the config key and the variable)."""
    for role in roles:
        field, named = role_source(cfg, role, override)
        if why := missing_key(named, field):
            raise ConfigError(why)


class RoleClients:
    """The chat client of each role, made lazily and shared between roles naming one model.

    `RoleClients.single(client)` hands one ready client to every role (tests, studies).
    `usage()` sums the usage counters of every client made so far."""

    def __init__(self, cfg: PipelineConfig, override: str | None = None) -> None:
        self.cfg, self.override = cfg, override
        self._clients: dict[str, ChatClient] = {}
        self._fixed: ChatClient | None = None
        self._stack = ExitStack()
        self._making = threading.Lock()  # threads sharing a Service make each client once

    @classmethod
    def single(cls, client: ChatClient, cfg: PipelineConfig | None = None) -> RoleClients:
        """Every role answered by `client` (nothing is started or closed here)."""
        roles = cls(cfg or PipelineConfig())
        roles._fixed = client
        return roles

    def __call__(self, role: str) -> ChatClient:
        """The client of `role`: its remote model's, or the bundled model's (whose server
        starts here, once). A remote model whose key is not set is a one-line ConfigError."""
        if self._fixed is not None:
            return self._fixed
        field, _ = role_source(self.cfg, role, self.override)
        return self.client_for(role_model(self.cfg, role, self.override), field)

    def client_for(self, model: str, field: str = "model") -> ChatClient:
        """The client of `model` (a remote id, or `LOCAL_MODEL_ID`), made once and shared by
        every role naming it; `field` names who asked for it in a refusal."""
        if self._fixed is not None:
            return self._fixed
        with self._making:
            if model not in self._clients:
                local = model == LOCAL_MODEL_ID
                self._clients[model] = self._local() if local else remote_client(model, field)
            return self._clients[model]

    def require(self, roles: Iterable[str]) -> None:
        """Refuse in one line, before any work, when one of `roles` names a remote model whose
        key is not set (`require_keys`); nothing for a single fixed client."""
        if self._fixed is None:
            require_keys(self.cfg, roles, self.override)

    def _local(self) -> ChatClient:
        """The bundled model's client, its server started on first use (one thread)."""
        url = self._stack.enter_context(LocalLlamaServer(n_threads=1))
        return ChatClient(LOCAL_MODEL_ID, url)

    def models(self) -> dict[str, str]:
        """Role -> the model id it runs (`role_model`; a single fixed client's model for all)."""
        if self._fixed is not None:
            return dict.fromkeys(ROLES, self._fixed.model)
        return {r: role_model(self.cfg, r, self.override) for r in ROLES}

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


# --------------------------------------------------------------------------- what each role runs

NO_BAR_PASSED = "no bar passed"
PASSED = "passed"


@dataclass(frozen=True)
class RoleStatus:
    """One role under a config: whether its turn can run it (`runnable_roles`), the model it
    runs, local or remote, whether that model can be reached (None: not checked) and why not,
    its verdict (`passed`, `no bar passed` or `refused: <why>`) and the run that gave it ("" when
    none)."""

    role: str
    runs: bool
    model: str
    where: str
    reachable: bool | None
    detail: str
    verdict: str
    run: str

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for `citegate models --json`)."""
        return asdict(self)


def role_verdict(
    cfg: PipelineConfig, role: str, base: Path | None = None, root: Path | None = None
) -> tuple[str, str]:
    """(verdict, run) of `role` from the file its bar field names (`BAR_FIELDS`, relative to
    `base`, the config file's folder): `passed` and the run that measured it, `no bar passed`
    when the field is empty, or `refused: <why>` when the file is missing, altered, failed, or
    on another role or model (`check_bars` refuses such a config)."""
    field = BAR_FIELDS[role]
    name = getattr(cfg, field)
    if not name:
        return NO_BAR_PASSED, ""
    try:
        verdict = load_verdict(name, field, base, root)
    except ConfigError as exc:
        return f"refused: {str(exc).splitlines()[0]}", ""
    if role == bar_role(cfg, field) and (why := verdict_problem(cfg, field, verdict)):
        return f"refused: {why}", verdict.run
    if verdict.role != role:  # composer_bar vouches for the composer that runs, not the other
        return NO_BAR_PASSED, ""
    return PASSED, verdict.run


def reach(model: str, check: bool = True, timeout: float = 5.0) -> tuple[bool | None, str]:
    """Whether `model` can be reached here: the bundled model when the `llm` extra is
    installed; a remote one when its key is set and (with `check`) its API lists it
    (`ChatClient.reachable`, one `GET /models` within `timeout` seconds); None when the key is
    set but `check` is off. With the reason when it cannot."""
    split = split_model(model)
    if split is None:
        return local_model_ready()
    if not os.environ.get(split[0].key_env):
        return False, f"{split[0].key_env} is not set"
    if not check:
        return None, "key set"
    return remote_client(model).reachable(timeout)


def role_statuses(
    cfg: PipelineConfig,
    check: bool = True,
    timeout: float = 5.0,
    base: Path | None = None,
    root: Path | None = None,
) -> list[RoleStatus]:
    """One `RoleStatus` per role (`ROLES` order); each distinct model is checked once, each
    verdict read from the file its bar names (`role_verdict`, relative to `base`)."""
    runs = runnable_roles(cfg)
    seen: dict[str, tuple[bool | None, str]] = {}
    out = []
    for role in ROLES:
        model = role_model(cfg, role)
        if model not in seen:
            seen[model] = reach(model, check, timeout)
        ok, detail = seen[model]
        verdict, run = role_verdict(cfg, role, base, root)
        where = "local" if split_model(model) is None else "remote"
        out.append(RoleStatus(role, role in runs, model, where, ok, detail, verdict, run))
    return out


__all__ = [
    "ROLES",
    "RoleClients",
    "RoleStatus",
    "bar_fields",
    "bar_problem",
    "bar_role",
    "check_bars",
    "unvetted_composer",
    "verdict_problem",
    "reach",
    "require_keys",
    "role_model",
    "role_source",
    "role_statuses",
    "role_verdict",
    "runnable_roles",
]
