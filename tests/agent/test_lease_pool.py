"""A call that cannot get a connection from an exhausted pool gives its session lease back at once
(issue 22, finding 15), on a real PostgreSQL pool of one connection held by someone else."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentscope_teams.agent.lease import hold_lease
from agentscope_teams.errors import StoreBusyError, StoreUnavailableError
from agentscope_teams.store.sql import SqlStore

from ..backends import POSTGRES_URL
from ..conftest import require_service

POOL_WAIT = 0.3  # seconds a caller waits for the pool's one connection


@pytest.fixture
async def tiny() -> AsyncIterator[SqlStore]:
    """A store whose pool has exactly one connection."""
    require_service("postgres")
    opts = {"pool_timeout": POOL_WAIT}
    async with SqlStore(POSTGRES_URL, pool_size=1, max_overflow=0, engine_options=opts) as store:
        yield store


@pytest.fixture
async def observer() -> AsyncIterator[SqlStore]:
    """Another store on the same database, to look at the lease while the pool is held."""
    require_service("postgres")
    async with SqlStore(POSTGRES_URL) as store:
        yield store


def _key() -> tuple[str, ...]:
    return ("leases", "o:", "u:pool", "a:agent", f"s:{uuid.uuid4().hex}")


async def test_a_call_that_found_the_pool_exhausted_releases_its_lease_at_once(
    tiny: SqlStore, observer: SqlStore
) -> None:
    key = _key()
    held = None
    try:
        with pytest.raises(StoreBusyError) as caught:
            async with hold_lease(tiny, key, ttl=30, wait_timeout=1) as lease:
                assert await observer.get(key) is not None
                held = await tiny._engine.connect()  # someone else takes the only connection
                await held.exec_driver_sql("SELECT 1")
                await tiny.get(("sessions", "o:", "u:pool", "a:agent", "s:x"))
        # the pool is still held: the lease is gone now, not when its 30 s run out
        assert lease.done and await observer.get(key) is None
    finally:
        if held is not None:
            await held.close()
    busy = caught.value
    assert isinstance(busy, StoreUnavailableError)  # callers of the older class still catch it
    assert (busy.limit, busy.waited, busy.retry_after) == (1, POOL_WAIT, 1.0)


async def test_the_release_runs_while_the_pool_is_still_held(
    tiny: SqlStore, observer: SqlStore
) -> None:
    key = _key()
    async with tiny._engine.connect() as held:
        await held.exec_driver_sql("SELECT 1")
        # an ordinary write finds no connection (the control: the pool really is exhausted) ...
        with pytest.raises(StoreBusyError):
            await tiny.put(("sessions", "o:", "u:pool", "a:agent", "s:y"), b"x")
        # ... yet a lease written before is given back, on the connection kept for that
        await observer.put(key, b'{"holder": "h"}', indexed=False)
        assert await tiny.delete(key, expected_version=1, indexed=False) is True
        assert await observer.get(key) is None


async def test_an_unconfirmed_lease_is_still_released_when_it_cannot_have_expired(
    tiny: SqlStore, observer: SqlStore
) -> None:
    key = _key()
    held = None
    try:
        with pytest.raises(StoreBusyError):
            async with hold_lease(tiny, key, ttl=30, wait_timeout=1) as lease:
                lease._confirmed_at = float("-inf")  # as after a long call: release reads first
                held = await tiny._engine.connect()
                await held.exec_driver_sql("SELECT 1")
                await tiny.get(("sessions", "o:", "u:pool", "a:agent", "s:z"))
        assert lease.done and await observer.get(key) is None
    finally:
        if held is not None:
            await held.close()


async def test_control_through_the_pool_the_lease_would_stay_held(
    tiny: SqlStore, observer: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def through_the_pool(self: SqlStore, fn: Any) -> Any:
        return await self._run("delete", fn, write=True)

    monkeypatch.setattr(SqlStore, "_on_reserve", through_the_pool)
    key = _key()
    held = None
    try:
        with pytest.raises(StoreBusyError):
            async with hold_lease(tiny, key, ttl=30, wait_timeout=1) as lease:
                held = await tiny._engine.connect()
                await held.exec_driver_sql("SELECT 1")
                await tiny.get(("sessions", "o:", "u:pool", "a:agent", "s:w"))
        assert not lease.done and await observer.get(key) is not None  # held until it expires
    finally:
        if held is not None:
            await held.close()
        await observer.delete(key, indexed=False)


async def test_the_release_connects_as_the_pool_does(observer: SqlStore) -> None:
    """The connection kept for the release takes the engine's connect arguments: here a
    ``search_path`` naming the schema of the store's tables."""
    schema = f"lp{uuid.uuid4().hex[:8]}"

    async def ddl(conn: Any, sql: str) -> None:
        await conn.exec_driver_sql(sql)

    await observer.transaction("schema", lambda c: ddl(c, f"CREATE SCHEMA {schema}"), single=True)
    try:
        settings = {"server_settings": {"search_path": schema}}
        opts = {"pool_timeout": POOL_WAIT, "connect_args": settings}
        key = _key()
        async with SqlStore(POSTGRES_URL, pool_size=1, max_overflow=0, engine_options=opts) as s:
            await s.put(key, b'{"holder": "h"}', indexed=False)
            async with s._engine.connect() as held:
                await held.exec_driver_sql("SELECT 1")
                assert await s.delete(key, expected_version=1, indexed=False) is True
            assert await s.get(key) is None
    finally:
        drop = f"DROP SCHEMA {schema} CASCADE"
        await observer.transaction("schema", lambda c: ddl(c, drop), single=True)
