"""Gauges of the whole task board for ``serve``'s ``/metrics``: open tasks by status (the queue
depth an autoscaler reads), members by status, teams.

Read from the store before a scrape (:func:`agentscope_teams.tracing.metrics.refresh`), at most once
per :data:`MIN_INTERVAL` seconds and within :data:`SCAN_TIMEOUT` seconds: the team directory, then
each team's record and open board (unfinished tasks, no full scan). Only ``serve`` reads them (every
replica reads the same store, so an autoscaler takes their ``max``); workers do not, so the series
are not repeated once per worker. A team that cannot be read is skipped (logged by the listing).
"""

from __future__ import annotations

import logging
import time
from collections import Counter as Tally

import anyio

from ..store.base import BaseStore
from ..teams import LocalTeamClient, MemberStatus, TaskStatus
from ..teams.directory import scan_records
from ..tracing import metrics

MIN_INTERVAL = 10.0
SCAN_TIMEOUT = 5.0
_OPEN = (TaskStatus.PENDING, TaskStatus.IN_PROGRESS)
log = logging.getLogger(__name__)


class BoardGauges:
    """The refresher of the board gauges over one store (register with :meth:`install`)."""

    def __init__(self, store: BaseStore, *, min_interval: float = MIN_INTERVAL) -> None:
        self.store, self.min_interval = store, min_interval
        self._last = -float("inf")

    def install(self) -> None:
        """Turn metrics on and read the board before each scrape of this process."""
        metrics.enable()
        metrics.add_refresher(self.refresh)

    async def refresh(self) -> None:
        """Read the board now unless it was read less than ``min_interval`` seconds ago."""
        now = time.monotonic()
        if now - self._last < self.min_interval:
            return
        self._last = now
        with anyio.fail_after(SCAN_TIMEOUT):
            tasks, members, teams = await self._scan()
        m = metrics.enable()
        m.tasks.set_all({(s.value,): float(tasks[s]) for s in _OPEN})
        m.members.set_all({(s.value,): float(members[s]) for s in MemberStatus})
        m.teams.set_all({(): float(teams)})
        m.board_scan_seconds.set_all({(): time.monotonic() - now})

    async def _scan(self) -> tuple[Tally[TaskStatus], Tally[MemberStatus], int]:
        tasks: Tally[TaskStatus] = Tally()
        members: Tally[MemberStatus] = Tally()
        teams = 0
        async for record in scan_records(self.store):
            client = LocalTeamClient(self.store, record.context())
            try:
                team = await client.get_team(record.team_id)
                board = await client.open_board(record.team_id)
            except Exception as exc:  # deleted meanwhile, or unreadable: the others still count
                log.debug("board gauges skip team %s: %s", record.team_id, exc)
                continue
            teams += 1
            members.update(m.status for m in team.members)
            tasks.update(t.status for t in board if t.status in _OPEN)
        return tasks, members, teams
