"""The PostgreSQL board's wake-ups after finishes, coalesced per channel
(:class:`~agentscope_teams.store.sql.signals.Wakes`): a finish that committed while another's
``NOTIFY`` is queued and not yet started sends none of its own; one that committed while a
``NOTIFY`` is on the wire queues the next, sent once that one is answered. Statements are counted
on a connection that holds each ``NOTIFY`` until the test lets it go, so every interleaving is
chosen by the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_teams.store import StoreBackend
from agentscope_teams.store.base import signals_of
from agentscope_teams.store.sql.signals import NOTIFY, Wakes
from agentscope_teams.teams import LocalTeamClient, Member

from ..backends import StoreSpec
from .board_paths import native_spec
from .round_trips import count_round_trips

pytestmark = pytest.mark.anyio


class HeldConn:
    """An asyncpg-like connection whose statements wait until :meth:`release` (one each)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self._go: list[anyio.Event] = []
        self.fail = False

    async def execute(self, sql: str, channel: str, **options: Any) -> None:
        self.sent.append((sql, channel))
        go = anyio.Event()
        self._go.append(go)
        await go.wait()
        if self.fail:
            raise OSError("connection reset")

    def release(self) -> None:
        self._go.pop(0).set()


async def settle() -> None:
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


async def test_commits_during_a_notify_in_flight_share_the_next_one() -> None:
    wakes, conn = Wakes(), HeldConn()
    answers: dict[str, bool] = {}

    async def commit(name: str) -> None:
        answers[name] = await wakes.after_commit(conn, "ast_team")

    async with anyio.create_task_group() as tg:
        tg.start_soon(commit, "a")  # sends: nothing in flight
        await settle()
        assert conn.sent == [(NOTIFY, "ast_team")]
        for name in ("b", "c", "d"):  # committed while a's NOTIFY is on the wire
            tg.start_soon(commit, name)
        await settle()
        assert conn.sent == [(NOTIFY, "ast_team")]  # b queued; c and d rely on b's
        assert answers == {"c": False, "d": False}
        conn.release()  # a's answered: b's starts, after every commit above
        await settle()
        assert len(conn.sent) == 2 and answers == {"a": True, "c": False, "d": False}
        tg.start_soon(commit, "e")  # committed after b's NOTIFY started: needs its own
        await settle()
        conn.release()
        await settle()
        assert len(conn.sent) == 3
        conn.release()
    assert answers == {"a": True, "b": True, "c": False, "d": False, "e": True}
    assert wakes.sent == 3


async def test_commits_one_after_another_each_send_their_own() -> None:
    """The control: with no NOTIFY in flight nothing is shared."""
    wakes, conn = Wakes(), HeldConn()
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(wakes.after_commit, conn, "ast_team")
            await settle()
            conn.release()
            await settle()
    assert len(conn.sent) == 3 and wakes.sent == 3


async def test_each_channel_is_coalesced_apart() -> None:
    wakes, conn = Wakes(), HeldConn()
    async with anyio.create_task_group() as tg:
        tg.start_soon(wakes.after_commit, conn, "ast_one")
        tg.start_soon(wakes.after_commit, conn, "ast_two")
        await settle()
        assert sorted(c for _, c in conn.sent) == ["ast_one", "ast_two"]
        conn.release()
        conn.release()


async def test_a_cancelled_writer_still_sends_the_notify_others_rely_on() -> None:
    wakes, conn = Wakes(), HeldConn()
    scopes: list[anyio.CancelScope] = []

    async def queued_then_cancelled() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await wakes.after_commit(conn, "ast_team")

    async with anyio.create_task_group() as tg:
        tg.start_soon(wakes.after_commit, conn, "ast_team")
        await settle()
        tg.start_soon(queued_then_cancelled)  # queues the next NOTIFY
        await settle()
        assert not await wakes.after_commit(conn, "ast_team")  # relies on the queued one
        scopes[0].cancel()  # its caller goes away while it waits
        conn.release()
        await settle()
        assert len(conn.sent) == 2  # sent all the same
        conn.release()
    assert wakes.sent == 2


async def test_a_failed_notify_is_logged_and_the_next_commit_sends_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wakes, conn = Wakes(), HeldConn()
    conn.fail = True
    async with anyio.create_task_group() as tg:
        tg.start_soon(wakes.after_commit, conn, "ast_team")
        await settle()
        conn.release()
    assert "could not wake the waiters of channel ast_team" in caplog.text and wakes.sent == 0
    conn.fail = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(wakes.after_commit, conn, "ast_team")
        await settle()
        conn.release()
    assert len(conn.sent) == 2 and wakes.sent == 1


# -- on PostgreSQL, through the board ------------------------------------------------------------


@pytest.fixture(params=["postgres"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Any) -> StoreSpec:
    return native_spec(request, tmp_path)


@pytest.fixture
async def store(store_spec: StoreSpec) -> AsyncIterator[StoreBackend]:
    async with store_spec.open() as s:
        yield s


async def test_completions_during_a_wake_up_in_flight_send_one_more_between_them(
    store: StoreBackend, client: LocalTeamClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three members complete while the first completion's ``pg_notify`` is held: the second
    queues one more (sent once the first is answered), the third sends nothing after its
    ``WITH``; a waiter is woken; every task is completed."""
    team = await client.create_team("crew", members=[Member(name=n) for n in "abcd"])
    for i in range(4):
        await client.assign_task(team.id, f"task {i}")
    claimed = {m: await client.claim_task(team.id, m) for m in "abc"}
    wakes = store.wakes  # type: ignore[attr-defined]
    sent_before = wakes.sent
    held: list[anyio.Event] = []
    real = Wakes._notify

    async def held_notify(self: Wakes, conn: Any, channel: str) -> None:
        go = anyio.Event()
        held.append(go)
        await go.wait()
        await real(self, conn, channel)

    monkeypatch.setattr(Wakes, "_notify", held_notify)
    signals = signals_of(store)
    assert signals is not None
    channel = client._keys(team.id).signal()
    assert not await signals.wait_signal([channel], 0.05)  # listening from now on
    done: dict[str, tuple[int, int]] = {}  # member: (NOTIFYs sent, NOTIFYs begun) when done

    async def complete(member: str) -> None:
        task = claimed[member]
        assert task is not None
        await client.complete_task(team.id, member, task.id, "done")
        done[member] = (counter.seen.count("NOTIFY"), len(held))

    def queued() -> bool:
        return any(state.queued for state in wakes._channels.values())

    async def until(done: Any) -> None:
        while not done():  # noqa: ASYNC110 - states of the code under test, not events
            await anyio.sleep(0.01)

    async with count_round_trips(store) as counter, anyio.create_task_group() as tg:
        tg.start_soon(complete, "a")
        await until(lambda: held)  # a's NOTIFY on the wire
        tg.start_soon(complete, "b")
        await until(queued)  # b committed, its NOTIFY queued behind a's
        tg.start_soon(complete, "c")
        await until(lambda: "c" in done)
        assert done["c"] == (0, 1)  # b's NOTIFY starts after c's commit: none of its own
        held[0].set()
        await until(lambda: len(held) == 2)
        held[1].set()
        woke = await signals.wait_signal([channel], 10.0)  # a guard, not a latency bound
    assert woke
    assert done["a"][0] >= 1 and done["b"][0] == 2
    assert counter.seen == ["WITH"] * 3 + ["NOTIFY"] * 2
    assert wakes.sent - sent_before == 2
    tasks = await client.list_tasks(team.id)
    assert sorted(t.status.value for t in tasks) == ["completed"] * 3 + ["pending"]
