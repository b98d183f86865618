"""The Redis board queue's scripts as Redis Functions: one library loaded once per store, called by
``FCALL`` on a standalone Redis 7+; ``EVALSHA`` where the server has no functions.

A function runs the script's body as it is (the declared-keys and command-count tests run the
scripts, the same bodies); its helpers are defined when the library loads, not on every call.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ResponseError

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues import redis_lua as lua

from ..backends import StoreSpec, sent_commands
from .board_paths import native_spec
from .conftest import FakeClock

pytestmark = pytest.mark.anyio

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["redis"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return native_spec(request, tmp_path)


async def _board(store: RedisStore, alice: RuntimeContext, clock: FakeClock) -> TaskBoard:
    client = LocalTeamClient(store, alice, clock=clock)
    team = await client.create_team("crew", members=[Member(name="a")])
    board = TaskBoard(store, TeamKeys(client.ctx.owner_scope(), team.id), clock, native=True)
    for i in range(3):
        await board.create("lead", f"task {i}")
    return board


async def test_a_standalone_board_loads_its_library_once_and_calls_its_functions(
    store_spec: StoreSpec, alice: RuntimeContext, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with store_spec.open() as store:
        assert isinstance(store, RedisStore)
        board = await _board(store, alice, clock)
        sent = sent_commands(store.client, monkeypatch)
        first = await board.claim_next("a", 30)
        second = await board.claim_next("a", 30)
        assert first is not None and second is not None and first.id != second.id
        assert second.status is TaskStatus.IN_PROGRESS and second.owner == "a"
        scripts = [c for c in sent if c in ("FUNCTION LOAD", "SCRIPT LOAD", "FCALL", "EVALSHA")]
        assert scripts == ["FUNCTION LOAD", "FCALL", "FCALL"]


async def test_a_server_that_lost_the_library_has_it_loaded_again(
    store_spec: StoreSpec, alice: RuntimeContext, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart without persistence or a ``FUNCTION FLUSH`` drops the library: the call that
    finds it missing (having run nothing) loads it and claims once."""
    async with store_spec.open() as store:
        assert isinstance(store, RedisStore)
        board = await _board(store, alice, clock)
        assert await board.claim_next("a", 30) is not None
        library = lua.LIBRARY.split("\n", 1)[0].removeprefix("#!lua name=")
        async with store.commands() as redis:
            await redis.function_delete(library)
        sent = sent_commands(store.client, monkeypatch)
        claimed = await board.claim_next("a", 30)
        assert claimed is not None and claimed.id == "t-2" and claimed.attempts == 1
        assert sent == ["FCALL", "FUNCTION LOAD", "FCALL"]
        assert [t.status for t in await board.list_tasks()] == [TaskStatus.IN_PROGRESS] * 2 + [
            TaskStatus.PENDING
        ]


async def test_a_server_without_functions_runs_the_scripts(
    store_spec: StoreSpec, alice: RuntimeContext, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis 6 has no ``FUNCTION`` command (an ACL may forbid it too): the board's scripts run by
    ``EVALSHA``, as on a cluster. The refusal is Redis 6's, answered here by the client."""
    async with store_spec.open() as store:
        assert isinstance(store, RedisStore)

        async def refused(*args: Any, **options: Any) -> Any:
            raise ResponseError("unknown command 'FUNCTION', with args beginning with: 'LOAD'")

        monkeypatch.setattr(store.client, "function_load", refused)
        board = await _board(store, alice, clock)
        sent = sent_commands(store.client, monkeypatch)
        assert await board.claim_next("a", 30) is not None
        assert await board.claim_next("a", 30) is not None
        assert [c for c in sent if c != "SCRIPT LOAD"] == ["EVALSHA", "EVALSHA"]


async def test_the_lua_dates_match_pythons_across_days(store_spec: StoreSpec) -> None:
    """A record's ISO dates written in Lua (a library remembers the last two days' and seconds'
    text) equal Python's, in any order of days: leap days, centuries, midnight, a lease past
    midnight, the same second twice."""
    rng = random.Random(26)
    ms = [rng.randrange(0, 4_102_444_800_000) for _ in range(400)]
    ms += [951_782_400_000, 951_868_799_999, 946_684_799_999, 4_107_542_400_000, 0]
    ms += [m + d for m in ms[:40] for d in (86_399_999, 86_400_000, 0, 1)]
    source = (
        lua.HELPERS
        + "local out = {}\nfor i = 1, #ARGV do out[i] = iso(tonumber(ARGV[i])) end\nreturn out\n"
    )
    async with store_spec.open() as store, store.commands() as redis:
        got = await redis.eval(source, 0, *ms)
    expected = [
        (_EPOCH + timedelta(milliseconds=m)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{m % 1000:03d}Z"
        for m in ms
    ]
    assert [g.decode() for g in got] == expected


async def test_the_lua_texts_of_numbers_match_pythons(store_spec: StoreSpec) -> None:
    """The numbers the scripts pass to commands as text (``text``: ranks and counts, kept once
    below 4096; ``now_text``: now in ms, cut from ``ARGV[1]`` in µs) are Python's integers'."""
    numbers = [0, 1, 7, 8, 255, 4095, 4096, 123_456, -1, -8, 0, 7]
    stamps = [0, 1, 999, 1000, 1999, 123_456_789, 1_765_039_375_123_456, -1, -1000, -1001]
    source = (
        lua.HELPERS
        + "local out = {}\nfor i = 1, #ARGV - 1 do out[i] = text(tonumber(ARGV[i])) end\n"
        + "begin({'p', 'h', 'o'}, {ARGV[#ARGV], '1'})\nout[#out + 1] = now_text()\nreturn out\n"
    )
    async with store_spec.open() as store, store.commands() as redis:
        for stamp in stamps:
            got = await redis.eval(source, 0, *numbers, stamp)
            assert [g.decode() for g in got] == [*map(str, numbers), str(stamp // 1000)]


async def test_a_claim_by_function_sends_a_queued_rider_too(
    store_spec: StoreSpec, alice: RuntimeContext, clock: FakeClock
) -> None:
    """A claim (``FCALL``) made while a usage script waits to ride this context's next write (a
    governed call's riders, ``store._redis_riders``) claims, and the rider gets its reply."""
    async with store_spec.open() as store:
        assert isinstance(store, RedisStore)
        board = await _board(store, alice, clock)
        echo = store.register_script("return ARGV[1]")
        token = store.open_rides()
        assert token is not None
        try:
            rider = store.ride(echo, [], ["x"])
            assert rider is not None
            claimed = await board.claim_next("a", 30)
        finally:
            store.close_rides(token)
        assert claimed is not None and claimed.owner == "a"
        assert await store.land(rider) == b"x"
