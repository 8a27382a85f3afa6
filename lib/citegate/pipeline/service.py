"""The one object an engineer's service calls: the production pipeline wired once.

    from citegate.pipeline.service import Service

    with Service.open() as svc:                  # production (experiments/production.yaml)
        turn = svc.answer("What does Krishna say about the soul?")
        print(turn.branch, turn.text)            # grounded / fallback / decline / error
        res = svc.retrieve("BG 2.13")            # notes, decision, which gate decided, memory
        for event in svc.stream("BG 2.47"):      # the same turn, each event as soon as known
            print(event.kind, event.data)
        conv = Conversation()                    # pipeline.conversation: follow-ups
        conv.add(svc.answer("What does BG 2.47 say?", history=conv.history()))
        svc.answer("and the next verse?", history=conv.history())   # searches BG 2.48

`Service.open` does what `citegate ask` does before its first question: it chooses the config
(`"production"`, `"design"` or a YAML path), checks every model file the config names against its
digest (the learned gate, the LTR reranker) before anything loads, connects to `DATABASE_URL`
(else the embedded server under `var/`), loads the embedder the config names (`embed.embedder_for`:
never one the environment's keys pick; the design numbers, which name none of their own, take this
environment's), the reranker and the query planner, and holds the chat models of the answer roles
(each started only when its role first runs). Each role runs the model its config names
(`pipeline.roles`); a remote one whose key is not set, or planner `llm` without a passing verdict
(`planner_bar`), is refused in one line before anything connects.
A corpus that holds no fragments for the config's embedder is refused at the first question
(`store.presence.require_fragments`), naming the command that fills it.

One `Service` may be shared by the threads of a web service: every call takes its own connection
from a pool (`pool_size` connections at most; a call beyond waits for one), and the embedder, the
reranker and the role clients are safe to call from several threads. `citegate bench` measures
8 threads sharing one `Service` against a single client. `Service.open` itself may run in several
threads and processes at once: the embedded server is started once and attached to by the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import psycopg
from psycopg_pool import ConnectionPool

from citegate.core.config import PipelineConfig
from citegate.core.config_files import PRODUCTION, NamedConfig, named
from citegate.core.errors import ConfigError
from citegate.models.embed import Embedder, default_embedder, embedder_for
from citegate.models.llm import chosen_model
from citegate.models.rerank import Reranker
from citegate.pipeline.llm_calls import DEFAULT_OPTIONS, CallOptions
from citegate.pipeline.plan import Planner, make_planner
from citegate.pipeline.retrieve import RetrievalResult, retrieve
from citegate.pipeline.roles import (
    RoleClients,
    bar_problem,
    check_bars,
    require_keys,
    role_model,
    runnable_roles,
)
from citegate.pipeline.turn import Turn, TurnEvent, answer_turn, turn_events
from citegate.store.db import connection_pool
from citegate.store.production import (
    gate_model_path,
    load_gate,
    load_reranker,
    reranker_model_path,
)


def model_folders(choice: NamedConfig) -> tuple[Path, Path | None]:
    """(the folder `choice`'s model and verdict files are named relative to, the folder they
    must lie in: None for `base/models/`): a production-shaped file names them under its
    models/ folder, a plain config file (a run folder's recommended_config.yaml) inside its own
    folder."""
    named_file = choice.source not in ("production", "design")
    folder = Path(choice.source).parent if named_file else PRODUCTION.parent
    return folder, None if choice.version is not None else folder


def choose_config(which: str = "production", override: str | None = None) -> NamedConfig:
    """The config `which` names ("production", "design" or a YAML path), its model files made
    absolute and checked (a missing, altered or unusable one is refused here, before any model
    loads; `model_folders` says where they are looked for), and every role verdict its bars
    name read and checked against the model the role runs (`roles.check_bars`; `override`: a
    per-call model for every role, which a verdict must then be on)."""
    choice = named(which)
    cfg = choice.config
    folder, root = model_folders(choice)
    check_bars(cfg, folder, root, override)
    if cfg.gate != "learned" and not cfg.reranker_model:
        return choice
    if cfg.reranker_model:
        cfg = cfg.replace(reranker_model=str(reranker_model_path(cfg, folder, root).resolve()))
        load_reranker(cfg)
    if cfg.gate == "learned":
        cfg = cfg.replace(gate_model=str(gate_model_path(cfg, folder, root).resolve()))
        load_gate(cfg)
    return NamedConfig(cfg, choice.source, choice.version, choice.source_run)


def config_embedder(choice: NamedConfig) -> Embedder:
    """The embedder a service answers with: the one the config names (`embedder_for`), whatever
    keys are set, since its gate was certified on that embedder's cosines; on the design
    numbers, which were measured on no corpus of this environment, this environment's
    (`default_embedder`, the embedder `citegate ingest` writes with)."""
    if choice.source == "design":
        return default_embedder()
    return embedder_for(choice.config.embedder)


def check_roles(choice: NamedConfig, override: str | None) -> None:
    """Refuse in one line a config a service may not answer with: planner `llm` without a
    passing verdict (`roles.bar_problem`), or a query planner on a remote model whose key is
    not set (the answer roles are checked when a turn needs them, `Service.answer`)."""
    if why := bar_problem(choice.config):
        raise ConfigError(f"{choice.source}: {why}")
    if choice.config.planner == "llm":
        require_keys(choice.config, ("planner",), override)


def for_call(
    choice: NamedConfig, embedder_id: str, corpora: Sequence[str] | None = None
) -> NamedConfig:
    """`choice` searching `corpora` (None: the config's), and on the design numbers this
    environment's embedder (a file names its own; retrieval refuses a config naming another)."""
    changes: dict[str, object] = {"corpora": list(corpora)} if corpora else {}
    if choice.source == "design":
        changes["embedder"] = embedder_id
    if not changes:
        return choice
    cfg = choice.config.replace(**changes)
    return NamedConfig(cfg, choice.source, choice.version, choice.source_run)


@dataclass
class Service:
    """The wired pipeline: the config and where it came from, the connection pool, the embedder,
    the reranker, the query planner and the answer roles' chat clients. Safe to share between
    threads (see the module docstring)."""

    choice: NamedConfig
    pool: ConnectionPool
    embedder: Embedder
    reranker: Reranker
    planner: Planner
    roles: RoleClients

    @classmethod
    @contextmanager
    def open(
        cls,
        config: str = "production",
        *,
        corpora: Sequence[str] | None = None,
        url: str | None = None,
        model: str | None = None,
        embedder: Embedder | None = None,
        pool_size: int = 8,
    ) -> Iterator[Service]:
        """Wire the pipeline (see the module docstring); closes the connections and stops any
        chat model it started on exit. `model`: one chat model for every role, a per-call
        choice (`models.llm.chosen_model`: "none", `openrouter/<id>`, `openai/<id>`, or a bare
        id on the provider whose key is set); `embedder`: one already loaded (default: the
        config's, `config_embedder`); `pool_size`: the most connections held at once (the
        threads expected to call at the same time)."""
        override = chosen_model(model) if model else None
        choice = choose_config(config, override)
        check_roles(choice, override)
        emb = embedder or config_embedder(choice)
        choice = for_call(choice, emb.id, corpora)
        cfg = choice.config
        with ExitStack() as stack:
            pool = stack.enter_context(connection_pool(url, max_size=pool_size))
            roles = stack.enter_context(RoleClients(cfg, override))
            planner = service_planner(cfg, roles)
            yield cls(choice, pool, emb, load_reranker(cfg), planner, roles)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A connection of the pool for the caller's own reads (returned to the pool on exit)."""
        with self.pool.connection() as conn:
            yield conn

    def retrieve(self, question: str) -> RetrievalResult:
        """The final notes, the decision, which gate made it and why, what curated memory did,
        and the trace."""
        cfg = self.choice.config
        with self.connection() as conn:
            return retrieve(conn, question, cfg, self.embedder, self.reranker, self.planner)

    def answer(
        self,
        question: str,
        *,
        fallback: bool | None = None,
        options: CallOptions = DEFAULT_OPTIONS,
        history: Sequence[Mapping[str, str]] = (),
    ) -> Turn:
        """The whole turn: retrieval planned by the service's planner (as `retrieve`), the
        composer, the claim check, and on an insufficient corpus the fallback (`fallback`: per
        call; None: the config's) or "I don't know". `history`: the conversation so far
        ({"role": "user" | "assistant", "content"} messages, oldest first;
        `pipeline.conversation.Conversation.history` gives them): a follow-up is made
        standalone before it is searched. A role the turn can run that names a remote model
        whose key is not set is refused in one line before anything runs."""
        self.roles.require(runnable_roles(self.choice.config, fallback))
        with self.connection() as conn:
            turn = answer_turn(
                conn, question, self.choice.config, self.embedder, self.reranker, self.roles,
                enable_fallback=fallback, options=options, planner=self.planner, history=history,
            )  # fmt: skip
        return self._with_models(turn, fallback)

    def stream(
        self,
        question: str,
        *,
        fallback: bool | None = None,
        options: CallOptions = DEFAULT_OPTIONS,
        history: Sequence[Mapping[str, str]] = (),
    ) -> Iterator[TurnEvent]:
        """The whole turn as events, each as soon as it is known (`pipeline.turn.EventKind`):
        the gate's decision and the notes, the painted disclaimer first on the fallback
        branch, each claim shown with its verdict, the text shown, then `done` carrying the
        `Turn` `answer` returns (`history`: as for `answer`). The question is checked
        (`QuestionError`) and the roles' keys (`ConfigError`) before the first event; the
        connection is held until the last event or until the caller stops reading."""
        self.roles.require(runnable_roles(self.choice.config, fallback))
        with self.connection() as conn:
            events = turn_events(
                conn, question, self.choice.config, self.embedder, self.reranker, self.roles,
                enable_fallback=fallback, options=options, planner=self.planner, history=history,
            )  # fmt: skip
            for event in events:
                if event.turn is not None:
                    event = replace(event, turn=self._with_models(event.turn, fallback))
                yield event

    def _with_models(self, turn: Turn, fallback: bool | None) -> Turn:
        """A copy of the turn with the model of each role it could run (what `ask` prints)."""
        runs = runnable_roles(self.choice.config, fallback)
        return replace(turn, models={r: m for r, m in self.roles.models().items() if r in runs})


def service_planner(cfg: PipelineConfig, roles: RoleClients) -> Planner:
    """The query planner `cfg` names, on the planner role's model (a per-call `model` first,
    then `planner_model`, else `llm`), its client shared with the answer roles."""
    model = role_model(cfg, "planner", roles.override)
    return make_planner(cfg.planner, model, roles.client_for)


__all__ = [
    "model_folders",
    "Service",
    "check_roles",
    "choose_config",
    "config_embedder",
    "for_call",
    "service_planner",
]
