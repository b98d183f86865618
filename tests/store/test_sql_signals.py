"""PostgreSQL push signals (LISTEN/NOTIFY): delivered across processes, recovered after the
listening connection is lost; MariaDB and SQLite have none (callers poll)."""

from __future__ import annotations

import logging
import multiprocessing
import queue
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import text

from agentscope_teams.keys import TeamKeys
from agentscope_teams.store import store_from_url
from agentscope_teams.store.base import Key, signals_of
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.store.sql import signals as pg_signals

from ..backends import MYSQL_URL, POSTGRES_URL, unique_namespace
from ..conftest import require_service


def _channel() -> Key:
    return TeamKeys((f"o:{unique_namespace()}", "u:bob"), "t-1").signal()


async def _listen_once(url: str, channel: Key, events: Any) -> None:
    async with store_from_url(url) as store:
        assert not await store.wait_signal([channel], 0.05)  # type: ignore[attr-defined]
        events.put("listening")
        woke = await store.wait_signal([channel], 60)  # type: ignore[attr-defined]
        events.put("woken" if woke else "timed out")


def _child(url: str, channel: Key, events: Any) -> None:
    anyio.run(_listen_once, url, channel, events)


async def _get(events: Any, timeout: float) -> str | None:  # noqa: ASYNC109
    try:
        return str(await anyio.to_thread.run_sync(lambda: events.get(timeout=timeout)))
    except queue.Empty:
        return None


async def test_a_signal_reaches_a_waiter_in_another_process() -> None:
    require_service("postgres")
    channel = _channel()
    ctx = multiprocessing.get_context("spawn")
    events = ctx.Queue()
    child = ctx.Process(target=_child, args=(POSTGRES_URL, channel, events), daemon=True)
    child.start()
    try:
        assert await _get(events, 60) == "listening"
        async with store_from_url(POSTGRES_URL) as store:
            signals = signals_of(store)
            assert signals is not None
            outcome = None
            for _ in range(100):  # the child may be between its two waits: signal again
                await signals.signal(channel)
                outcome = await _get(events, 0.2)
                if outcome is not None:
                    break
        assert outcome == "woken"
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0


async def _wakes(waiter: Any, sender: Any, channel: Key, timeout: float = 0.3) -> bool:  # noqa: ASYNC109
    """Whether ``sender.signal(channel)`` wakes ``waiter.wait_signal`` (signalled repeatedly)."""
    woke = False
    async with anyio.create_task_group() as tg:

        async def send() -> None:
            for _ in range(int(timeout / 0.02)):
                await anyio.sleep(0.02)
                await sender.signal(channel)

        tg.start_soon(send)
        woke = await waiter.wait_signal([channel], timeout)
        tg.cancel_scope.cancel()
    return woke


async def test_a_lost_listening_connection_is_replaced() -> None:
    require_service("postgres")
    channel = _channel()
    async with store_from_url(POSTGRES_URL) as waiter, store_from_url(POSTGRES_URL) as sender:
        assert isinstance(waiter, SqlStore) and isinstance(sender, SqlStore)
        assert await _wakes(waiter, sender, channel)
        listener = waiter._listener
        assert listener is not None and listener.connects == 1
        pid = listener.backend_pid
        assert pid is not None
        async with sender._db.open(auto=True) as conn:  # the server drops the connection
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with anyio.fail_after(30):  # a guard, not a latency assertion
            while listener.backend_pid is not None:  # noqa: ASYNC110 - polls a plain attribute
                await anyio.sleep(0.01)
        assert await _wakes(waiter, sender, channel, timeout=10)  # it connects and listens again
        assert listener.connects == 2
        assert listener.backend_pid not in (None, pid)


async def test_a_listening_connection_that_stops_answering_is_replaced(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    require_service("postgres")
    monkeypatch.setattr(pg_signals, "HEALTH_EVERY", 0.0)  # check on every wait
    channel = _channel()
    async with store_from_url(POSTGRES_URL) as waiter, store_from_url(POSTGRES_URL) as sender:
        assert isinstance(waiter, SqlStore)
        assert await _wakes(waiter, sender, channel)
        listener = waiter._listener
        assert listener is not None
        conn = listener._conn

        async def no_answer(conn: object) -> None:
            raise TimeoutError("no answer")  # as from a half-open connection

        monkeypatch.setattr(listener, "_ping", no_answer)
        with caplog.at_level(logging.WARNING):
            assert not await _wakes(waiter, sender, channel, timeout=0.1)  # the check fails
        assert "PostgreSQL signals unavailable" in caplog.text
        assert conn.is_closed()
        monkeypatch.undo()  # the server answers again
        assert await _wakes(waiter, sender, channel, timeout=10)  # a new connection listens
        assert listener.connects == 2


async def test_stores_with_other_table_prefixes_do_not_wake_each_other() -> None:
    require_service("postgres")
    channel = _channel()
    async with (
        SqlStore(POSTGRES_URL) as waiter,
        SqlStore(POSTGRES_URL, table_prefix="other_") as stranger,
        SqlStore(POSTGRES_URL) as sender,
    ):
        assert not await _wakes(waiter, stranger, channel)
        assert await _wakes(waiter, sender, channel)


async def test_mariadb_and_sqlite_have_no_signals(tmp_path: Path) -> None:
    require_service("mariadb")
    for url in (MYSQL_URL, f"sqlite:///{tmp_path / 's.db'}"):
        async with store_from_url(url) as store:
            assert signals_of(store) is None
            with pytest.raises(Exception, match="has no signals"):
                await store.signal(_channel())  # type: ignore[attr-defined]
