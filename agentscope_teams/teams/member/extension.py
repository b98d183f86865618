"""``TeamMemberExtension``: what each team member agent runs with.

The member tools acting as that member (:mod:`.tools`), its team preamble (:func:`preamble`), its
unread messages injected before each step (:mod:`..delivery`), its idle wake-ups compacted before
each call (:mod:`.chatter`), the prompts it was refused recorded
for the lead (:mod:`.review`), and the final text of a reply that reported nothing (no
completeTask / failTask / sendMessage / broadcastMessage) sent to the lead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import anyio

from ...agent.extension import CallScope, Extension
from ...errors import TeamError, UnknownTeamError
from ...message import Msg
from ...tools import PermissionEngine, Tool
from .. import delivery
from ..actor import TeamActor
from ..delivery import MemberCallData
from ..rules.models import Team, TeamMessage
from . import review
from .chatter import compact_idle
from .tools import member_tools

log = logging.getLogger(__name__)


def preamble(team: Team | None, name: str, description: str) -> str:
    """The team section of a member's system prompt."""
    if team is None:
        return ""
    mates = [f"{m.name} ({m.spec})" for m in team.members if m.name != name]
    lines = [
        "## Your team",
        f'You are member "{name}" of team "{team.name}" (id {team.id}), led by "{team.lead}".',
        "Teammates: " + (", ".join(mates) or "none yet") + ".",
    ]
    if description:
        lines.append(f"Team goal: {description}")
    lines += [
        "",
        "How to work with the team:",
        "- claimTask() takes the next task you may do (claimTask(task_id) a given one). Do it, "
        "then report with completeTask(task_id, result) or failTask(task_id, error).",
        "- listTasks(status) shows the board. Messages from teammates appear in your "
        "conversation; answer with sendMessage(to, content) or broadcastMessage(content).",
        "- If you end your turn without reporting, your final answer is sent to the lead.",
    ]
    return "\n".join(lines)


class TeamMemberExtension(Extension):
    """The team side of one member agent, acting as ``view.name`` in ``view.team_id``."""

    def __init__(
        self,
        view: TeamActor,
        *,
        description: str = "",
        on_change: Callable[[], None] | None = None,
        engine: PermissionEngine | None = None,
    ) -> None:
        self.view, self.description, self.on_change = view, description, on_change
        self.engine = engine  # its refused prompts are recorded in the member's record
        self.extra_tools: list[Tool] = []  # the member's exit_plan_mode (see builder.py)
        self.team: Team | None = None  # refreshed by the runtime before each call
        #: The unread page the runtime read to wake this member, for its next call's first step.
        self.unread: list[TeamMessage] | None = None
        self.held: set[str] = set()  # tasks claimed in this process and not reported yet
        #: Tasks this member claimed anew (not held already) or reported, in this process: the
        #: runtime tells a turn that moved work from one that did not (:meth:`~.slot.Slot.reoffer`).
        self.moved = 0
        #: Set by the runtime when a call's ``running`` status write ended (the write runs beside
        #: the session's load and the model's first request); see :meth:`status_ready`.
        self.status_written: anyio.Event | None = None

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    async def prepare(self, scope: CallScope) -> None:
        """Before the call: its earlier idle wake-ups dropped from the session (:mod:`.chatter`)."""
        compact_idle(scope.state)

    def tools(self, scope: CallScope) -> list[Tool]:
        return [*member_tools(self, scope), *self.extra_tools]

    def system_prompt(self, scope: CallScope) -> str:
        return preamble(self.team, self.view.name, self.description)

    async def _review(self, scope: CallScope) -> None:
        """Record refused prompts; leave plan mode once the lead approved the plan."""
        while self.engine is not None and self.engine.refused:
            await review.note_prompt(self.view, self.engine.refused.pop(0))
        context = scope.state.permission_context
        if scope.agent.permissions.effective_mode(context) != "plan":
            return  # only a member in plan mode has a plan to approve (exit_plan_mode refuses)
        approved = await review.take_approved(self.view)
        if approved is not None:
            context.mode, context.mode_chosen = review.mode_after_plan(approved), True

    async def status_ready(self) -> None:
        """Wait for the call's ``running`` status write to end (once a call): the member's tools
        do before their first team call, so a claim's team guard is the record that write
        returned (one claim script, not a stale guard and a read). The model's first request
        does not wait for it: a model answers after the write ended, or the tool waits."""
        written, self.status_written = self.status_written, None
        if written is not None:
            await written.wait()

    async def inject(self, scope: CallScope) -> list[Msg]:
        unread, self.unread = self.unread, None  # used once
        try:
            msgs = await delivery.take(
                self.view, scope.local(self, MemberCallData).mark, scope.state, unread
            )
        except UnknownTeamError:
            return []
        # then the plan review: the lead's answer is written before its message is sent, so a
        # member that reads "approved" in ``msgs`` has also left plan mode by its next tool call
        with contextlib.suppress(UnknownTeamError):
            await self._review(scope)
        return msgs

    async def after_save(self, scope: CallScope) -> None:
        """Acknowledge the messages this call read; a team deleted since has no inbox left to
        acknowledge (the lead's :meth:`~..lead.extension.TeamLeadExtension.after_save` alike)."""
        with contextlib.suppress(UnknownTeamError):
            await delivery.acknowledge(self.view, scope.local(self, MemberCallData).mark)

    def works_after_save(self, scope: CallScope) -> bool:
        """When this call read messages it has not acknowledged yet, or when its reply may still
        be sent to the lead (nothing was reported): that send stays under the session lease so a
        member's replies reach the lead in the order of its calls (a next call of this member's
        session, in another process, cannot start and report before this reply is sent)."""
        data = scope.local(self, MemberCallData)
        return data.mark.to_acknowledge() is not None or not data.reported

    async def on_reply_end(self, scope: CallScope, final: Msg) -> None:
        while self.engine is not None and self.engine.refused:
            try:
                await review.note_prompt(self.view, self.engine.refused.pop(0))
            except TeamError as exc:
                log.warning("could not record a refused prompt of %s: %s", self.view.name, exc)
        text = final.get_text_content().strip()
        if scope.local(self, MemberCallData).reported or not text:
            return
        try:
            lead = self.team.lead if self.team is not None else (await self.view.team()).lead
            await self.view.send(lead, text)
        except TeamError as exc:
            log.warning("could not send the reply of %s to the lead: %s", self.view.name, exc)
        self.changed()
