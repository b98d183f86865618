"""The tools a parent agent uses to delegate: agent_spawn, agent_send, agent_wait, agent_cancel,
agent_list.

The schemas are built once from the template functions below; :func:`bind_tools` gives each call
copies bound to its :class:`CallScope` (identity, state, workspace). Every lookup is confined to the
caller's (org, user, session) and parent agent: a run id from anywhere else is "no such run".
Model mistakes (unknown agent, empty task, too many runs, unknown run) are tool errors.

``agent_send`` to a running child queues the message (a durable stream injected before the child's
next step; if the child was finishing, it runs one more turn to read it). To a finished child it
starts a new run continuing the same child session (same label; an unlabelled run's isolated
workspace is gone by then, so give a label to keep files across turns) and waits like agent_spawn.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from pydantic import Field

from ..agent.extension import CallScope
from ..errors import ToolError
from ..message import new_id
from ..tools import Tool
from ..tools.decorator import make_tool
from .inbox import Notice
from .memo import SubagentMemo
from .results import (
    MailQueued,
    RunCancel,
    RunCompleted,
    RunListing,
    RunPending,
    RunStarted,
)
from .runs import RunBook, RunRecord, RunStatus
from .runtime import CANCELLED_BY_PARENT, Handle
from .spec import SubagentSpec
from .workspace import janitor

if TYPE_CHECKING:
    from .extension import SubagentExtension

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


async def agent_spawn(
    agent: str,
    task: str,
    timeout_seconds: Annotated[float, Field(ge=0, le=MAX_TIMEOUT)] = DEFAULT_TIMEOUT,
    label: Annotated[str | None, Field(pattern=LABEL_PATTERN)] = None,
) -> str:
    """Delegate a task to a subagent, which works in its own session and returns its answer.

    With timeout_seconds > 0 wait for the answer; if it takes longer the run continues in the
    background. With 0 start it in the background and get its run id at once. Results of background
    runs arrive as a message when they end. Several spawns in one step run in parallel.

    Args:
        agent: Name of the subagent, from the list in the system prompt.
        task: The complete task, with every detail the subagent needs (it does not see your chat).
        timeout_seconds: Seconds to wait for the answer; 0 runs it in the background.
        label: Optional session name: the same agent and label later continue that conversation
            and keep its workspace.
    """
    raise NotImplementedError  # template: bind_tools supplies the implementation


async def agent_send(run: str, message: str) -> str:
    """Send a message to a subagent run: queued if it is running, a new turn if it has finished.

    Args:
        run: The run id.
        message: What to tell the subagent.
    """
    raise NotImplementedError


async def agent_wait(
    run: str, timeout_seconds: Annotated[float, Field(ge=0, le=MAX_TIMEOUT)] = DEFAULT_TIMEOUT
) -> str:
    """Wait for a subagent run to end and return its result (or its status after the timeout).

    Args:
        run: The run id.
        timeout_seconds: Seconds to wait at most; 0 only checks.
    """
    raise NotImplementedError


async def agent_cancel(run: str) -> str:
    """Stop a running subagent run and remove its workspace.

    Args:
        run: The run id.
    """
    raise NotImplementedError


async def agent_list() -> str:
    """List the subagent runs of this session with their status."""
    raise NotImplementedError


_TEMPLATES = [
    # plan mode lets it spawn a child that runs in plan mode too (SubagentExtension.launch)
    dataclasses.replace(make_tool(agent_spawn, concurrency_safe=True), plan_checked=True),
    make_tool(agent_send),
    make_tool(agent_wait, concurrency_safe=True),
    make_tool(agent_cancel),
    make_tool(agent_list, read_only=True),
]


def bind_tools(ext: SubagentExtension, scope: CallScope) -> list[Tool]:
    """The five tools, bound to one call."""
    calls = _Calls(ext, scope)
    impl: dict[str, Any] = {
        "agent_spawn": calls.spawn,
        "agent_send": calls.send,
        "agent_wait": calls.wait,
        "agent_cancel": calls.cancel,
        "agent_list": calls.list,
    }
    return [dataclasses.replace(t, func=impl[t.name]) for t in _TEMPLATES]


def outcome(rec: RunRecord) -> RunCompleted:
    """A finished run as a tool result; failures are tool errors."""
    if rec.status is RunStatus.COMPLETED:
        return RunCompleted(
            run_id=rec.run_id,
            spec=rec.spec,
            result=rec.result or "",
            output=rec.output,
            stopped=rec.stop_note(),
        )
    raise ToolError(f"Run {rec.run_id} ({rec.spec}) {rec.status}: {rec.error}")


class _Calls:
    """The tool implementations for one call of the parent."""

    def __init__(self, ext: SubagentExtension, scope: CallScope) -> None:
        self.ext, self.scope = ext, scope
        self.book = RunBook.for_ctx(ext.agent.store, scope.ctx)
        self.memo = SubagentMemo.of(scope.state)

    def _spec(self, name: str) -> SubagentSpec:
        spec = self.ext.specs.get(name)
        if spec is None:
            available = ", ".join(self.ext.specs) or "none"
            raise ToolError(f"unknown agent {name!r}; available agents: {available}")
        return spec

    async def _load(self, run: str) -> RunRecord:
        run = run.strip()
        rec = await self.book.load(run) if run and "\x00" not in run else None
        if rec is None or rec.parent_agent != self.ext.agent.name:
            raise ToolError(f"no such run {run}; agent_list shows the runs of this session")
        return rec

    async def _promote(self, h: Handle) -> RunRecord:
        def promote(r: RunRecord) -> RunRecord | None:
            return r.model_copy(update={"background": True}) if r.status.active else None

        rec = await self.book.update(h.run_id, promote) or h.record
        if rec.status.active:
            self.memo.add_watch(rec.run_id)
        return rec

    async def _await(self, h: Handle, seconds: float) -> RunCompleted | RunPending:
        try:
            finished = await self.ext.runner.wait(h, seconds)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._promote(h)  # the parent stopped waiting: deliver it later instead
            raise
        rec = h.record if finished else await self._promote(h)
        if rec.status.active:
            return RunPending(
                run_id=rec.run_id,
                spec=rec.spec,
                status=rec.status,
                seconds=seconds,
                background=True,
            )
        if rec.background:
            self.memo.mark_delivered(rec.run_id, rec.status)
        return outcome(rec)

    async def spawn(
        self, agent: str, task: str, timeout_seconds: float, label: str | None
    ) -> RunCompleted | RunPending | RunStarted:
        spec = self._spec(agent)
        if not task.strip():
            raise ToolError("task is empty: describe what the subagent should do")
        if spec.background:  # the spec says so: always in the background, whatever was asked
            timeout_seconds = 0
        if spec.initial_prompt:
            task = f"{spec.initial_prompt}\n\n{task}"
        h = await self.ext.launch(self.scope, spec, task, label, background=timeout_seconds == 0)
        if timeout_seconds > 0:
            return await self._await(h, timeout_seconds)
        self.memo.add_watch(h.run_id)
        return RunStarted(run_id=h.run_id, spec=agent)

    async def send(self, run: str, message: str) -> RunCompleted | RunPending | MailQueued:
        if not message.strip():
            raise ToolError("message is empty: write what the subagent should know")
        rec = await self._load(run)
        if rec.status.active:
            text = f"Message from {self.ext.agent.name}:\n{message}"
            seq = await self.book.mail(run).post(Notice(id=new_id("m-"), text=text, run_id=run))

            def fence(r: RunRecord) -> RunRecord | None:
                active = r.status.active and r.mail_seq < seq
                return r.model_copy(update={"mail_seq": seq}) if active else None

            rec = await self.book.update(run, fence) or rec
            if rec.status.active:
                return MailQueued(run_id=run)
        h = await self.ext.launch(
            self.scope, self._spec(rec.spec), message, rec.label, background=False, continues=rec
        )
        return await self._await(h, DEFAULT_TIMEOUT)

    async def wait(self, run: str, timeout_seconds: float) -> RunCompleted | RunPending:
        rec = await self._load(run)
        h = self.ext.runner.handle(self.book, run)
        if rec.status.active and h is not None:
            await self.ext.runner.wait(h, timeout_seconds)
            rec = await self._load(run)
        elif rec.status.active:
            with anyio.move_on_after(timeout_seconds):
                delay = 0.05
                while rec.status.active:
                    await anyio.sleep(delay)
                    delay = min(delay * 2, 1.0)
                    rec = await self._load(run)
        if rec.status.active:
            return RunPending(
                run_id=run,
                spec=rec.spec,
                status=rec.status,
                seconds=timeout_seconds,
                background=False,
            )
        if rec.background:
            self.memo.mark_delivered(rec.run_id, rec.status)
        return outcome(rec)

    async def cancel(self, run: str) -> RunCancel:
        rec = await self._load(run)
        if not rec.status.active:
            return RunCancel(run_id=run, spec=rec.spec, outcome="already-ended", status=rec.status)
        h = self.ext.runner.handle(self.book, run)
        if h is None:

            def request(r: RunRecord) -> RunRecord | None:
                wanted = r.status.active and not r.cancel_requested
                return r.model_copy(update={"cancel_requested": True}) if wanted else None

            await self.book.update(run, request)
            return RunCancel(
                run_id=run,
                spec=rec.spec,
                outcome="requested",
                status=rec.status,
                within_seconds=self.ext.lease_ttl / 3,
            )
        h.cancel(CANCELLED_BY_PARENT)
        await self.ext.runner.wait(h, DEFAULT_TIMEOUT)
        rec = await self._load(run)
        self.memo.unwatch(run)
        ended = "cancelled" if rec.status is RunStatus.CANCELLED else "ended-first"
        return RunCancel(run_id=run, spec=rec.spec, outcome=ended, status=rec.status)

    async def list(self) -> RunListing:
        await janitor(self.ext.agent.store, self.ext.root, self.scope.ctx)
        runs = [r for r in await self.book.list() if r.parent_agent == self.ext.agent.name]
        return RunListing.of(runs)
