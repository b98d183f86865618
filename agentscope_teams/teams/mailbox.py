"""The team mailbox: one durable stream per recipient plus an acknowledged cursor per member.

* A member's inbox (:meth:`~agentscope_teams.keys.TeamKeys.inbox`) is a store stream: ``append``
  allocates the message's ``seq`` in the store (unique across processes and restarts), and ``read``
  returns messages in ``seq`` order. Messages one sender sends to one recipient keep their order.
* Its cursor key (:meth:`~agentscope_teams.keys.TeamKeys.cursor`) holds the last ``seq`` the member
  acknowledged. It is updated with a conditional write and never moves backwards, so
  :meth:`Mailbox.unread` resumes where the member stopped, in a new client or a new process.
* A broadcast is one append per recipient, up to :data:`BROADCAST_CONCURRENCY` at a time (not atomic
  as a whole: a crash in the middle delivers it to some recipients only). The limit stays below the
  SQL store's default connection pool (5): more would open overflow connections per append, which
  costs more than it overlaps. A store private to the process (memory) has no I/O to overlap, so
  its appends run in sequence. Each recipient gets one
  message, so the order across recipients does not matter; one sender's messages to one recipient
  still keep their order because the broadcast returns only when every append is done.

Membership (who may send, who exists) is checked by the team client, not here; the bounds of a
message's ``content`` and of a read's ``limit`` by :mod:`.rules.limits`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import anyio

from ..errors import TeamError, VersionConflict
from ..listing import UNREADABLE, Listing, Unreadable, unreadable
from ..store.base import BaseStore, Entry, Key, get_many, round_reads_of, shared_across_processes
from .rules import limits
from .rules.models import InboxCursor, TeamKeys, TeamMessage

BROADCAST_CONCURRENCY = 4
#: The sender of a notice that stands for unreadable messages (no participant's name is empty).
NOTICE_SENDER = ""
#: The ``sent_at`` of such a notice (when the lost messages were sent is not known): every read
#: of the same page gives the same notice.
_NO_TIME = datetime.fromtimestamp(0, UTC)


class Mailbox:
    """Inboxes and cursors of one team."""

    def __init__(self, store: BaseStore, keys: TeamKeys) -> None:
        self.store, self.keys = store, keys
        self._rounds = round_reads_of(store)

    async def deliver(
        self, sender: str, recipient: str, content: str, *, broadcast: bool = False
    ) -> TeamMessage:
        """Append one message to ``recipient``'s inbox; returns it with its store-allocated seq."""
        content = limits.text(content, "content")
        msg = TeamMessage(sender=sender, recipient=recipient, content=content, broadcast=broadcast)
        seq = await self.store.append(self.keys.inbox(recipient), msg.to_bytes())
        return msg.model_copy(update={"seq": seq})

    async def broadcast(
        self, sender: str, recipients: list[str], content: str
    ) -> list[TeamMessage]:
        """Deliver ``content`` to every recipient concurrently; results in ``recipients`` order.

        The first failed append is raised as is once the others have finished.
        """
        content = limits.text(content, "content")
        if not shared_across_processes(self.store) or len(recipients) < 2:
            return [await self.deliver(sender, r, content, broadcast=True) for r in recipients]
        sent: list[TeamMessage | None] = [None] * len(recipients)
        errors: list[Exception] = []
        limiter = anyio.CapacityLimiter(BROADCAST_CONCURRENCY)

        async def one(index: int, recipient: str) -> None:
            async with limiter:
                try:
                    sent[index] = await self.deliver(sender, recipient, content, broadcast=True)
                except Exception as exc:  # raised below, not wrapped in an ExceptionGroup
                    errors.append(exc)

        async with anyio.create_task_group() as tg:
            for index, recipient in enumerate(recipients):
                tg.start_soon(one, index, recipient)
        if errors:
            raise errors[0]
        return [m for m in sent if m is not None]

    async def read(self, member: str, *, after: int = 0, limit: int = 100) -> Listing[TeamMessage]:
        """Messages of ``member``'s inbox with ``seq > after``, oldest first.

        A message that cannot be decoded is logged and named (by its seq) in the result's
        ``problems``, and a run of them is read as one notice from :data:`NOTICE_SENDER` at the
        run's last seq (:func:`_messages`); acknowledging past it skips them for good.
        """
        limit = limits.read_limit(limit)
        if not isinstance(after, int) or after < 0:
            raise ValueError(f"after must be an int >= 0, got {after!r}")
        inbox = self.keys.inbox(member)
        return _messages(inbox, await self.store.read(inbox, after=after, limit=limit))

    async def cursor(self, member: str) -> int:
        """The last seq ``member`` acknowledged (0 when none)."""
        key = self.keys.cursor(member)
        return _cursor_of(await self.store.get(key), key, member)

    async def cursors(self, members: Sequence[str]) -> list[int]:
        """The cursors of ``members``' inboxes (0 where none was written), in one read."""
        if not members:
            return []
        keys = [self.keys.cursor(m) for m in members]
        return [
            _cursor_of(e, k, m)
            for e, k, m in zip(await get_many(self.store, keys), keys, members, strict=True)
        ]

    async def cursors_with(
        self, key: Key, members: Sequence[str]
    ) -> tuple[Entry | None, list[int]]:
        """The entry at ``key`` (another record of this store, e.g. the team's) and the cursors
        of ``members``' inboxes, in one read: one pipeline on Redis, one statement on SQL."""
        keys = [key, *(self.keys.cursor(m) for m in members)]
        entries = await get_many(self.store, keys)
        return entries[0], _cursors(entries[1:], keys[1:], members)

    @property
    def pages_in_round(self) -> bool:
        """Whether :meth:`round_with` reads inbox pages in its one round trip (a store with
        round reads: a standalone Redis server, PostgreSQL); elsewhere it reads none and the
        caller reads them."""
        return self._rounds is not None

    async def round_with(
        self, key: Key, members: Sequence[str], after: Mapping[str, int], limit: int
    ) -> tuple[Entry | None, list[int], dict[str, Listing[TeamMessage]]]:
        """:meth:`cursors_with`, and when :attr:`pages_in_round`, in the same pipeline the page of
        up to ``limit`` messages after ``after[m]`` of each member of ``after`` (as :meth:`read`
        reads it): one round trip (:func:`~..store.base.round_reads_of`), where the cursors
        and the pages were two."""
        if self._rounds is None:
            entry, cursors = await self.cursors_with(key, members)
            return entry, cursors, {}
        limit = limits.read_limit(limit)
        keys = [key, *(self.keys.cursor(m) for m in members)]
        pages = [(self.keys.inbox(m), a, limit) for m, a in after.items()]
        entries, rows = await self._rounds.get_many_and_read(keys, pages)
        read = {m: _messages(p[0], r) for m, p, r in zip(after, pages, rows, strict=True)}
        return entries[0], _cursors(entries[1:], keys[1:], members), read

    async def acknowledge(self, member: str, cursor: int) -> int:
        """Move ``member``'s cursor forward to ``cursor`` (never backwards); returns the cursor.

        ``cursor`` must be the seq of a message of the inbox (one read): a cursor past the last
        message raises :class:`TeamError` (:meth:`_require_message`)."""
        if not isinstance(cursor, int) or cursor < 0:
            raise ValueError(f"cursor must be an int >= 0, got {cursor!r}")
        key = self.keys.cursor(member)
        checked = False
        while True:
            entry = await self.store.get(key)
            current = _cursor_of(entry, key, member)
            if cursor <= current:
                return current
            if not checked:
                await self._require_message(member, cursor)
                checked = True
            value = InboxCursor(cursor=cursor).model_dump_json().encode()
            try:
                await self.store.put(key, value, expected_version=entry.version if entry else 0)
            except VersionConflict:
                continue
            return cursor

    async def _require_message(self, member: str, seq: int) -> None:
        """Raise :class:`TeamError` unless ``member``'s inbox holds a message at ``seq`` or
        later: a cursor past every message would skip, unread, the messages sent after it."""
        if not await self.store.read(self.keys.inbox(member), after=seq - 1, limit=1):
            raise TeamError(
                f"cannot acknowledge seq {seq} in the inbox of {member!r}: it holds no message "
                f"at seq {seq} or later, and the messages sent later would be skipped unread; "
                f"acknowledge the seq of the last message you read"
            )

    async def unread(self, member: str, *, limit: int = 100) -> Listing[TeamMessage]:
        """Messages after the acknowledged cursor (reading does not acknowledge them)."""
        return await self.read(member, after=await self.cursor(member), limit=limit)

    async def delete_inbox(self, member: str) -> None:
        await self.store.delete_stream(self.keys.inbox(member))
        await self.store.delete(self.keys.cursor(member))


