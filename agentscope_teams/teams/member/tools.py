"""The LLM tools of Agent Teams: the members' (the lead's are bound in :mod:`..lead.tools`).

Lead: ``createTeam``, ``spawnMember``, ``approvePlan``, ``endTeam``, ``deleteTeam``, ``waitForTeam``,
``assignTask``, ``listTasks``, ``sendMessage``, ``broadcastMessage`` (every one but ``createTeam`` takes an optional ``team_id``, by
default the lead's current team, kept in its :class:`~..lead.state.TeamLeadState`). Members: ``claimTask``,
``completeTask``, ``failTask``, ``listTasks``, ``sendMessage``, ``broadcastMessage``.

Schemas come from the template functions of :mod:`..rules.schemas`; :func:`~..lead.tools.lead_tools`
and :func:`member_tools` bind copies to one call. The acting identity is bound by the extension (the lead's name, or the member
the agent runs as) and is never an argument. Every team rule a model can break (unknown member, spec
or task, a blocked or finished task, a task it does not own) becomes a :class:`ToolError`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...agent.extension import CallScope
from ...errors import TeamError, ToolError
from ...tools import Tool
from ...tracing import task_wakeup
from .. import summary
from ..actor import TeamActor
from ..delivery import MemberCallData
from ..results import BoardListing, BroadcastSent, MessageSent, TaskBrief, TaskClaimed, TaskReported
from ..rules.models import TaskStatus
from ..rules.schemas import MEMBER_TEMPLATES

if TYPE_CHECKING:
    from .extension import TeamMemberExtension


def guarded(fn: Callable[..., Awaitable[object]]) -> Callable[..., Awaitable[object]]:
    """Team rule violations and invalid identifiers become tool errors the model can read."""

    @functools.wraps(fn)
    async def run(**kwargs: Any) -> object:
        try:
            return await fn(**kwargs)
        except (TeamError, ValueError) as exc:
            raise ToolError(str(exc)) from None

    return run


def bind_templates(
    templates: dict[str, Tool], impl: dict[str, Callable[..., Awaitable[object]]]
) -> list[Tool]:
    return [dataclasses.replace(t, func=guarded(impl[name])) for name, t in templates.items()]


def member_tools(ext: TeamMemberExtension, scope: CallScope) -> list[Tool]:
    """The member's six tools, acting as the member ``ext`` runs (never as an argument says);
    each waits for the call's status write first (:meth:`~.extension.TeamMemberExtension.status_ready`)."""
    calls = MemberToolCalls(ext, scope)
    impl: dict[str, Callable[..., Awaitable[object]]] = {
        "claimTask": calls.claim,
        "completeTask": calls.complete,
        "failTask": calls.fail,
        "listTasks": calls.list,
        "sendMessage": calls.send,
        "broadcastMessage": calls.broadcast,
    }
    return bind_templates(MEMBER_TEMPLATES, {n: _after_status(ext, f) for n, f in impl.items()})


def _after_status(
    ext: TeamMemberExtension, fn: Callable[..., Awaitable[object]]
) -> Callable[..., Awaitable[object]]:
    """``fn`` once the call's ``running`` status write ended."""

    @functools.wraps(fn)
    async def run(**kwargs: Any) -> object:
        await ext.status_ready()
        return await fn(**kwargs)

    return run


class MemberToolCalls:
    """The member tools of one call; identity comes from ``ext.view``."""

    def __init__(self, ext: TeamMemberExtension, scope: CallScope) -> None:
        self.ext, self.scope = ext, scope
        self.view: TeamActor = ext.view

    def _reported(self, task: bool = False) -> None:
        self.scope.local(self.ext, MemberCallData).reported = True
        self.ext.moved += task
        self.ext.changed()

    async def claim(self, task_id: str | None) -> TaskClaimed:
        # a task it holds already comes first (e.g. after a takeover): the board finds it
        task = await self.view.claim(task_id, prefer_own=True)
        if task is None:
            open_ = [t for t in await self.view.open_board() if not t.status.finished]
            return TaskClaimed(member=self.view.name, open_count=len(open_))
        task_wakeup(task, self.view.name)  # the claim landed: the member's wake-up latency
        self.ext.moved += task.id not in self.ext.held
        self.ext.held.add(task.id)
        self.ext.changed()
        brief = TaskBrief.of(task)
        return TaskClaimed(member=self.view.name, task=brief, description=task.description)

    async def complete(self, task_id: str, result: str, data: Any = None) -> TaskReported:
        task = await self.view.complete(task_id, result, data)
        self.ext.held.discard(task.id)
        self._reported(task=True)
        if task.status is TaskStatus.FAILED:  # its stored result schema is refused now
            return TaskReported(task_id=task.id, status="failed", note=task.error or "")
        return TaskReported(task_id=task.id, status="completed")

    async def fail(self, task_id: str, error: str) -> TaskReported:
        task = await self.view.fail(task_id, error)
        self.ext.held.discard(task.id)
        self._reported(task=True)
        return TaskReported(task_id=task.id, status="failed")

    async def list(self, status: str | None) -> BoardListing:
        return BoardListing.of(await self.view.tasks(summary.parse_status(status)))

    async def send(self, to: str, content: str) -> MessageSent:
        msg = await self.view.send(to, content)
        self._reported()
        return MessageSent(to=to, seq=msg.seq)

    async def broadcast(self, content: str) -> BroadcastSent:
        sent = await self.view.broadcast(content)
        self._reported()
        return BroadcastSent(recipients=[m.recipient for m in sent], by_lead=False)
