"""A ``FINISH`` whose round trip was lost is sent again, and counts once.

The last ``FINISH`` of a ``HarnessAgent.call`` rides the call's last session save (riders,
``agentscope_teams.store._redis_riders``). When that round trip fails, whether the server ran the
``FINISH`` is unknown. Before, it was not sent again: its reservation (the call's maximum) stayed
held for ``RESERVATION_TTL_MS`` (15 minutes), so the budget looked spent. Now it is sent again,
alone, guarded: it settles only a reservation still held, so when the server had run it the resend
adds nothing. A TCP proxy in front of a private ``redis-server`` cuts the connection of the
carrier's write: before the server reads it ("dropped") or after the server ran it and before its
reply reaches the client ("ran").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import Budget, RuntimeContext
from agentscope_teams.store import RedisStore
from agentscope_teams.usage import add_budget, flush
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.rules import Admission, Limit, Rates

from .test_riders import _agent, _model, private  # noqa: F401  (a fixture)

pytestmark = pytest.mark.anyio


class Proxy:
    """A TCP proxy to ``upstream``; armed with a marker and a mode, it cuts the first client
    write holding the marker: ``"dropped"`` (the server never sees it) or ``"ran"`` (the server
    runs it, its reply is thrown away). Every connection it cut is closed on both sides."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.mode: str | None = None
        self.marker = b""
        self.cut = 0
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        self.server.close()
        for task in list(self._tasks):
            task.cancel()

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection("127.0.0.1", self.upstream)
        down = asyncio.create_task(self._pipe(ur, cw))
        self._tasks.add(down)
        try:
            while data := await cr.read(1 << 16):
                if self.mode is not None and self.marker in data:
                    mode, self.mode = self.mode, None
                    down.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await down
                    if mode == "ran":
                        uw.write(data)
                        await uw.drain()
                        assert await ur.read(1 << 16)  # the server ran it: its reply, lost
                    self.cut += 1
                    return
                uw.write(data)
                await uw.drain()
        finally:
            down.cancel()
            cw.transport.abort()
            uw.transport.abort()

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while data := await src.read(1 << 16):
                dst.write(data)
                await dst.drain()


@pytest.fixture
async def proxied(private: str) -> AsyncIterator[tuple[Any, Proxy]]:  # noqa: F811
    proxy = Proxy(int(private.rsplit(":", 1)[1].split("/")[0]))
    await proxy.start()
    try:
        async with RedisStore(f"redis://127.0.0.1:{proxy.port}/0") as store:
            yield store, proxy
    finally:
        await proxy.aclose()


@pytest.mark.parametrize("ride", [True, False], ids=["riding", "alone"])
@pytest.mark.parametrize("mode", ["dropped", "ran"])
async def test_a_lost_finish_is_sent_again_and_counts_once(
    proxied: tuple[Any, Proxy], tmp_path: Path, mode: str, ride: bool
) -> None:
    """The round trip of the call's ``FINISH`` (riding the call's last save, or alone as on a
    cluster) loses its connection: after the call the budget holds nothing in flight and counts
    the call's 40 tokens exactly once, whether the server had run the ``FINISH`` or not, and no
    settle is counted as failed."""
    store, proxy = proxied
    store._rides = ride
    model, team = _model(), "team:" + uuid.uuid4().hex[:8]
    agent = _agent(store, tmp_path, model)
    backend: Any = usage_backend(store)
    ctx = RuntimeContext(session_id="s-" + uuid.uuid4().hex[:6], user_id="u", org_id="o")
    with add_budget(team, Budget(max_tokens=10**9), store=store):
        await agent.call("warm", ctx)  # scripts loaded, the session written
        proxy.marker, proxy.mode = backend._finish.sha.encode(), mode
        with contextlib.suppress(Exception):  # the save's round trip failed: the call may fail
            await agent.call("hi", ctx)
    await flush(store)
    assert proxy.cut == 1  # the carrier of the FINISH was cut
    doc = await backend.read(team)
    assert doc is not None
    assert (doc["rt"], doc["ut"]) == (0, 2 * 40)
    raw = await store.client.hgetall(backend._budget(team))
    assert [k for k in raw if k.startswith(b"r:")] == []
    assert backend.settles.failed == 0


