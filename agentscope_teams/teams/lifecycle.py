"""When a team ends, which teams a listing shows, and pruning ended teams (see ``docs/teams.md``).

A team is ``active`` until it ends: its lead ends it (the ``endTeam`` tool, or the status API), or
the lead's call returns with the work finished (:func:`work_finished`), or the lead's session is
deleted (:func:`end_session_teams`), or an operator archives or deletes it. Ended teams keep
their records until they are deleted or pruned (:func:`prune_teams`); listings leave them out
unless asked (:func:`visible`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from ..context import RuntimeContext
from ..errors import ConfigurationError, TeamError, UnknownTeamError
from ..message import utcnow
from ..store.base import BaseStore
from .directory import records_of
from .protocol import TeamClient
from .rules.models import Task, TaskStatus, Team, TeamStatus

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_EXAMPLES = "e.g. 7d, 12h, 30m, 2w or 1d12h"
#: The longest duration :func:`parse_age` reads (the cutoff ``now - age`` must be a date).
MAX_AGE_DAYS = 36_500
#: The reason of the cancellation of a task left open when its lead's session was deleted.
LEAD_SESSION_DELETED = "its lead's session was deleted"


def work_finished(tasks: Iterable[Task]) -> bool:
    """No task pending or in progress, and at least one completed: the team's work is done."""
    statuses = [t.status for t in tasks]
    if any(s in (TaskStatus.PENDING, TaskStatus.IN_PROGRESS) for s in statuses):
        return False
    return TaskStatus.COMPLETED in statuses


async def has_open_tasks(client: TeamClient, team_id: str) -> bool:
    """Whether a task is pending or in progress, read from the open index (no full scan)."""
    open_statuses = (TaskStatus.PENDING, TaskStatus.IN_PROGRESS)
    return any(t.status in open_statuses for t in await client.open_board(team_id))


def visible(
    teams: Iterable[Team], *, include_ended: bool = False, status: TeamStatus | None = None
) -> list[Team]:
    """The teams a listing shows: those in ``status`` if given, else the active ones (every
    team with ``include_ended``)."""
    if status is not None:
        return [t for t in teams if t.status is status]
    return [t for t in teams if include_ended or not t.status.ended]


def parse_age(text: str) -> timedelta:
    """``7d``, ``12h``, ``30m``, ``45s``, ``2w`` (or sums such as ``1d12h``) as a duration > 0
    and at most :data:`MAX_AGE_DAYS` days; else :class:`ConfigurationError` naming the text and the accepted forms."""
    value = text.strip().lower()
    parts = _DURATION.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise ConfigurationError(
            f"cannot read the duration {text!r}: use a number and a unit, {_EXAMPLES}"
        )
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ConfigurationError(f"the duration {text!r} must be longer than zero ({_EXAMPLES})")
    if seconds > MAX_AGE_DAYS * _UNITS["d"]:
        raise ConfigurationError(
            f"the duration {text!r} is too long: give at most {MAX_AGE_DAYS}d (100 years)"
        )
    return timedelta(seconds=seconds)


def ended_before(team: Team, cutoff: datetime) -> bool:
    """Whether ``team`` ended before ``cutoff`` (a record without ``ended_at``, written before
    teams carried it, counts from its ``created_at``)."""
    if not team.status.ended:
        return False
    return (team.ended_at or team.created_at) < cutoff


async def prune_teams(
    client: TeamClient,
    older_than: timedelta,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
) -> Sequence[Team]:
    """Delete (unless ``dry_run``) every ended team of the client's user that ended more than
    ``older_than`` ago; the teams pruned (or that would be), oldest first. Active teams are
    never pruned."""
    cutoff = (now or utcnow()) - older_than
    old = [t for t in await client.list_teams() if ended_before(t, cutoff)]
    if not dry_run:
        for team in old:
            await client.delete_team(team.id)
    return old


async def end_session_teams(
    client: TeamClient, store: BaseStore, ctx: RuntimeContext, lead: str
) -> list[Team]:
    """End every team that the session ``ctx`` of the lead agent ``lead`` created and that is
    still active, as the lead's ``endTeam`` would (``completed``, members stopped, out of the team
    directory so workers stop serving it, its records kept); then cancel each of its tasks still
    open, once (``client``'s TaskCompleted hooks fire for each task this call cancelled, pairing
    its TaskCreated). Called when that session is deleted; safe to repeat. Returns the teams it
    ended. Teams whose directory record predates ``lead_session`` are not found."""
    ended: list[Team] = []
    for record in await records_of(store, ctx):
        if record.lead_session != ctx.session_id or record.lead != lead:
            continue
        try:
            team = await client.get_team(record.team_id)
            if not team.status.ended:
                team = await client.set_team_status(team.id, TeamStatus.COMPLETED)
                ended.append(team)
            for task in await client.open_board(team.id):
                with contextlib.suppress(TeamError):  # finished meanwhile: its own end fired
                    await client.cancel_task(team.id, task.id, reason=LEAD_SESSION_DELETED)
        except UnknownTeamError:  # deleted meanwhile: nothing left to end
            continue
    return ended
