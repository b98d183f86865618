"""``SubagentExtension``: the subagents of one agent (``HarnessAgent(specs=...)`` builds it).

It offers the spawn tools (below ``max_depth``), lists the subagents in the system prompt, launches
runs (:meth:`SubagentExtension.launch`) on its :class:`~.runtime.Runner`, and delivers background
results: before each reasoning step it injects the unseen notices of the parent session's inbox and
acknowledges them after the state holding them is saved (see :mod:`.inbox`). At the first step of a
call it also re-checks the runs the session still waits for, so a run orphaned by a crashed process is
reported ``lost`` at the parent's next call.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import tracing
from ..agent.extension import AgentView, CallScope, Extension, ReadMark
from ..agent.harness import SessionAgent
from ..agent.lease import Lease
from ..errors import ConfigurationError, ToolError
from ..hooks import Hooks, hooks_of_spec
from ..message import Msg
from ..model.base import ChatModel
from ..project_memory import ProjectMemory
from ..skills import SkillExtension, SkillLibrary
from ..state import PermissionMode
from ..tools import Tool
from ..trust import ProjectTrust
from ..usage import budget_of
from .child import build_child, fork_snapshot
from .child_setup import (
    check_plan_spawn,
    check_run_limits,
    child_skills,
    repository_for,
    warn_about,
)
from .inbox import acknowledge, take
from .memo import SubagentMemo
from .memory import AgentMemory
from .options import SubagentOptions, check_subagent_options
from .pool import specs_from
from .runs import RunBook, RunRecord, RunStatus, child_session_id, new_run_id
from .runtime import Handle, Launch, Runner
from .spawn import ModelPool
from .spec import ContextMode, SubagentSpec, WorkspaceMode
from .stops import subagent_start, subagent_stop
from .tools import bind_tools
from .workspace import prepare, run_dir, slot_for
from .worktree import Worktree, branch_name
from .worktree import create as create_worktree
from .worktree import finish as finish_worktree

if TYPE_CHECKING:
    from ..mcp import McpToolset

log = logging.getLogger(__name__)

NOTICE_SENDER = "subagents"


#: A registered run: its record, its lease, and its own workspace (None: the parent's).
_Registered = tuple[RunRecord, Lease, Path | None]


@dataclass
class _CallData:
    """What one call of the parent remembers: its inbox read mark, whether it swept its runs."""

    inbox: ReadMark = field(default_factory=ReadMark)
    swept: bool = False


class SubagentExtension(Extension):
    """Subagents of one agent (seen through its :class:`AgentView`); build it with :meth:`build`."""

    def __init__(
        self,
        agent: AgentView,
        specs: dict[str, SubagentSpec],
        *,
        max_depth: int,
        max_concurrent: int,
        lease_ttl: float,
        workspace_root: Path,
        models: Mapping[str, ChatModel] | None = None,
        mcp: McpToolset | None = None,
        skills: SkillLibrary | None = None,
        hooks: Hooks | None = None,
        trust: ProjectTrust | None = None,
        memory: ProjectMemory | None = None,
    ) -> None:
        self.agent, self.specs = agent, specs
        #: The project's CLAUDE.md memory: every child gets it in its system prompt.
        self.memory = memory
        #: The agent's hooks (SubagentStart / SubagentStop fire on them; children inherit them)
        #: and the trust deciding whether a spec's own ``hooks:`` run.
        self.hooks = hooks
        self.trust = trust if trust is not None else ProjectTrust()
        self.mcp = mcp
        self.skills = skills
        self.max_depth, self.max_concurrent = max_depth, max_concurrent
        self.lease_ttl = lease_ttl
        self.root = workspace_root
        self.runner = Runner(lease_ttl)
        self.pool = ModelPool(agent.model, models)
        #: Whether the children may get the ``skill`` tool (False below a child without it).
        self.skill_tool = True

    @property
    def models(self) -> dict[str, ChatModel]:
        """Models by the name specs give them (shared with children and team members)."""
        return self.pool.models

    @classmethod
    def build(
        cls,
        agent: AgentView,
        specs: Any,
        *,
        max_depth: int = 2,
        max_concurrent: int = 4,
        model_aliases: Mapping[str, str] | None = None,
        lease_ttl: float | None = None,
        workspace_root: Path | str | None = None,
        models: Mapping[str, ChatModel] | None = None,
        mcp: McpToolset | None = None,
        skills: SkillLibrary | None = None,
        hooks: Hooks | None = None,
        trust: ProjectTrust | None = None,
        memory: ProjectMemory | None = None,
    ) -> SubagentExtension:
        """Load ``specs`` (a directory, specs, or a mapping) and check the limits.

        ``lease_ttl`` (default: the agent's) bounds how long a crashed process's run stays
        "running"; ``workspace_root`` (default: the agent's workspace) holds isolated run dirs;
        ``models`` maps a spec's ``model`` name to a model object (shared clients, scripted tests)
        before it is parsed as ``"provider:model"``; ``mcp`` gives children the MCP tools their
        spec selects; ``skills`` is where the skills its specs preload (``skills:``) and children
        load (the ``skill`` tool) come from; ``hooks`` are the agent's hooks and ``trust`` decides
        whether a spec file's ``hooks:`` run (see :mod:`agentscope_teams.hooks`); ``memory``
        (the project's CLAUDE.md, :mod:`agentscope_teams.project_memory`) goes into every
        child's system prompt.
        """
        given: SubagentOptions = {"max_depth": max_depth, "max_concurrent": max_concurrent}
        given |= {
            "model_aliases": model_aliases,
            "workspace_root": workspace_root,
            "models": models,
        }
        check_subagent_options("SubagentExtension", given)
        ttl = agent.lease_ttl if lease_ttl is None else lease_ttl
        if not ttl > 0:
            raise ConfigurationError(f"lease_ttl must be > 0 seconds, got {ttl!r}")
        loaded = specs_from(specs, model_aliases=model_aliases)
        for spec in loaded.values():
            warn_about(agent, spec)
        root = Path(workspace_root).resolve() if workspace_root is not None else agent.workspace
        return cls(
            agent,
            loaded,
            max_depth=max_depth,
            max_concurrent=max_concurrent,
            lease_ttl=ttl,
            workspace_root=root,
            models=models,
            mcp=mcp,
            skills=skills,
            hooks=hooks,
            trust=trust,
            memory=memory,
        )

    @property
    def can_spawn(self) -> bool:
        return bool(self.specs) and self.agent.depth < self.max_depth

    # -- Extension hooks -----------------------------------------------------------------------------

    def tools(self, scope: CallScope) -> list[Tool]:
        return bind_tools(self, scope) if self.can_spawn else []

    def system_prompt(self, scope: CallScope) -> str:
        if not self.can_spawn:
            return ""
        listing = "\n".join(f"- {s.name}: {s.description}" for s in self.specs.values())
        return (
            "## Subagents\nDelegate independent, self-contained tasks with agent_spawn; several "
            "spawns in one step run in parallel. Available agents:\n" + listing
        )

    async def inject(self, scope: CallScope) -> list[Msg]:
        book = RunBook.for_ctx(self.agent.store, scope.ctx)
        memo = SubagentMemo.of(scope.state)
        data = scope.local(self, _CallData)
        if not data.swept:
            data.swept = True
            await self._sweep(book, memo, str(scope.env.workspace))
        inbox = book.inbox(self.agent.name)
        notices = await take(inbox, data.inbox, scope.state, set(memo.delivered))
        for n in notices:
            if n.run_id is not None:
                memo.unwatch(n.run_id)
        return [n.message(NOTICE_SENDER) for n in notices]

    async def after_save(self, scope: CallScope) -> None:
        inbox = RunBook.for_ctx(self.agent.store, scope.ctx).inbox(self.agent.name)
        await acknowledge(inbox, scope.local(self, _CallData).inbox)

    def works_after_save(self, scope: CallScope) -> bool:
        """Only when this call read notices it has not acknowledged yet (see :mod:`.inbox`)."""
        return scope.local(self, _CallData).inbox.to_acknowledge() is not None

    async def _sweep(self, book: RunBook, memo: SubagentMemo, cwd: str) -> None:
        """Reconcile the runs the session waits for (lost ones post their notice now, and get
        the SubagentStop no process emitted for them)."""
        for run_id in list(memo.watch):
            rec = await book.load(run_id)
            if rec is not None and not rec.status.active and not rec.stop_emitted:
                spec = self.specs.get(rec.spec)
                hooks = self._hooks_for(spec) if spec is not None else self.hooks
                await subagent_stop(hooks, book, rec, cwd, model=self.agent.model)
            if rec is None or rec.status is RunStatus.CANCELLED:
                memo.unwatch(run_id)

    # -- runs ----------------------------------------------------------------------------------------

    def model_for(self, spec: SubagentSpec) -> ChatModel:
        if spec.a2a is not None:  # a remote A2A agent: its turns go there (docs/a2a.md)
            from .remote import remote_model

            return remote_model(spec, self.agent.store, self.trust)
        try:
            return self.pool.for_spec(spec)
        except Exception as exc:
            raise ToolError(f"cannot use model {spec.model!r} of agent {spec.name}: {exc}") from exc

    async def launch(
        self,
        scope: CallScope,
        spec: SubagentSpec,
        task: str,
        label: str | None,
        *,
        background: bool,
        continues: RunRecord | None = None,
    ) -> Handle:
        """Register a run (limits checked under a per-session lock), prepare it and start it; a
        parent in plan mode starts only a child that runs in plan mode (a tool error otherwise)."""
        check_plan_spawn(spec, self._mode(scope), self.trust)
        book = RunBook.for_ctx(self.agent.store, scope.ctx)
        model = self.model_for(spec)
        repo = await repository_for(spec, scope.env.workspace)
        async with self.runner.lock((*book.scope, self.agent.name)):
            run = await self._register(scope, book, spec, task, label, background, continues, repo)
        child, finishers = await self._prepare(scope, book, spec, model, run, repo)
        record, lease, workspace = run
        fork = spec.context is ContextMode.FORK and continues is None
        return self.runner.start(
            Launch(
                book=book,
                record=record,
                child=child,
                ctx=scope.ctx.with_session(record.child_session),
                lease=lease,
                workspace=None if repo is not None else workspace,
                keep_workspace=label is not None,
                snapshot=fork_snapshot(scope.state) if fork else None,
                output=spec.output_spec(),
                finishers=finishers,
                hooks=child.hooks,
                cwd=str(scope.env.workspace),
                budget=budget_of(spec.max_tokens, spec.max_budget_usd),
                turn_limit=spec.turn_limit,
            )
        )

    async def _register(
        self,
        scope: CallScope,
        book: RunBook,
        spec: SubagentSpec,
        task: str,
        label: str | None,
        background: bool,
        continues: RunRecord | None,
        repo: Path | None,
    ) -> _Registered:
        """Check the limits, write the run's record, take its lease and fire SubagentStart
        (under the caller's per-session lock)."""
        agent, ctx = self.agent, scope.ctx
        active = [r for r in await book.list() if r.parent_agent == agent.name]
        check_run_limits([r for r in active if r.status.active], self.max_concurrent, spec, label)
        run_id = new_run_id()
        slot = slot_for(run_id, label)
        isolated = spec.workspace.mode is WorkspaceMode.ISOLATED or repo is not None
        workspace = run_dir(self.root, ctx, spec.name, slot) if isolated else None
        lease = book.lease(run_id, self.lease_ttl)
        await lease.try_acquire()
        record = RunRecord(
            run_id=run_id,
            parent_agent=agent.name,
            spec=spec.name,
            task=task,
            label=label,
            child_session=continues.child_session
            if continues
            else child_session_id(ctx, agent.name, spec.name, slot),
            depth=agent.depth + 1,
            lease=lease.holder,
            background=background,
            workspace=str(workspace) if workspace else None,
            continues=continues.run_id if continues else None,
            trace_context=tracing.carrier(),
        )
        await book.create(record)
        await subagent_start(self.hooks, book, record, str(scope.env.workspace))
        names = tracing.names
        attrs = {names.RUN_ID: run_id, names.SPEC: spec.name, names.BACKGROUND: background}
        tracing.event(names.SUBAGENT_SPAWN, attrs)
        return record, lease, workspace

    async def _prepare(
        self,
        scope: CallScope,
        book: RunBook,
        spec: SubagentSpec,
        model: ChatModel,
        run: _Registered,
        repo: Path | None,
    ) -> tuple[SessionAgent, list[Callable[[], Awaitable[str | None]]]]:
        """The child agent of a registered run, in its workspace (a worktree of ``repo``), and
        what finishes the run; on failure the run is recorded failed and a tool error raised."""
        record, lease, workspace = run
        finishers: list[Callable[[], Awaitable[str | None]]] = []
        tree: Worktree | None = None
        try:
            if repo is not None and workspace is not None:
                tree = await create_worktree(repo, workspace, branch_name(spec.name, record.run_id))
                finishers.append(partial(finish_worktree, tree))
            elif workspace is not None:
                await prepare(workspace, spec.workspace.path)
            child = await self._child(scope, book, spec, model, record.run_id, workspace)
            if spec.memory is not None:
                memory = AgentMemory(
                    self.agent.store, scope.ctx, spec.name, spec.memory, self.root,
                    child.view.workspace,
                )  # fmt: skip
                child.extensions.append(await memory.open())
                finishers.insert(0, partial(memory.sync, record.run_id))
        except Exception as exc:
            if tree is not None:  # the worktree made for it goes (the memory is left as stored)
                with contextlib.suppress(Exception):
                    await finish_worktree(tree)
            error = f"could not start: {exc}"
            failed = await book.update(
                record.run_id, lambda r: r.finished(RunStatus.FAILED, error=error)
            )
            await lease.release()
            if failed is not None:
                await subagent_stop(self.hooks, book, failed, str(scope.env.workspace), model=model)
            raise ToolError(f"could not start agent {spec.name}: {exc}") from exc
        return child, finishers

    async def _child(
        self,
        scope: CallScope,
        book: RunBook,
        spec: SubagentSpec,
        model: ChatModel,
        run_id: str,
        workspace: Path | None,
    ) -> SessionAgent:
        """The child agent: its tools, hooks, own subagents (below the depth limit) and skills."""
        agent = self.agent
        child = build_child(
            agent,
            spec,
            model=model,
            workspace=workspace or scope.env.workspace,
            mail=book.mail(run_id),
            lease_ttl=self.lease_ttl,
            mcp=self.mcp,
            trust=self.trust,
            parent_mode=self._mode(scope),
        )
        child.hooks = self._hooks_for(spec)
        child.hook_fields = {"agent_id": run_id, "agent_type": spec.name}
        if self.memory:  # the project's CLAUDE.md, as Claude Code gives its subagents
            child.extensions.append(self.memory)
        skills = await child_skills(self.skills, spec, scope.ctx, tool=self.skill_tool)
        if agent.depth + 1 < self.max_depth and spec.may_spawn:
            # its own children get no MCP tool, nor the skill tool, it lacks
            mcp = self.mcp.below(child.extensions) if self.mcp is not None else None
            below = self._for_child(child.view, spec.allowed_agents, mcp)
            below.skill_tool = any(isinstance(e, SkillExtension) for e in skills)
            child.extensions.append(below)
        child.extensions += skills
        return child

    def _mode(self, scope: CallScope) -> PermissionMode:
        """The mode the parent's session is in (what its children inherit)."""
        return self.agent.permissions.effective_mode(scope.state.permission_context)

    def _hooks_for(self, spec: SubagentSpec) -> Hooks:
        """A child's hooks: the agent's, and its spec's own ``hooks:`` when they may run (a spec
        file's only for a trusted project; one built in code is the operator's)."""
        return hooks_of_spec(self.hooks, spec, self.trust)

    def _for_child(
        self, child: AgentView, allowed: list[str] | None, mcp: McpToolset | None
    ) -> SubagentExtension:
        """The child's own extension: the same specs (those of ``allowed``, when given), limits,
        workspace root and models, and ``mcp`` (bounded by the child's MCP tools)."""
        specs = (
            self.specs
            if allowed is None
            else {n: self.specs[n] for n in allowed if n in self.specs}
        )
        return SubagentExtension(
            child,
            specs,
            max_depth=self.max_depth,
            max_concurrent=self.max_concurrent,
            lease_ttl=self.lease_ttl,
            workspace_root=self.root,
            models=self.models,
            mcp=mcp,
            skills=self.skills,
            hooks=self.hooks,
            trust=self.trust,
            memory=self.memory,
        )

    async def aclose(self) -> None:
        """Stop the runs this process executes (they become ``lost``, with a notice)."""
        await self.runner.aclose()