async def test_a_finish_whose_server_paused_is_sent_again_and_counts_once(
    private: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server is paused (SIGSTOP) while the carrier of the last ``FINISH`` is in flight: the
    client times out, the server wakes (SIGCONT) with the carrier unread and runs it, and the
    ``FINISH`` sent again finds its reservation settled: counted once, nothing held."""
    async with RedisStore(private + "?socket_timeout=0.5") as store:
        model, team = _model(), "team:" + uuid.uuid4().hex[:8]
        agent = _agent(store, tmp_path, model)
        backend: Any = usage_backend(store)
        pid = int((await store.client.info("server"))["process_id"])
        sha, many, paused = backend._finish.sha, store.client.execute_many, []

        async def execute_many(commands: Any) -> Any:
            if paused or not any(sha in str(list(c)) for c in commands):
                return await many(commands)
            os.kill(pid, signal.SIGSTOP)
            paused.append(pid)
            try:
                return await many(commands)
            finally:
                os.kill(pid, signal.SIGCONT)

        ctx = RuntimeContext(session_id="s-" + uuid.uuid4().hex[:6], user_id="u", org_id="o")
        with add_budget(team, Budget(max_tokens=10**9), store=store):
            await agent.call("warm", ctx)
            monkeypatch.setattr(store.client, "execute_many", execute_many)
            with contextlib.suppress(Exception):
                await agent.call("hi", ctx)
        await flush(store)
        monkeypatch.undo()
        assert paused == [pid]
        doc = await backend.read(team)
        assert doc is not None
        assert (doc["rt"], doc["ut"]) == (0, 2 * 40)
        assert backend.settles.failed == 0


@pytest.mark.parametrize("budgets", [1, 0], ids=["budget", "lease-only"])
async def test_a_resent_finish_settles_only_what_is_still_held(redis: Any, budgets: int) -> None:
    """Sent again after a ``FINISH`` that ran, it changes nothing; sent again after one that never
    ran, it settles (a budget's reservation, or with no budget a concurrency lease)."""
    backend: Any = usage_backend(redis)
    team = "team:" + uuid.uuid4().hex[:8]
    limits = tuple(Limit(team, 10**9, None) for _ in range(budgets))
    key = "p|m|" + uuid.uuid4().hex[:8]
    ran = Admission(limits, uuid.uuid4().hex, 100, 0, key, Rates(concurrent=5), "t")
    lost = ran._replace(rid=uuid.uuid4().hex)
    for a in (ran, lost):
        assert (await backend.admit(a)).refusal is None
    await backend.finish(ran, 40, 0)
    assert await backend.finish_again(ran, 40, 0) is False
    assert await backend.finish_again(lost, 30, 0) is True
    leases = [k for k in await redis.client.hgetall(backend._limiter(key)) if k[:2] == b"l:"]
    assert leases == []
    if budgets:
        doc = await backend.read(team)
        assert (doc["ut"], doc["rt"]) == (70, 0)


@pytest.mark.parametrize("mode", ["dropped", "ran"])
async def test_a_give_back_whose_round_trip_failed_is_sent_again(
    proxied: tuple[Any, Proxy], mode: str
) -> None:
    """The give-back of an admission never sent (a cut-short ``ADMIT``, an early admission no
    request took) loses its connection: it is sent again (it changes only what is held, so
    twice is once), and nothing stays reserved or leased."""
    store, proxy = proxied
    backend: Any = usage_backend(store)
    team, key = "team:" + uuid.uuid4().hex[:8], "p|m|" + uuid.uuid4().hex[:8]
    a = Admission((Limit(team, 10**9, None),), uuid.uuid4().hex, 100, 0, key, Rates(concurrent=5))
    assert (await backend.admit(a)).refusal is None
    proxy.marker, proxy.mode = backend._finish.sha.encode(), mode
    await backend.give_back(a)
    assert proxy.cut == 1
    doc = await backend.read(team)
    assert doc is not None and (doc["rt"], doc["ut"]) == (0, 0)
    raw = await store.client.hgetall(backend._limiter(key))
    assert [k for k in raw if k[:2] == b"l:"] == []
