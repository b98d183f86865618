"""Mailbox messages into an agent's context: at-least-once, acknowledged after the state is saved.

The take/acknowledge of :mod:`agentscope_teams.agent.delivery` (shared with subagent inboxes) over
the caller's inbox: before each reasoning step :func:`take` returns, as user messages, the messages
whose id (``team_id/recipient/seq``, in the message metadata under :data:`TEAM_MESSAGE`) is not
already in the state's context; :func:`acknowledge` (from ``after_save``) moves the cursor to what
was read. A crash between the two reads the messages again, and the id check keeps them from
appearing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..agent import delivery
from ..agent.extension import ReadMark
from ..message import Msg, UserMsg
from ..state import AgentState
from .actor import TeamActor
from .mailbox import NOTICE_SENDER
from .rules.models import TeamMessage

#: Metadata key of an injected team message; its value is ``team_id/recipient/seq``.
TEAM_MESSAGE = "team_message"
#: Metadata key of an injected team message's sender.
TEAM_SENDER = "team_sender"
#: Messages read from an inbox per round trip.
INBOX_PAGE = 100


def message_id(team_id: str, msg: TeamMessage) -> str:
    return f"{team_id}/{msg.recipient}/{msg.seq}"


def as_msg(team_id: str, msg: TeamMessage, *, ended: bool = False) -> Msg:
    """``msg`` as a user message; ``ended``: a late message of a team that ended (the lead reads
    those once, after the end: :meth:`~.lead.extension.TeamLeadExtension.inject`)."""
    team = f"team {team_id}, which has ended" if ended else f"team {team_id}"
    if msg.sender == NOTICE_SENDER:  # stands for messages that could not be read
        text = f"Mailbox notice ({team}):\n{msg.content}"
    else:
        kind = "Broadcast" if msg.broadcast else "Message"
        text = f"{kind} from {msg.sender} ({team}):\n{msg.content}"
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


class TeamInbox:
    """``view``'s inbox as a :class:`~agentscope_teams.agent.delivery.DeliveryStream`, read a page
    at a time; ``first``: its first unread page, when the caller read it already."""

    def __init__(self, view: TeamActor, first: list[TeamMessage] | None = None) -> None:
        self.view, self.first = view, first

    async def unread(self) -> list[tuple[int, TeamMessage]]:
        first = self.first if self.first is not None else await self.view.unread(limit=INBOX_PAGE)
        return await self._rest(first)

    async def after(self, seq: int) -> list[tuple[int, TeamMessage]]:
        return await self._rest(await self.view.read(after=seq))

    async def _rest(self, page: list[TeamMessage]) -> list[tuple[int, TeamMessage]]:
        messages: list[TeamMessage] = []
        while page:
            messages += page
            if len(page) < INBOX_PAGE and not getattr(page, "problems", None):
                break  # a short page is the last, unless runs of unreadable ones were folded
            page = await self.view.read(after=page[-1].seq, limit=INBOX_PAGE)
        return [(m.seq, m) for m in messages]

    async def ack(self, seq: int) -> None:
        await self.view.acknowledge(seq)

    def entry_id(self, entry: TeamMessage) -> str:
        return message_id(self.view.team_id, entry)


async def take(
    view: TeamActor,
    mark: ReadMark,
    state: AgentState,
    unread: list[TeamMessage] | None = None,
    *,
    ended: bool = False,
) -> list[Msg]:
    """The unseen messages of ``view``'s inbox; ``mark`` (the call's own) remembers how far it read.

    ``unread``: the first page of unread messages if the caller read it already (the runtime did,
    to wake the member), so a first step does not read it again. ``ended``: the team has ended
    (the messages are shown as late ones, :func:`as_msg`)."""
    fresh = await delivery.take(TeamInbox(view, unread), mark, injected(state))
    return [as_msg(view.team_id, msg, ended=ended) for msg in fresh]


async def acknowledge(view: TeamActor, mark: ReadMark) -> None:
    """Acknowledge what :func:`take` read in this call (call it after the state was saved)."""
    await delivery.acknowledge(TeamInbox(view), mark)