def _messages(inbox: Key, rows: list[tuple[int, bytes]]) -> Listing[TeamMessage]:
    """The messages of an inbox page read as ``(seq, value)`` rows. One that cannot be decoded is
    logged and named (by its seq) in the listing's ``problems``; each run of them is replaced by
    one notice (:func:`_notice`) at the run's last seq, so a reader sees that messages were lost
    and acknowledging the notice moves the cursor past them (a page of nothing but unreadable
    messages would otherwise read as empty, and the inbox would never move on)."""
    out: list[TeamMessage] = []
    problems: list[Unreadable] = []
    run: list[Unreadable] = []
    for seq, raw in rows:
        try:
            msg = TeamMessage.model_validate_json(raw)
        except UNREADABLE as exc:
            run.append(unreadable("message", str(seq), inbox, exc))
            continue
        if run:
            out.append(_notice(inbox, run))
            problems += run
            run = []
        msg.seq = seq
        out.append(msg)
    if run:
        out.append(_notice(inbox, run))
        problems += run
    return Listing(out, problems)


def _notice(inbox: Key, run: list[Unreadable]) -> TeamMessage:
    """The message that stands for a run of unreadable messages of ``inbox`` (whose last part is
    the recipient): from :data:`NOTICE_SENDER`, at the run's last seq."""
    first, last = run[0].id, run[-1].id
    where = f"seq {first}" if first == last else f"seq {first} to seq {last}"
    count, verb = ("1 message", "was") if len(run) == 1 else (f"{len(run)} messages", "were")
    content = (
        f"{count} in your team inbox ({where}) could not be read and {verb} skipped "
        f"({run[0].reason}). Ask the sender to send again if you were waiting for one."
    )
    return TeamMessage(
        sender=NOTICE_SENDER, recipient=inbox[-1], content=content, seq=int(last), sent_at=_NO_TIME
    )


def _cursors(
    entries: Sequence[Entry | None], keys: Sequence[Key], members: Sequence[str]
) -> list[int]:
    return [_cursor_of(e, k, m) for e, k, m in zip(entries, keys, members, strict=True)]


def _cursor_of(entry: Entry | None, key: Key, member: str) -> int:
    """The seq ``member``'s inbox cursor entry at ``key`` holds (0: no cursor written).

    A cursor that cannot be decoded (damaged, or written by a newer version) is logged with its
    key and read as 0: its member's messages are delivered again (at least once, as after a
    crash) rather than its inbox, and the step reading every member's cursor at once, failing
    for good; the member's next acknowledgement writes a good cursor over it."""
    if entry is None:
        return 0
    try:
        return InboxCursor.model_validate_json(entry.value).cursor
    except UNREADABLE as exc:
        unreadable("inbox cursor", member, key, exc)
        return 0
