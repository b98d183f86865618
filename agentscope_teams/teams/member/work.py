"""What wakes a member: unread messages and tasks it may take, and the prompt that tells it so.

The tasks come from :meth:`~..protocol.TeamClient.open_board` (the open index, never a scan of the
whole board). A task is *offerable* to member ``m`` when the claim rule
(:func:`~..rules.eligibility.claim_verdict`) lets ``m`` claim it: pending, unblocked and unassigned or
assigned to ``m``; in progress and owned by ``m`` (a process that took the member over finishes its
tasks); or in progress with an expired lease and claimable by ``m``. A task whose lease ran out with
every attempt used is offered too: the member's claim records it as failed. Each offer is keyed by
(task id, status, attempts), an in-progress task whose lease ran out counting as status ``lapsed``:
a task that changed (its lease lapsed, it came back to pending) is a new offer. A task offered
already is offered again when the member's turn ended without taking it, a bounded number of turns
in a row (:meth:`~.slot.Slot.reoffer`), never in a loop to a member that chose not to take it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ...message import TEAM_WAKE_KEY, Msg, UserMsg, utcnow
from ..delivery import INBOX_PAGE
from ..protocol import TeamClient
from ..rules import eligibility
from ..rules.models import Task, TaskStatus, Team, TeamMessage

OfferKey = tuple[str, str, int]
#: The status part of the offer key of an in-progress task whose lease ran out.
LAPSED = "lapsed"


def offerable(
    task: Task, member: str, states: Mapping[str, TaskStatus | None], now: datetime
) -> bool:
    """Whether to wake ``member`` for ``task``; ``states`` holds the status of its blockers."""
    blockers = {b: states.get(b) for b in task.blocked_by}
    return eligibility.offerable(eligibility.claim_verdict(task, member, blockers, now))


def offer_key(task: Task, now: datetime) -> OfferKey:
    """What an offer of ``task`` is known by: a lapsed lease makes a new offer (its owner, woken
    for it while held, is woken again: its claim takes it up or fails it)."""
    status = LAPSED if task.lease_expired(now) else task.status.value
    return (task.id, status, task.attempts)


#: Metadata key of a wake-up message: ``{"own": [task ids], "free": [task ids]}``.
WAKE = TEAM_WAKE_KEY
#: The most other tasks' traces one wake-up's call links to.
MAX_LINKS = 32


@dataclass
class Work:
    """New work for one member: the prompt to send, the offers it makes, and the ids of the tasks
    it owns (not reported yet) and may claim."""

    prompt: str
    offers: set[OfferKey]
    own: list[str] = field(default_factory=list)
    free: list[str] = field(default_factory=list)
    #: The trace the member's call joins: the first offered task's, else the team's.
    trace: dict[str, str] | None = None
    #: The other offered tasks' trace contexts, which the member's call links to.
    linked: list[dict[str, str]] = field(default_factory=list)
    #: The first page of the member's unread messages, as read to find this work.
    unread: list[TeamMessage] = field(default_factory=list)

    def message(self) -> Msg:
        """The wake-up message: the prompt, with the task ids as data in its metadata."""
        return UserMsg(
            self.prompt, name="team", metadata={WAKE: {"own": self.own, "free": self.free}}
        )


async def find_work(
    client: TeamClient,
    team: Team,
    member: str,
    tasks: list[Task],
    offered: set[OfferKey],
    unread: list[TeamMessage] | None = None,
) -> Work | None:
    """The member's new work (unread messages, tasks not offered yet), or None; ``tasks`` is what
    :meth:`~..protocol.TeamClient.open_board` returned. ``unread``: the first page of the
    member's unread messages when the caller read it already (the runtime's step reads it beside
    the board, straight from the mailbox); else the client reads it."""
    now, states = utcnow(), {t.id: t.status for t in tasks}
    tasks = [t for t in tasks if offerable(t, member, states, now)]
    offers = {offer_key(t, now) for t in tasks}
    if unread is None:
        unread = await client.unread(team.id, member, limit=INBOX_PAGE)
    if not unread and not offers - offered:
        return None
    own = [t.id for t in tasks if t.owner == member]
    free = [t.id for t in tasks if t.owner != member]
    contexts = [t.trace_context for t in tasks if t.trace_context]
    trace = contexts[0] if contexts else team.trace_context
    linked = [c for i, c in enumerate(contexts) if c != trace and c not in contexts[:i]]
    linked = linked[:MAX_LINKS]
    return Work(prompt(team, member, unread, tasks), offers, own, free, trace, linked, unread)


def prompt(team: Team, member: str, unread: list[TeamMessage], tasks: list[Task]) -> str:
    lines = [f"You have new work in team {team.name!r} ({team.id}):"]
    if unread:
        senders = ", ".join(sorted({m.sender or "the mailbox" for m in unread}))
        lines.append(f"- new messages from {senders} (shown in your conversation)")
    own = [t for t in tasks if t.owner == member]
    free = [t for t in tasks if t.owner != member]
    if own:
        lines.append("- tasks you own that are not reported yet: " + _ids(own))
    if free:
        lines.append("- tasks you may claim: " + _ids(free))
    lines.append(
        "Claim a task with claimTask, report it with completeTask or failTask, and answer "
        "messages with sendMessage."
    )
    return "\n".join(lines)


def _ids(tasks: list[Task]) -> str:
    return "; ".join(f"{t.id} {t.title!r}" for t in tasks)
