"""Mailbox messages into an agent's context: at-least-once, acknowledged after the state is saved.

Before each reasoning step :func:`take` reads the caller's inbox after what this call already read
(the first step starts at the acknowledged cursor) and returns, as user messages, those whose id
(``team_id/recipient/seq``, in the message metadata under :data:`TEAM_MESSAGE`) is not already in the
state's context. :func:`acknowledge` (from ``after_save``) moves the cursor to what was read. A crash
between the two re-reads the messages, and the id check keeps them from appearing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..agent.extension import ReadMark
from ..message import Msg, UserMsg
from ..state import AgentState
from .actor import TeamActor
from .rules.models import TeamMessage

#: Metadata key of an injected team message; its value is ``team_id/recipient/seq``.
TEAM_MESSAGE = "team_message"
#: Metadata key of an injected team message's sender.
TEAM_SENDER = "team_sender"
#: Messages read from an inbox per round trip.
INBOX_PAGE = 100


def message_id(team_id: str, msg: TeamMessage) -> str:
    return f"{team_id}/{msg.recipient}/{msg.seq}"


def as_msg(team_id: str, msg: TeamMessage) -> Msg:
    kind = "Broadcast" if msg.broadcast else "Message"
    text = f"{kind} from {msg.sender} (team {team_id}):\n{msg.content}"
    meta = {TEAM_MESSAGE: message_id(team_id, msg), TEAM_SENDER: msg.sender}
    return UserMsg(text, name="team", metadata=meta)


def injected(state: AgentState) -> set[str]:
    return {str(v) for m in state.context if (v := m.metadata.get(TEAM_MESSAGE)) is not None}


@dataclass
class MemberCallData:
    """What one call of a member remembers: how far it read its inbox, whether it reported."""

    mark: ReadMark = field(default_factory=ReadMark)
    reported: bool = False


@dataclass
class LeadCallData:
    """What one call of a lead remembers: the team views it read, and how far, by team id."""

    views: dict[str, TeamActor] = field(default_factory=dict)
    marks: dict[str, ReadMark] = field(default_factory=dict)


async def take(
    view: TeamActor,
    mark: ReadMark,
    state: AgentState,
    unread: list[TeamMessage] | None = None,
) -> list[Msg]:
    """The unseen messages of ``view``'s inbox; ``mark`` (the call's own) remembers how far it read.

    ``unread``: the first page of unread messages if the caller read it already (the runtime did,
    to wake the member), so a first step does not read it again."""
    if mark.read is None:
        page = unread if unread is not None else await view.unread(limit=INBOX_PAGE)
    else:
        page = await view.read(after=mark.read)
    messages: list[TeamMessage] = []
    while page:
        messages += page
        if len(page) < INBOX_PAGE:
            break
        page = await view.read(after=page[-1].seq, limit=INBOX_PAGE)
    seen = injected(state)
    fresh: list[Msg] = []
    for msg in messages:
        mid = message_id(view.team_id, msg)
        if mid not in seen:
            seen.add(mid)
            fresh.append(as_msg(view.team_id, msg))
    if messages:  # until something is read, the next step starts at the cursor again
        mark.read = messages[-1].seq
    return fresh


async def acknowledge(view: TeamActor, mark: ReadMark) -> None:
    """Acknowledge what :func:`take` read in this call (call it after the state was saved)."""
    seq = mark.to_acknowledge()
    if seq is None:
        return
    await view.acknowledge(seq)
    mark.acked = seq
