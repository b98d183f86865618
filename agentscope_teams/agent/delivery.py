"""At-least-once delivery of a durable stream into an agent's context: take, then acknowledge.

Used by subagent inboxes (:mod:`agentscope_teams.subagents.inbox`) and team mailboxes
(:mod:`agentscope_teams.teams.delivery`); each adapts its stream to :class:`DeliveryStream`.

1. :func:`take` (before a reasoning step) reads the entries after what this call read already (its
   first step starts at the stream's acknowledged cursor) and returns those whose id is not in
   ``seen`` (the ids already in the agent's context); the caller appends them to the context. The
   call's :class:`~.extension.ReadMark` remembers how far it read.
2. :func:`acknowledge` (after the state holding them was saved) moves the stream's cursor there.

A crash between the two reads the entries again later, and the id check skips those already in the
saved context, so nothing is lost and nothing appears twice. Duplicate entries (one id appended
twice) are skipped the same way.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from .extension import ReadMark

E = TypeVar("E")


class DeliveryStream(Protocol[E]):
    """A durable stream of entries with an acknowledged cursor."""

    async def unread(self) -> list[tuple[int, E]]:
        """Every entry after the acknowledged cursor, in order, with its sequence number."""
        ...

    async def after(self, seq: int) -> list[tuple[int, E]]:
        """Every entry after ``seq``, in order."""
        ...

    async def ack(self, seq: int) -> None:
        """Move the acknowledged cursor up to ``seq`` (never down)."""
        ...

    def entry_id(self, entry: E) -> str:
        """The stable id that tells an entry already in the context."""
        ...


async def take(stream: DeliveryStream[E], mark: ReadMark, seen: set[str]) -> list[E]:
    """The entries of ``stream`` not yet delivered (ids not in ``seen``, which is updated); see the
    module docs. ``mark`` is the call's own."""
    if mark.read is None:
        entries = await stream.unread()
    else:
        entries = await stream.after(mark.read)
    fresh: list[E] = []
    for _, entry in entries:
        entry_id = stream.entry_id(entry)
        if entry_id not in seen:
            seen.add(entry_id)
            fresh.append(entry)
    if entries:  # until something is read, the next step starts at the cursor again
        mark.read = entries[-1][0]
    return fresh


async def acknowledge(stream: DeliveryStream[E], mark: ReadMark) -> None:
    """Acknowledge what :func:`take` read in this call (call it after the state was saved)."""
    seq = mark.to_acknowledge()
    if seq is None:
        return
    await stream.ack(seq)
    mark.acked = seq
