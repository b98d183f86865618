"""What a :class:`~.runtime.TeamRuntime` step reads of one team, in one round of concurrent reads.

A step needs the team record (its status and members), the open board and, per member that is not
busy, the first page of its unread messages. None of these reads waits for another: the inboxes
read are those of the members the previous step's record named (:class:`Known`), each after the
cursor the previous step saw, beside one read of the record and all their cursors (one pipeline on
Redis, one statement on SQL, when the client reads the runtime's store; else the record and the
cursors are two reads). On a standalone Redis server the pages go in that pipeline too, on
PostgreSQL in that statement (:meth:`~..mailbox.Mailbox.round_with`): the round is two commands,
that pipeline and the board's script, or two statements on the driver's connection, that one and
the board's. So a wake-up's reads are one round trip, where they were three in sequence (the record,
then the board beside each cursor, then each inbox after its cursor). The record is decoded only
when its bytes differ from those the previous step decoded (:attr:`Known.record`).

Every figure the step acts on is still read in this step; the guesses only decide what is read at
once. A member the record names that the previous one did not (just spawned) is read after the
round (its cursor, then its page), and one whose cursor moved (it acknowledged messages since) has
its page read again after the cursor read now: one or two more round trips in that step only. A
member the previous record named that is gone costs a wasted inbox read, once.

At most :data:`ROUND_READS` reads run at once (the record and cursors, the board start first):
on a SQL store each takes a pooled connection, and more than the default pool (5) would open an
overflow connection per step, which costs more than it overlaps. With more than two members read
on their own, the last pages wait for the first reads to end; a round within the bound takes no
limiter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ...errors import UnknownTeamError
from ..board import TaskBoard
from ..delivery import INBOX_PAGE
from ..mailbox import Mailbox
from ..protocol import TeamClient
from ..registry import TeamRegistry
from ..rules.models import Task, Team, TeamMessage

#: The most reads of a step's round in flight at once (a SQL store's default pool holds 5).
ROUND_READS = 5


@dataclass
class Known:
    """What the previous step of a team saw: its members' names and their inbox cursors, and the
    team record it decoded (its stored bytes and the record), decoded again only once changed."""

    members: list[str] = field(default_factory=list)
    cursors: dict[str, int] = field(default_factory=dict)
    record: tuple[bytes, Team] | None = None


@dataclass
class StepReads:
    """The step's reads of one team: the record (None: the team is gone) and its version (None
    from a client that does not give it), the open tasks, and each read member's unread page."""

    team: Team | None
    version: int | None
    tasks: list[Task]
    unread: dict[str, list[TeamMessage]]


async def read_team(
    client: TeamClient,
    team_id: str,
    board: TaskBoard,
    inbox: Mailbox,
    known: Known,
    wanted: Callable[[str], bool],
) -> StepReads:
    """The team record, its open board and the unread page of every member ``wanted`` (not busy),
    all read at once; then, if the record names a wanted member not read yet, or a member's cursor
    moved, that member's inbox. ``known`` is updated to what this step saw."""
    got = StepReads(None, None, [], {})
    names = [n for n in known.members if wanted(n)]
    cursors: list[int] = []
    # a client of this store: the record is read beside the cursors (one read), and on a
    # standalone Redis store or PostgreSQL beside the inbox pages too (one pipeline or
    # statement); else on its own
    registry = client if isinstance(client, TeamRegistry) and client.store is inbox.store else None
    pages = registry is not None and inbox.pages_in_round
    reads = 2 + (0 if pages else len(names)) + (0 if registry else 1)
    limiter = anyio.CapacityLimiter(ROUND_READS) if reads > ROUND_READS else None

    async def read_record() -> None:
        async with _turn(limiter):
            with contextlib.suppress(UnknownTeamError):  # got.team stays None: the team is gone
                if registry is None:
                    got.team = await client.get_team(team_id)
                    return
                after = {n: known.cursors.get(n, 0) for n in names} if pages else {}
                cursors.extend(
                    await _record_round(registry, team_id, inbox, after, names, got, known)
                )

    async def read_board() -> None:
        async with _turn(limiter):
            got.tasks.extend(await board.open_board())

    async def read_cursors() -> None:
        async with _turn(limiter):
            cursors.extend(await inbox.cursors(names))

    async def read_page(name: str) -> None:
        async with _turn(limiter):
            after = known.cursors.get(name, 0)
            got.unread[name] = await inbox.read(name, after=after, limit=INBOX_PAGE)

    async with anyio.create_task_group() as tg:
        for read in (read_board, *(() if registry else (read_cursors,))):
            tg.start_soon(read)
        for name in () if pages else names:
            tg.start_soon(read_page, name)
        await read_record()  # in this task: one task fewer to start
    if got.team is None:
        return got
    moved = {n: c for n, c in zip(names, cursors, strict=True) if c != known.cursors.get(n, 0)}
    known.cursors.update(moved)
    known.members = [m.name for m in got.team.members]
    late = [n for n in known.members if wanted(n) and (n not in got.unread or n in moved)]
    await _read_late(inbox, late, known, got.unread)
    return got


async def _record_round(
    registry: TeamRegistry,
    team_id: str,
    inbox: Mailbox,
    after: dict[str, int],
    names: list[str],
    got: StepReads,
    known: Known,
) -> list[int]:
    """The record and the cursors of ``names`` (and the pages after ``after``) in one read, the
    record decoded into ``got`` unless ``known`` holds it decoded from the same bytes; the
    cursors are returned."""
    entry, cursors, pages = await inbox.round_with(
        registry.team_key(team_id), names, after, INBOX_PAGE
    )
    got.unread.update(pages)
    got.team, got.version = registry.team_entry_of(team_id, entry, known.record)
    known.record = (entry.value, got.team) if entry is not None else None
    return cursors


def _turn(limiter: anyio.CapacityLimiter | None) -> contextlib.AbstractAsyncContextManager[Any]:
    """A read's place among the round's: the limiter's when the round has more reads than
    :data:`ROUND_READS`, else none (a limiter's turn costs more than the read's own start)."""
    return limiter if limiter is not None else contextlib.nullcontext()


async def _read_late(
    inbox: Mailbox, names: list[str], known: Known, into: dict[str, list[TeamMessage]]
) -> None:
    """The unread pages the round could not guess: a member read for the first time (its cursor,
    then its page), one whose cursor moved (its page after the cursor read in the round)."""

    async def read(name: str, cursor: int | None) -> None:
        if cursor is None:
            cursor = known.cursors[name] = await inbox.cursor(name)
        into[name] = await inbox.read(name, after=cursor, limit=INBOX_PAGE)

    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(read, name, known.cursors[name] if name in into else None)
