"""What a :class:`~.runtime.TeamRuntime` keeps per team (:class:`TeamRef`) and per member
(:class:`Slot`): the member's lease, its agent, the work already offered to it, its running call."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ...agent.harness import SessionAgent
from ...agent.lease import Lease
from ...context import RuntimeContext
from ...keys import TeamKeys
from ...store.base import Key
from ...usage import Budget
from .builder import MemberBuilder
from .work import OfferKey

if TYPE_CHECKING:
    from .extension import TeamMemberExtension


def lease_key(ref: TeamRef, member: str) -> Key:
    """The key of the lease of ``member`` (at most one process runs a member)."""
    return TeamKeys(ref.ctx.owner_scope(), ref.team_id).member_lease(member)


@dataclass
class TeamRef:
    """A team this runtime serves: the owner's context, how to build its members, and the
    lead's budgets its members draw on besides their own (a worker's, from the team's directory
    record; in the lead's process they are inherited, so none here)."""

    ctx: RuntimeContext
    team_id: str
    builder: MemberBuilder
    on_gone: Callable[[], Awaitable[None]] | None = None
    #: Run once a step finds the team ended (a worker takes its directory record out, if a
    #: record of a team that ended before teams left the directory at their end is still there).
    on_ended: Callable[[], Awaitable[None]] | None = None
    budgets: Mapping[str, Budget] = field(default_factory=dict)

    @property
    def key(self) -> Key:
        return (*self.ctx.owner_scope(), self.team_id)


@dataclass
class Slot:
    """One member served by this process."""

    ref: TeamRef
    name: str
    lease: Lease | None = None
    agent: SessionAgent | None = None
    ext: TeamMemberExtension | None = None
    offered: set[OfferKey] = field(default_factory=set)
    #: How often a task the member still holds after a call was offered to it again.
    rewakes: Counter[OfferKey] = field(default_factory=Counter)
    call: asyncio.Task[None] | None = None
    #: The running call's cancel scope; see :meth:`cancel_call`.
    scope: anyio.CancelScope | None = None
    idle_since: float = field(default_factory=time.monotonic)
    failures: int = 0
    retry_at: float = 0.0

    def reoffer_held(self, offers: set[OfferKey], limit: int) -> None:
        """Offer again, up to ``limit`` times each, the in-progress tasks of a call that ended without
        reporting them (for example at its step limit): they are the member's to finish."""
        for offer in offers:
            if offer[1] == "in_progress" and self.rewakes[offer] < limit:
                self.rewakes[offer] += 1
                self.offered.discard(offer)

    def cancel_call(self) -> None:
        """Cancel the running call through its anyio scope, not ``Task.cancel()``: a native cancel
        cuts through the call's shielded sections (a save in flight, its last status write)."""
        if self.scope is not None:
            self.scope.cancel()

    @property
    def busy(self) -> bool:
        return self.call is not None and not self.call.done()

    async def beat(self) -> None:
        """Renew the member's lease (a lost one cancels its call) and, during a call, the leases of
        the tasks it claimed."""
        lease = self.lease  # the runtime may release it (slot.lease = None) while this renews
        if lease is None:
            return
        await lease.renew()
        if lease.lost:
            if self.lease is lease:
                self.lease = None
            self.cancel_call()
            return
        if self.busy and self.ext is not None:
            for task_id in list(self.ext.held):
                try:
                    await self.ext.view.renew_task_lease(task_id)
                except Exception:  # reported, released or taken: stop renewing it
                    self.ext.held.discard(task_id)
