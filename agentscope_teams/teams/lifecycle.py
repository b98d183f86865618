"""When a team ends, which teams a listing shows, and pruning ended teams (see ``docs/teams.md``).

A team is ``active`` until it ends: its lead ends it (the ``endTeam`` tool, or the status API), or
the lead's call returns with the work finished (:func:`work_finished`), or an operator archives
or deletes it. Ended teams keep their records until they are deleted or pruned
(:func:`prune_teams`); listings leave them out unless asked (:func:`visible`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from ..errors import ConfigurationError
from ..message import utcnow
from .protocol import TeamClient
from .rules.models import Task, TaskStatus, Team, TeamStatus

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_EXAMPLES = "e.g. 7d, 12h, 30m, 2w or 1d12h"


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
    """``7d``, ``12h``, ``30m``, ``45s``, ``2w`` (or sums such as ``1d12h``) as a duration > 0;
    else :class:`ConfigurationError` naming the text and the accepted forms."""
    value = text.strip().lower()
    parts = _DURATION.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise ConfigurationError(
            f"cannot read the duration {text!r}: use a number and a unit, {_EXAMPLES}"
        )
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ConfigurationError(f"the duration {text!r} must be longer than zero ({_EXAMPLES})")
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
