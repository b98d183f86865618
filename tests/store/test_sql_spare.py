"""The connections ``SqlStore.with_driver`` keeps checked out between its calls
(:mod:`agentscope_teams.store.sql.spare`): reused without a pool borrow, given back when the pool
runs dry, when they idle too long, when the store closes, and never kept mid-transaction."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import create_async_engine

from agentscope_teams.store.sql import SqlStore, async_url, mysql_rows
from agentscope_teams.store.sql import spare as spare_module

from ..backends import SERVICE_URLS
from ..conftest import require_service

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["postgres", "mariadb"])
def backend(request: pytest.FixtureRequest) -> str:
    require_service(request.param)
    return str(request.param)


def _store(backend: str, **options: Any) -> SqlStore:
    return SqlStore(SERVICE_URLS[backend], table_prefix=f"s{uuid.uuid4().hex[:8]}_", **options)


@pytest.fixture
async def store(backend: str) -> AsyncIterator[SqlStore]:
    async with _store(backend) as s:
        yield s


def checkouts(store: SqlStore) -> list[int]:
    """A list that grows by one at each checkout from ``store``'s engine pool."""
    seen: list[int] = []
    event.listen(store._engine.sync_engine, "checkout", lambda *_: seen.append(1))
    return seen


async def probe(store: SqlStore, backend: str) -> Any:
    async def run(conn: Any) -> Any:
        if backend == "postgres":
            return await conn.fetchval("SELECT pg_backend_pid()")
        return (await mysql_rows(conn, "SELECT CONNECTION_ID(); COMMIT"))[0][0]

    return await store.with_driver("probe", run)


async def test_the_driver_path_reuses_its_connection_without_a_pool_borrow(
    store: SqlStore, backend: str
) -> None:
    seen = checkouts(store)
    pids = {await probe(store, backend) for _ in range(5)}
    assert len(seen) == 1 and len(pids) == 1
    assert len(store._db.spare) == 1


async def test_a_connection_left_in_a_transaction_goes_back_to_the_pool(
    store: SqlStore, backend: str
) -> None:
    async def open_transaction(conn: Any) -> None:
        if backend == "postgres":
            await conn.execute("BEGIN")
        else:
            await mysql_rows(conn, "START TRANSACTION")

    await store.with_driver("probe", open_transaction)
    assert len(store._db.spare) == 0  # rolled back by the pool's reset, not kept

    async def in_transaction(conn: Any) -> bool:
        if backend == "postgres":
            return bool(conn.is_in_transaction())
        await mysql_rows(conn, "COMMIT")
        return False

    assert await store.with_driver("probe", in_transaction) is False


async def test_a_failed_statement_gives_its_connection_back(store: SqlStore, backend: str) -> None:
    await probe(store, backend)

    async def broken(conn: Any) -> Any:
        if backend == "postgres":
            return await conn.fetch("SELECT * FROM no_such_table_here")
        return await mysql_rows(conn, "SELECT * FROM no_such_table_here")

    with pytest.raises(Exception, match="no_such_table_here"):
        await store.with_driver("probe", broken)
    assert len(store._db.spare) == 0
    seen = checkouts(store)
    await probe(store, backend)
    assert len(seen) == 1


async def test_an_operation_outside_the_driver_path_gets_a_kept_connection_back(
    backend: str,
) -> None:
    one = _store(backend, pool_size=1, max_overflow=0, engine_options={"pool_timeout": 2})
    async with one as s:
        await probe(s, backend)
        assert len(s._db.spare) == 1  # the pool's only connection, kept
        key = ("spare", "k")
        await s.put(key, b"v")  # would wait pool_timeout, then StoreBusyError
        got = await s.get(key)
        assert got is not None and got.value == b"v"
        assert len(s._db.spare) == 0


async def _end_session(backend: str, kept: Any, session: int) -> None:
    """End the server session ``session`` (as an idle timeout or a restart would), from a
    connection of its own, and wait until ``kept``, its connection here, has seen it end."""
    async with _store(backend) as other:

        async def end(conn: Any) -> None:
            if backend == "postgres":
                await conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(session)})")
            else:
                await conn.exec_driver_sql(f"KILL {int(session)}")

        await other.transaction("end session", end, single=True)
    for _ in range(1000):
        if kept.is_closed() if backend == "postgres" else kept._stream_broken:
            return
        await anyio.sleep(0.01)
    raise AssertionError("the client never saw its session end")


async def test_a_kept_connection_whose_session_ended_is_not_used(
    store: SqlStore, backend: str
) -> None:
    """The next call runs on another connection instead of failing on the dead one."""
    session = await probe(store, backend)
    await _end_session(backend, store._db.spare._idle[-1][0].driver_connection, session)
    assert await probe(store, backend) != session
    assert len(store._db.spare) == 1


async def test_a_kept_connection_whose_session_ended_is_not_handed_to_the_pool(
    backend: str,
) -> None:
    """An operation outside the driver path, given the kept connection of a pool of one,
    gets a live connection."""
    async with _store(backend, pool_size=1, max_overflow=0) as s:
        session = await probe(s, backend)
        await _end_session(backend, s._db.spare._idle[-1][0].driver_connection, session)
        await s.put(("spare", "k"), b"v")
        got = await s.get(("spare", "k"))
        assert got is not None and got.value == b"v"
        assert await probe(s, backend) != session


async def test_a_connection_idle_too_long_goes_back_to_the_pool(
    store: SqlStore, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spare_module, "IDLE_SECONDS", -1.0)
    seen = checkouts(store)
    for _ in range(3):
        await probe(store, backend)
    assert len(seen) == 3 and len(store._db.spare) == 1


async def test_closing_the_store_gives_the_kept_connections_back(backend: str) -> None:
    engine = create_async_engine(async_url(SERVICE_URLS[backend]))
    try:
        async with SqlStore(engine, table_prefix=f"s{uuid.uuid4().hex[:8]}_") as s:
            await probe(s, backend)
            assert engine.pool.checkedout() == 1  # type: ignore[attr-defined]
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        await engine.dispose()


async def test_no_more_connections_are_kept_idle_than_the_pool_would_keep(backend: str) -> None:
    """Four calls at once on a pool of 2 (+ 3 overflow): after them at most 2 are kept (the
    others go back to the pool, which keeps 2 more and closes the rest)."""
    import anyio

    async with _store(backend, pool_size=2, max_overflow=3) as s:
        await probe(s, backend)  # set up the tables first
        arrived = 0
        all_in = anyio.Event()

        async def held(conn: Any) -> None:
            nonlocal arrived
            arrived += 1
            if arrived == 4:
                all_in.set()
            await all_in.wait()
            if backend == "mariadb":
                await mysql_rows(conn, "COMMIT")

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(s.with_driver, "probe", held)
        pool = s._engine.pool
        assert len(s._db.spare) == 2 and pool.checkedout() == 2  # type: ignore[attr-defined]
        assert pool.checkedin() == 2  # type: ignore[attr-defined]
