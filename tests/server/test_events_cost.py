"""What opening a team's event stream costs (issue 22, finding 5), counted, never timed.

Before: each event's id re-encoded the whole cursor, so an id grew with the team (past ~4,600 tasks
it no longer fit in a header) and opening a stream cost O(tasks^2). Now an id is ``<stream>.<n>``
and opening a stream writes each task's mark to the store once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import httpx

from agentscope_teams import RuntimeContext
from agentscope_teams.keys import TeamKeys
from agentscope_teams.server.events import TeamWatcher
from agentscope_teams.server.stream_log import CHUNK_MARKS, StreamCursor, StreamLog
from agentscope_teams.store import InMemoryStore, store_from_url
from agentscope_teams.store.base import Key
from agentscope_teams.teams import LocalTeamClient, TaskBoard

from .conftest import auth
from .harness import Served
from .test_api import Api, make_team
from .test_events_resume import _read_ids


async def _add_tasks(client: LocalTeamClient, team_id: str, count: int) -> None:
    """``count`` pending tasks, written straight to the board (the lead's ``assign_task`` in bulk)."""
    board = TaskBoard(client.store, TeamKeys(client.ctx.owner_scope(), team_id))
    for i in range(count):
        await board.create("lead", f"job {i}")


def test_ids_stay_small_however_big_the_team(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    org = op.ok("GET", "/api/whoami")["org_id"]

    async def fill() -> None:
        async with store_from_url(served.store_url) as store:
            ctx = RuntimeContext(session_id="s", user_id="alice", org_id=org)
            await _add_tasks(LocalTeamClient(store, ctx), team_id, 120)

    anyio.run(fill)
    with http.stream("GET", f"/api/teams/{team_id}/events", headers=auth(op.token)) as response:
        events = _read_ids(response)
    ids = [event_id for _, event_id, _ in events]
    assert [n for n, _, _ in events].count("task") == 120
    assert len(set(ids)) == len(ids) == 123  # team, two members, 120 tasks: each once
    assert max(map(len, ids)) <= 49  # the cursor-in-the-id design: about 1 KB each at 120 tasks


class CountingStore(InMemoryStore):
    """Counts the values written under the event log, and their bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.log_puts = 0
        self.log_bytes = 0

    async def put(self, key: Key, value: bytes, **kw: Any) -> int:
        if "events" in key:
            self.log_puts += 1
            self.log_bytes += len(value)
        return await super().put(key, value, **kw)

    async def get_many(self, keys: Sequence[Key]) -> list[Any]:
        return [await self.get(k) for k in keys]


async def _open_cost(tasks: int) -> tuple[int, int, int, int]:
    """(events, id bytes, log puts, log bytes) of the first poll of a stream on ``tasks`` tasks."""
    store = CountingStore()
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id="o")
    client = LocalTeamClient(store, ctx)
    team = await client.create_team("crew")
    await _add_tasks(client, team.id, tasks)
    keys = TeamKeys(ctx.owner_scope(), team.id)
    watcher = TeamWatcher(client, team.id, None, StreamLog(store, keys, 600, StreamCursor()))
    events, gone = await watcher.poll()
    assert not gone
    return len(events), sum(len(str(e.id)) for e in events), store.log_puts, store.log_bytes


async def test_opening_a_stream_costs_linear_work() -> None:
    small, large = await _open_cost(1000), await _open_cost(2000)
    assert (small[0], large[0]) == (1001, 2001)  # the team and every task
    for events, id_bytes, puts, log_bytes in (small, large):
        assert id_bytes <= 49 * events
        assert puts == -(-events // CHUNK_MARKS)  # one value per 1,000 marks
        assert log_bytes <= 40 * events
    # twice the tasks: twice the work (quadratic would be four times)
    assert large[1] <= 2.1 * small[1] and large[3] <= 2.1 * small[3]
