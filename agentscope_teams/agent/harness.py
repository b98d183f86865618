"""``SessionAgent``: the engineered shell around the ReAct loop (``HarnessAgent`` builds on it).

Each call loads the state for (org, user, agent name, session), runs the loop and writes the state
back with a version check; it also writes at every checkpoint (after each model step that calls tools
with effects, see :mod:`.react`), at pauses and when the call is cancelled. Two calls for one session
never overlap: in-process they queue on a lock; across processes a store lease (heartbeat, fencing,
expiry) serializes them.

Workspaces: with ``workspace_scope="session"`` (default) each (org, user, session) gets its own
directory under ``workspace``; ``"shared"`` points every session at ``workspace`` itself (a single-user
tool such as the CLI reviewing a directory).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Literal, Self

import anyio

from .. import tracing
from ..context import RuntimeContext, use_context
from ..events import AgentEvent, ReplyEndEvent, ReplyInput
from ..hooks import Hooks, McpServers
from ..hooks.background import BackgroundHooks, keep_for_next_turn
from ..hooks.mcp_tool import joined
from ..keys import SessionAddress
from ..message import Msg, UserMsg
from ..model import ChatModel
from ..model.factory import resolve_model
from ..sessions import SessionRecord, SessionSource, SessionStorage
from ..state import AgentState
from ..store.base import (
    BaseStore,
    path_segment,
)
from ..store.capabilities import capabilities_of
from ..tools import PermissionEngine, Tool, ToolEnv, Toolkit, filesystem_tools
from ..tools.call_end import end_call
from ..tools.plan import plan_tools
from ..tools.web import web_tools
from ..usage import Budget, RateLimit, UsageGovernor, flush, settled, split_model_limits
from ..usage.early import admit_early
from ..usage.governor import governor_for
from . import compression as comp
from .config import ReActConfig
from .construction import DEFAULT_STORE_DIR as DEFAULT_STORE_DIR  # re-exported
from .construction import check_deployment, check_numbers, resolve_store
from .extension import AgentView, CallScope, Extension
from .failures import record_failure
from .lease import Lease, SessionGuard
from .output import OutputType
from .react import ReActAgent, ReplyOptions
from .sync import LoopThread, refuse_inside_loop
from .writer import SessionWriter

log = logging.getLogger(__name__)

#: Where a streamed call's events go, as they happen.
Sink = Callable[[AgentEvent], Awaitable[None]]


class SessionAgent:
    """A stateless agent bound to a store: call it with a RuntimeContext, it does the rest.

    It knows no plug-in: subsystems come in through ``extensions`` (see :mod:`.extension`), which
    see the agent only through its frozen :attr:`view`. :class:`~agentscope_teams.HarnessAgent`
    adds subagents and teams from specs on top of this class.
    """

    def __init__(
        self,
        name: str,
        model: str | ChatModel,
        system_prompt: str = "",
        *,
        workspace: Path | str = Path(".agentscope/workspace"),
        workspace_scope: Literal["session", "shared"] = "session",
        store: BaseStore | str | None = None,
        tools: Iterable[Tool] = (),
        builtin_tools: bool = True,
        config: ReActConfig | None = None,
        permissions: PermissionEngine | None = None,
        extensions: Sequence[Extension] = (),
        replicas: int = 1,
        remote_workspace: bool = False,
        lease_ttl: float = 30.0,
        busy_timeout: float = 60.0,
        session_source: SessionSource = SessionSource.USER,
        depth: int = 0,
        tracer_provider: Any = None,
        usage: UsageGovernor | None = None,
        budget: Budget | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        check_numbers(replicas, lease_ttl, busy_timeout)
        self.name = name
        if isinstance(model, str):
            model, model_limit = split_model_limits(model)
            rate_limit = rate_limit or model_limit
        self.model = resolve_model(model)
        self.store: BaseStore = resolve_store(store)
        #: Budgets and shared rate limits of this agent's model calls (None: none).
        self.usage = governor_for(self.store, usage, budget, rate_limit)
        check_deployment(self.store, replicas, remote_workspace)
        self.workspace = Path(workspace).resolve()
        self.workspace_scope = workspace_scope
        builtins = [*filesystem_tools(), *plan_tools(), *web_tools()] if builtin_tools else []
        toolkit = Toolkit([*builtins, *tools])
        self.loop = ReActAgent(name, self.model, system_prompt, toolkit, config, permissions)
        # A store built here from a URL (or the default) is the agent's: its sessions open and close it.
        self.sessions = SessionStorage(
            self.store, owns_store=store is None or isinstance(store, str)
        )
        self.lease_ttl = lease_ttl
        self.busy_timeout = busy_timeout
        self.session_source = session_source
        self.depth = depth
        #: An OpenTelemetry ``TracerProvider`` (None: the enclosing call's, else the global one).
        self.tracer_provider = tracer_provider
        self.view = self._make_view(toolkit)
        self.extensions: list[Extension] = list(extensions)
        #: The hooks every call runs (see :mod:`agentscope_teams.hooks`); HarnessAgent sets them.
        self.hooks = Hooks()
        #: Fields every hook event of this agent carries (a subagent's ``agent_id``, ``agent_type``).
        self.hook_fields: dict[str, object] = {}
        self._locks: weakref.WeakValueDictionary[tuple[str, ...], anyio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._sync = LoopThread(f"agentscope-teams-{name}", self.aclose)  # call_sync's (.sync)

    def _make_view(self, toolkit: Toolkit) -> AgentView:
        """The frozen view extensions get of this agent."""
        return AgentView(
            name=self.name,
            model=self.model,
            toolkit=toolkit,
            config=self.loop.config,
            permissions=self.loop.permissions,
            store=self.store,
            lease_ttl=self.lease_ttl,
            busy_timeout=self.busy_timeout,
            depth=self.depth,
            workspace=self.workspace,
        )

    @property
    def model_name(self) -> str | None:
        """The model's name as a new session records it (``SessionConfig.model``)."""
        return self.model.model_name or None

    @property
    def system_prompt(self) -> str:
        return self.loop.system_prompt

    def workspace_for(self, ctx: RuntimeContext) -> Path:
        """The workspace directory of ``ctx``: one directory per org, user and session, each named
        by :func:`~agentscope_teams.store.base.path_segment`, below the root resolved once.

        Nothing is created or resolved here: the directory is made when a tool that takes a
        :class:`~agentscope_teams.tools.ToolEnv` first runs (or the archive is first written),
        so a call that touches no file costs no file-system access.
        """
        if self.workspace_scope == "shared":
            return self.workspace
        return self.workspace.joinpath(*map(path_segment, ctx.scope()))

    async def call(self, input: ReplyInput, ctx: RuntimeContext, *, output_type: Any = None) -> Msg:
        """Run one reply for ``ctx``'s session and return its final message.

        With ``output_type`` (a pydantic model, any type pydantic's ``TypeAdapter`` handles, or a
        JSON schema mapping) the reply ends with a validated value: ``msg.output`` (typed:
        ``msg.output_as(T)``), its JSON data in ``msg.metadata["output"]``; see
        :mod:`.output_run`. A confirmation resuming a paused reply takes the same type again, or
        none to get the value as JSON data.
        """
        final = await self._run(input, ctx, None, _output(output_type))
        if final is None:  # pragma: no cover - the loop always ends with ReplyEndEvent
            raise RuntimeError("reply ended without a final message")
        return final

    def call_sync(self, input: ReplyInput, ctx: RuntimeContext, *, output_type: Any = None) -> Msg:
        """:meth:`call` for code without an event loop (scripts, a REPL): blocks until the reply
        (``output_type`` as for :meth:`call`).

        The first call opens the agent (``__aenter__``) on a loop of its own (see
        :mod:`.sync`), which later calls reuse; :meth:`close_sync` (or ``with agent:``) closes it.
        Inside a running event loop it raises
        :class:`~agentscope_teams.errors.SyncCallInsideLoopError`: use ``await agent.call(...)``.
        """
        refuse_inside_loop("call_sync", "await agent.call(...)")
        if not self._sync.started:
            self._sync.run(self.__aenter__)
        return self._sync.run(lambda: self.call(input, ctx, output_type=output_type))

    def close_sync(self) -> None:
        """Close what :meth:`call_sync` opened (``aclose`` on its loop); a no-op otherwise."""
        refuse_inside_loop("close_sync", "await agent.aclose()")
        if self._sync.started:
            try:
                self._sync.run(self.aclose)
            finally:
                self._sync.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close_sync()

    async def stream(
        self, input: ReplyInput, ctx: RuntimeContext, *, output_type: Any = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run one reply for ``ctx``'s session, yielding its events as they happen.

        Closing the stream early (``contextlib.aclosing``) cancels the reply; its state is saved.
        ``output_type`` is as for :meth:`call`; the ``ReplyEndEvent`` message carries the output.
        """
        send, recv = anyio.create_memory_object_stream[AgentEvent](math.inf)
        errors: list[Exception] = []
        output = _output(output_type)

        async def worker() -> None:
            async with send:
                try:
                    await self._run(input, ctx, send.send, output)
                except Exception as exc:  # raised below as is, not wrapped in an ExceptionGroup
                    errors.append(exc)

        closed = False
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            async with recv:
                try:
                    async for event in recv:
                        yield event
                except GeneratorExit:  # the consumer closed the stream early: stop the reply
                    closed = True
                    tg.cancel_scope.cancel()
        if errors and not closed:
            raise errors[0]

    def address(self, ctx: RuntimeContext) -> SessionAddress:
        """Where ``ctx``'s session with this agent lives (its record and lease keys)."""
        return SessionAddress.of(ctx, self.name)

    async def get_agent_state(self, ctx: RuntimeContext) -> AgentState:
        """The saved state of ``ctx``'s session (an empty state if it has none)."""
        record = await self.sessions.get_at(self.address(ctx))
        return record.state if record else AgentState(session_id=ctx.session_id)

    async def clear_context(self, ctx: RuntimeContext) -> None:
        """Forget the conversation of ``ctx``'s session; permissions, tools and tasks are kept."""
        addr = self.address(ctx)
        async with self._exclusive(addr) as lease:
            record = await self.sessions.get_at(addr)
            if record is None:
                return
            record.state.clear_context()
            # no extension hook runs after this save: it gives the lease back with the write
            await self._writer(addr, record.version, lease).save(record.state, release=True)

    async def list_sessions(self, ctx: RuntimeContext) -> list[SessionRecord]:
        """The sessions of ``ctx``'s user with this agent."""
        return await self.sessions.list_sessions(ctx.user_id, self.name, org_id=ctx.org_id)

    async def delete_session(self, ctx: RuntimeContext) -> bool:
        """Delete ``ctx``'s session; True if it existed. Then each extension ends what the session
        left running (:meth:`~.extension.Extension.on_session_deleted`: a team lead's active teams
        end), and SessionEnd hooks fire (``reason: delete``)."""
        addr = self.address(ctx)
        async with self._exclusive(addr):
            deleted = await self.sessions.delete_at(addr)
        if not deleted:
            return False
        try:
            for ext in self.extensions:
                await ext.on_session_deleted(self.store, ctx, self.name)
        finally:  # the session is gone whatever an extension raised: SessionEnd pairs its start
            if self.hooks:
                payload = {"session_id": ctx.session_id, "cwd": str(self.workspace_for(ctx))}
                payload["reason"] = "delete"
                await self.hooks.fire("SessionEnd", payload, servers=self.hook_servers(ctx))
        return True

    async def __aenter__(self) -> Self:
        """Set up the store if this agent created it (from a URL or by default)."""
        await self.sessions.__aenter__()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the extensions' background work (team member loops, subagent runs), in order, then
        close the store if this agent created it. Each step runs even if an earlier one raised (the
        errors are raised, chained, once all ran), so ``async with agent:`` leaves none behind."""
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(self.sessions.aclose)
            stack.push_async_callback(flush, self.store, self.usage)  # usage settled, then closed
            for ext in reversed(self.extensions):
                stack.push_async_callback(ext.aclose)

    # -- internals -------------------------------------------------------------------------------

    def _writer(self, addr: SessionAddress, version: int, lease: Lease | None) -> SessionWriter:
        """The writer of one call or of one ``clear_context``."""
        return SessionWriter(
            self.sessions, addr, version, lease, source=self.session_source, model=self.model_name
        )

    def _releases_in_save(self, scope: CallScope) -> bool:
        """Whether this call's last save may release the lease: no extension still works after it
        (an ``after_save`` acknowledging mail read in this call must run while the lease is held);
        asked at the last save, since it depends on what the call injected."""
        return not any(ext.works_after_save(scope) for ext in self.extensions)

    def _exclusive(self, addr: SessionAddress, *, load: bool = False) -> SessionGuard:
        """The session's lock and lease; ``load`` reads its record with the lease (one round
        trip on Redis): :meth:`_load` then decodes it."""
        lock = self._locks.get(addr.key)
        if lock is None:
            lock = self._locks[addr.key] = anyio.Lock()
        shared = capabilities_of(self.store).shared_across_processes
        return SessionGuard(
            lock,
            self.store if shared else None,
            addr.lease_key,
            ttl=self.lease_ttl,
            wait_timeout=self.busy_timeout,
            read=addr.key if load else None,
        )

    async def _load(self, addr: SessionAddress, lease: Lease | None) -> SessionRecord | None:
        """The session's record: the one read with ``lease``, else read now."""
        if lease is not None and lease.read_key == addr.key:
            return await self.sessions.record_from(addr, lease.read)
        return await self.sessions.get_at(addr)

    async def _run(
        self, input: ReplyInput, ctx: RuntimeContext, sink: Sink | None, output: OutputType | None
    ) -> Msg | None:
        """Run one reply; each event goes to ``sink`` (None: none), its final message is returned."""
        addr = self.address(ctx)
        span = tracing.invoke_agent(
            self.name,
            provider=self.tracer_provider,
            session_id=ctx.session_id,
            user_id=ctx.user_id,
            org_id=ctx.org_id,
            depth=self.depth,
        )
        governed = self.usage.bind(ctx) if self.usage is not None else _UNGOVERNED
        with use_context(ctx), span, governed:
            try:  # the first model call's ADMIT goes beside the session lease and load
                async with (
                    admit_early(self.loop, addr.key, input),
                    self._exclusive(addr, load=True) as lease,
                ):
                    return await self._run_locked(input, ctx, addr, sink, lease, output)
            finally:  # the last model call's settle ran beside the last save: its usage counts
                await settled()

    async def _run_locked(
        self,
        input: ReplyInput,
        ctx: RuntimeContext,
        addr: SessionAddress,
        sink: Sink | None,
        lease: Lease | None,
        output: OutputType | None = None,
    ) -> Msg | None:
        record = await self._load(addr, lease)
        state = record.state if record else AgentState(session_id=ctx.session_id)
        version = record.version if record else 0
        loaded = _change_marker(state)
        # The root was resolved at construction and path_segment names are plain names (never
        # "." / ".." / holding "/"), so the session path needs no resolve (file tools still
        # realpath every argument against it, which fails closed if a component is a symlink).
        workspace = self.workspace_for(ctx)
        env = ToolEnv(
            workspace=workspace,
            ctx=ctx,
            agent_name=self.name,
            extras={"agent": self.view, "state": state},
            resolved=True,
            read_guard=self.loop.permissions.read_guard(
                state.permission_context, workspace=workspace
            ),
            sandbox_mask=self.loop.permissions.sandbox_mask(
                state.permission_context, workspace=workspace
            ),
        )
        scope = CallScope(agent=self.view, ctx=ctx, state=state, env=env)

        save = _Saves(self, scope, self._writer(addr, version, lease))
        for ext in self.extensions:
            await ext.prepare(scope)
        options = self._options(scope, save)
        options.output = output
        background = BackgroundHooks.open(self.hooks)  # None: no hook is async
        try:
            if record is None and self.hooks:  # a new session: SessionStart context goes first
                await self._session_start(state, env, options)
            final = await self._reply(input, state, options, sink, loaded, save)
            if background is not None:  # async hooks end with the call: awaited, or killed
                keep_for_next_turn(state, await background.settle())
        finally:
            if background is not None:  # a failure or cancellation: those running are killed
                background.close()
        await save(state, last=True)
        if final is not None:
            for ext in self.extensions:
                await ext.on_reply_end(scope, final)
        return final

    async def _reply(
        self,
        input: ReplyInput,
        state: AgentState,
        options: ReplyOptions,
        sink: Sink | None,
        loaded: tuple[object, ...],
        save: _Saves,
    ) -> Msg | None:
        """The reply's events, each given to ``sink``; its final message. A reply that fails
        after changing ``state`` (not its ``loaded`` marker) saves it with why; what tools
        started for the call stops with it."""
        env = options.env
        final: Msg | None = None
        try:
            async for event in self.loop.reply_stream(input, state, options):
                if isinstance(event, ReplyEndEvent):
                    final = event.msg
                if sink is not None:
                    await sink(event)
        except BaseException as exc:
            if _change_marker(state) != loaded:  # input rejected before any change: no write
                record_failure(state, exc)  # why, for the dashboard (see .failures)
                await _save_quietly(functools.partial(save, last=True), state)
            raise
        finally:  # what tools started for this call (background shells) stops with it
            if env is not None:
                await end_call(env)
        return final

    async def _session_start(self, state: AgentState, env: ToolEnv, opts: ReplyOptions) -> None:
        """The SessionStart hooks of a new session; their context goes first."""
        started = await self.hooks.fire(
            "SessionStart",
            {"session_id": state.session_id, "cwd": str(env.workspace), "source": "startup"},
            servers=opts.hook_servers,
        )
        if started.additional_context:
            state.context.append(UserMsg(started.additional_context, name="hook"))

    def _options(self, scope: CallScope, save: _Saves) -> ReplyOptions:
        tools = [t for ext in self.extensions for t in ext.tools(scope)]
        toolkit = self.loop.toolkit.merged(Toolkit(tools)) if tools else self.loop.toolkit
        suffix = "\n\n".join(p for ext in self.extensions if (p := ext.system_prompt(scope)))

        def injector(ext: Extension) -> Any:
            async def inject(_: AgentState) -> list[Msg]:
                return await ext.inject(scope)

            return inject

        return ReplyOptions(
            toolkit=toolkit,
            env=scope.env,
            injectors=tuple(injector(ext) for ext in self.extensions),
            checkpoint=save,
            archiver=save.archive,
            system_suffix=suffix,
            hooks=self.hooks if self.hooks else None,
            hook_fields=dict(self.hook_fields) if self.hook_fields else _NO_FIELDS,
            hook_servers=self.hook_servers(scope.ctx) if self.hooks else None,
            stop_event="Stop" if self.depth == 0 else None,
        )

    def hook_servers(self, ctx: RuntimeContext) -> McpServers | None:
        """The MCP servers this agent's extensions connect for ``ctx``: those its ``mcp_tool``
        hooks call (None: it has none)."""
        found = [s for ext in self.extensions if (s := ext.hook_servers(ctx)) is not None]
        return joined(found)


