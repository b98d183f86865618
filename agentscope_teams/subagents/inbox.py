"""Durable inboxes with at-least-once delivery into an agent's context.

An :class:`Inbox` is a store stream of :class:`Notice` entries plus a cursor key holding the highest
acknowledged sequence number. Delivery into an :class:`AgentState` is the take/acknowledge of
:mod:`agentscope_teams.agent.delivery` (shared with team mailboxes): :func:`take` (before a
reasoning step) returns the notices whose id is not already in the state's context (message metadata
``inbox_notice``) or in ``skip``; :func:`acknowledge` (after the state holding them was saved) moves
the cursor there with a CAS. A crash between the two reads the notices again, and the id check skips
those already in the saved context.
"""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import BaseModel, Field

from ..agent import delivery
from ..agent.extension import ReadMark
from ..errors import VersionConflict
from ..listing import UNREADABLE, unreadable
from ..message import Msg, UserMsg, utcnow
from ..state import AgentState
from ..store.base import BaseStore, Key

#: Metadata key of a message injected from an inbox; its value is the notice id.
INBOX_META = "inbox_notice"
_PAGE = 100


class Notice(BaseModel):
    """One inbox entry: a stable id (for de-duplication), text for the model, and its run."""

    id: str
    text: str
    run_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)

    def message(self, name: str) -> Msg:
        return UserMsg(self.text, name=name, metadata={INBOX_META: self.id, "run": self.run_id})


class Inbox:
    """A notice stream and its acknowledged cursor (keys: :class:`~agentscope_teams.keys.RunKeys`)."""

    def __init__(self, store: BaseStore, stream: Key, cursor_key: Key) -> None:
        self.store, self.stream, self.cursor_key = store, stream, cursor_key

    async def post(self, notice: Notice) -> int:
        """Append ``notice`` durably; returns its sequence number."""
        return await self.store.append(self.stream, notice.model_dump_json().encode())

    async def cursor(self) -> int:
        """The highest acknowledged sequence number (0: nothing acknowledged)."""
        entry = await self.store.get(self.cursor_key)
        return int(json.loads(entry.value)["seq"]) if entry else 0

    async def pending(self, after: int) -> list[tuple[int, Notice]]:
        """Every entry with a sequence number above ``after``, in order; an entry that cannot be
        decoded is logged and skipped, never blocking the ones after it."""
        out: list[tuple[int, Notice]] = []
        while True:
            page = await self.store.read(self.stream, after=after, limit=_PAGE)
            for seq, raw in page:
                try:
                    out.append((seq, Notice.model_validate_json(raw)))
                except UNREADABLE as exc:
                    unreadable("notice", str(seq), self.stream, exc)
            if len(page) < _PAGE:
                return out
            after = page[-1][0]

    async def unread(self) -> list[tuple[int, Notice]]:
        """Every entry after the acknowledged cursor (:class:`~..agent.delivery.DeliveryStream`)."""
        return await self.pending(await self.cursor())

    async def after(self, seq: int) -> list[tuple[int, Notice]]:
        return await self.pending(seq)

    def entry_id(self, entry: Notice) -> str:
        return entry.id

    async def ack(self, seq: int) -> None:
        """Move the cursor up to ``seq`` (never down), with a CAS retried on conflict."""
        while True:
            entry = await self.store.get(self.cursor_key)
            if entry is not None and int(json.loads(entry.value)["seq"]) >= seq:
                return
            body = json.dumps({"seq": seq}).encode()
            try:
                await self.store.put(
                    self.cursor_key, body, expected_version=entry.version if entry else 0
                )
            except VersionConflict:
                continue
            return


def injected_ids(state: AgentState) -> set[str]:
    """Ids of the notices already in the state's context."""
    return {str(i) for m in state.context if (i := m.metadata.get(INBOX_META)) is not None}


async def take(
    inbox: Inbox, mark: ReadMark, state: AgentState, skip: set[str] | None = None
) -> list[Notice]:
    """The notices of ``inbox`` not yet in ``state`` (nor in ``skip``); see the module docs.

    ``mark`` is the call's own: it remembers how far this call has read, so later steps read only
    new entries and :func:`acknowledge` knows what to acknowledge.
    """
    return await delivery.take(inbox, mark, injected_ids(state) | (skip or set()))


async def acknowledge(inbox: Inbox, mark: ReadMark) -> None:
    """Acknowledge what :func:`take` read in this call (call it after the state was saved)."""
    await delivery.acknowledge(inbox, mark)
