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

#: How many more turns in a row a member is woken for an offer after a turn that moved no task.
MAX_REWAKES = 3


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
    #: Per offer: the turns in a row that ended with it offered and no task moved.
    rewakes: Counter[OfferKey] = field(default_factory=Counter)
    call: asyncio.Task[None] | None = None
    #: The running call's cancel scope; see :meth:`cancel_call`.
    scope: anyio.CancelScope | None = None
    idle_since: float = field(default_factory=time.monotonic)
    failures: int = 0
    retry_at: float = 0.0

    def reoffer(
        self, offers: set[OfferKey], moved: bool, limit: int = MAX_REWAKES
    ) -> set[OfferKey]:
        """After a turn of the member that was offered ``offers`` ended: offer them again, so the
        next step wakes it for those still open (a member that did one of several tasks, or ended
        its turn holding one unreported, is woken for the rest). A turn that ``moved`` a task
        (claimed one it did not hold, or reported one) starts the count afresh; after ``limit``
        more turns in a row that moved none, an offer is not made again until its task changes
        (its key does). Returns the offers given up by this turn (each is given up once)."""
        if moved:  # the offers given up so far are made again too
            self.offered -= self.rewakes.keys()
            self.rewakes.clear()
        given_up: set[OfferKey] = set()
        for offer in offers:
            if self.rewakes[offer] > limit:  # given up by an earlier turn
                continue
            if self.rewakes[offer] == limit and not moved:
                self.rewakes[offer] += 1
                given_up.add(offer)
                continue
            if not moved:
                self.rewakes[offer] += 1
            self.offered.discard(offer)
        return given_up

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