class _Saves:
    """What one call writes: its checkpoints and last save (through its writer, then the
    extensions' ``after_save``), and the archive of the messages compression removes. One object
    rather than closures (a function, a tuple and a cell per name each): it is held, with what it
    holds, while the call is in flight."""

    __slots__ = ("agent", "scope", "writer")

    def __init__(self, agent: SessionAgent, scope: CallScope, writer: SessionWriter) -> None:
        self.agent, self.scope, self.writer = agent, scope, writer

    async def __call__(self, state: AgentState, last: bool = False) -> None:
        agent, scope = self.agent, self.scope
        await self.writer.save(state, release=last and agent._releases_in_save(scope))
        for ext in agent.extensions:
            await ext.after_save(scope)

    async def archive(self, msgs: list[Msg]) -> None:
        """Append ``msgs`` to the session's archive (its path is worked out only if needed)."""
        scope = self.scope
        path = comp.workspace_archive_path(
            scope.env.workspace, self.agent.name, scope.ctx.session_id
        )
        await comp.file_archiver(path)(msgs)


class _NoScope:
    """The usage scope of a call without a governor: a shared no-op whose ``__exit__`` is a
    static method, so the call's ``with`` holds that function, not a bound method made per call."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    @staticmethod
    def __exit__(et: object, e: object, tb: object) -> None:
        return None


_UNGOVERNED = _NoScope()
#: The hook fields of an agent that sets none (shared: a call copies only fields it has).
_NO_FIELDS: Mapping[str, object] = MappingProxyType({})


def _output(output_type: Any) -> OutputType | None:
    """The output type of a call (checked before the call takes the session)."""
    return None if output_type is None else OutputType.of(output_type)


def _change_marker(state: AgentState) -> tuple[object, ...]:
    """A cheap fingerprint of what a reply changes first (a new reply id, a cleared confirmation,
    an appended or rewritten message): equal before and after means the input was rejected before
    anything changed, without serializing the state twice."""
    last = state.context[-1] if state.context else None
    return (
        len(state.context),
        id(last),
        id(last.content) if last is not None else None,
        state.reply_id,
        state.cur_iter,
        tuple(state.awaiting_confirmation),
        tuple(state.deferred_tool_calls),
        state.summary,
        state.permission_context.mode,
        len(state.permission_context.rules),
    )


async def _save_quietly(save: Callable[[AgentState], Awaitable[None]], state: AgentState) -> None:
    """Save after a failure or cancellation (shielded); a save error is logged, not raised, so the
    original error propagates."""
    with anyio.CancelScope(shield=True):
        try:
            await save(state)
        except Exception as exc:
            log.warning("could not save session %r after a failure: %s", state.session_id, exc)
