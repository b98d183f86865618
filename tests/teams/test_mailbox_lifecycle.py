"""The mailbox around damaged messages and the team's lifecycle, on memory, Redis and PostgreSQL:
a page of unreadable messages does not stall an inbox, a send racing ``delete_team`` leaves
nothing behind."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent.extension import ReadMark
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError, UnknownTeamError
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    Team,
    TeamMemberExtension,
    delivery,
)
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.mailbox import Mailbox
from agentscope_teams.teams.member.step_reads import Known, read_team
from agentscope_teams.teams.member.work import find_work

from ..backends import POSTGRES_URL, REDIS_URL, unique_namespace
from ..conftest import require_service

pytestmark = pytest.mark.anyio
GARBAGE = b"\x00not json"
NEWER = b'{"schema_version": 99, "sender": "lead", "recipient": "a", "content": "x"}'


@pytest.fixture(params=["memory", "redis", "postgres"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[BaseStore]:
    if request.param == "memory":
        async with store_from_url("memory://") as s:
            yield s
        return
    require_service(request.param)
    url = REDIS_URL if request.param == "redis" else POSTGRES_URL
    opts = {"namespace": unique_namespace()} if request.param == "redis" else {}
    async with store_from_url(url, **opts) as s:
        yield s


async def crew(client: LocalTeamClient) -> Team:
    return await client.create_team("crew", members=[Member(name="a", spec="w")])


async def test_a_full_page_of_unreadable_messages_does_not_stall_the_inbox(
    client: LocalTeamClient, store: BaseStore
) -> None:
    team = await crew(client)
    inbox = client._keys(team.id).inbox("a")
    for i in range(delivery.INBOX_PAGE):  # a whole page nobody can decode
        await store.append(inbox, GARBAGE if i % 2 else NEWER)
    good = await client.send_message(team.id, "lead", "a", "the one that matters")

    # the runtime sees work (the page is not empty), so the member is woken
    assert await find_work(client, team, "a", [], set()) is not None
    view = client.as_member(team.id, "a")
    mark, state = ReadMark(), AgentState()
    got = await delivery.take(view, mark, state)
    texts = [m.get_text_content() for m in got]
    assert any("the one that matters" in t for t in texts), texts
    notice = texts[0]
    assert f"{delivery.INBOX_PAGE} messages" in notice and "could not be read" in notice
    assert "seq 1" in notice and f"seq {delivery.INBOX_PAGE}" in notice
    await delivery.acknowledge(view, mark)
    assert await Mailbox(store, client._keys(team.id)).cursor("a") == good.seq
    assert await client.unread(team.id, "a") == []


async def test_an_unreadable_page_is_skipped_when_read_page_by_page(
    client: LocalTeamClient, store: BaseStore
) -> None:
    team = await crew(client)
    for _ in range(3):
        await store.append(client._keys(team.id).inbox("a"), GARBAGE)
    await client.send_message(team.id, "lead", "a", "later")
    page = await client.unread(team.id, "a", limit=3)
    assert [p.id for p in page.problems] == ["1", "2", "3"]
    (notice,) = page
    assert notice.sender == "" and notice.seq == 3 and "3 messages" in notice.content
    await client.acknowledge(team.id, "a", page[-1].seq)
    assert [m.content for m in await client.unread(team.id, "a")] == ["later"]


class Paused:
    """Holds the first store call ``method`` makes on ``key`` until :attr:`go` is set: the call
    has read the team (it is past its checks) and not written yet."""

    def __init__(self, store: BaseStore, method: str, key: tuple[str, ...]) -> None:
        self.reached, self.go = anyio.Event(), anyio.Event()
        self.real, self.key = getattr(store, method), key

    async def __call__(self, key: tuple[str, ...], *args: Any, **kw: Any) -> Any:
        if tuple(key) == self.key and not self.reached.is_set():
            self.reached.set()
            await self.go.wait()
        return await self.real(key, *args, **kw)


async def leftovers(client: LocalTeamClient, store: BaseStore, team: Team) -> list[object]:
    keys = client._keys(team.id)
    found: list[object] = list(await store.list_keys(keys.base, limit=50))
    for name in team.participants():
        found += await store.read(keys.inbox(name), after=0, limit=10)
    return found


async def race_delete(
    client: LocalTeamClient, paused: Paused, team: Team, write: Callable[[], Awaitable[object]]
) -> BaseException | None:
    """Run ``write`` until ``paused`` holds it, delete the team, then let the write go on."""
    outcome: list[BaseException | None] = []

    async def run() -> None:
        try:
            await write()
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)
        finally:
            paused.reached.set()  # a write that never reached the pause: the delete comes after

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await paused.reached.wait()
        await client.delete_team(team.id)
        paused.go.set()
    return outcome[0]


@pytest.mark.parametrize("kind", ["send", "broadcast"])
async def test_a_message_sent_while_the_team_is_deleted_leaves_nothing_behind(
    client: LocalTeamClient, store: BaseStore, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    team = await client.create_team(
        "crew", members=[Member(name="a", spec="w"), Member(name="b", spec="w")]
    )
    paused = Paused(store, "append", client._keys(team.id).inbox("a"))
    monkeypatch.setattr(store, "append", paused)
    if kind == "send":
        error = await race_delete(
            client, paused, team, lambda: client.send_message(team.id, "lead", "a", "late")
        )
    else:
        error = await race_delete(
            client, paused, team, lambda: client.broadcast_message(team.id, "lead", "late")
        )
    assert await leftovers(client, store, team) == []
    assert isinstance(error, UnknownTeamError) and f"team {team.id!r} was deleted" in str(error)


async def test_an_acknowledgement_while_the_team_is_deleted_leaves_nothing_behind(
    client: LocalTeamClient, store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = await crew(client)
    sent = await client.send_message(team.id, "lead", "a", "hi")
    paused = Paused(store, "put", client._keys(team.id).cursor("a"))
    monkeypatch.setattr(store, "put", paused)
    error = await race_delete(
        client, paused, team, lambda: client.acknowledge(team.id, "a", sent.seq)
    )
    assert await leftovers(client, store, team) == []
    assert isinstance(error, UnknownTeamError) and f"team {team.id!r} was deleted" in str(error)


async def test_a_task_assigned_while_the_team_is_deleted_leaves_nothing_behind(
    client: LocalTeamClient, store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = await crew(client)
    keys = client._keys(team.id)
    paused = Paused(store, "append", keys.task_seq())
    monkeypatch.setattr(store, "append", paused)
    error = await race_delete(
        client, paused, team, lambda: client.assign_task(team.id, "late", assignee="a")
    )
    assert await leftovers(client, store, team) == []
    assert await store.read(keys.task_seq(), after=0, limit=10) == []
    assert await TaskBoard(store, keys).open_board() == []
    assert isinstance(error, UnknownTeamError) and f"team {team.id!r} was deleted" in str(error)


async def test_a_member_whose_team_is_deleted_during_its_call_ends_the_call(
    tmp_path: Path,
) -> None:
    """The member's messages are acknowledged after its state is saved; a team deleted in
    between leaves nothing to acknowledge, and the call ends with its answer instead of the
    deleted team's error."""
    async with store_from_url("memory://") as store:
        ctx = RuntimeContext(session_id="s", user_id="alice", org_id=unique_namespace())
        client = LocalTeamClient(store, ctx)
        team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
        await client.send_message(team.id, "b", "a", "hi")

        async def answer(request: ModelRequest) -> str:
            await client.delete_team(team.id)  # by the lead, while the member thinks
            return "ok"

        ext = TeamMemberExtension(client.as_member(team.id, "a"))
        ext.team = await client.get_team(team.id)
        agent = HarnessAgent(
            "a",
            ScriptedModel([answer]),
            workspace=tmp_path / "ws",
            store=store,
            builtin_tools=False,
            extensions=[ext],
        )
        reply = await agent.call("You have new work", ctx.with_session("s-a"))
        assert reply.get_text_content() == "ok"
        assert await leftovers(client, store, team) == []


async def test_an_unreadable_cursor_stalls_neither_its_member_nor_the_team(
    client: LocalTeamClient, store: BaseStore
) -> None:
    """A member's cursor record that cannot be decoded (damaged, or written by a newer version)
    is read as no cursor (the member's messages are delivered again: at least once), named in
    the log; acknowledging writes a good one; the other members' reads never see it."""
    team = await client.create_team(
        "crew", members=[Member(name="a", spec="w"), Member(name="b", spec="w")]
    )
    keys = client._keys(team.id)
    first = await client.send_message(team.id, "lead", "a", "for a")
    await client.acknowledge(team.id, "a", first.seq)
    await store.put(keys.cursor("a"), GARBAGE)
    await client.send_message(team.id, "lead", "b", "for b")

    known = Known()
    inbox = Mailbox(store, keys)
    got = await read_team(client, team.id, TaskBoard(store, keys), inbox, known, lambda n: True)
    assert [m.content for m in got.unread["b"]] == ["for b"]
    assert [m.content for m in got.unread["a"]] == ["for a"]  # again: its cursor was lost
    assert [m.content for m in await client.unread(team.id, "a")] == ["for a"]
    assert await client.acknowledge(team.id, "a", first.seq) == first.seq
    assert await client.unread(team.id, "a") == []


async def test_acknowledging_past_the_last_message_is_refused(
    client: LocalTeamClient, store: BaseStore
) -> None:
    """A cursor past every message would silently skip the messages sent later: refused, named."""
    team = await crew(client)
    sent = await client.send_message(team.id, "lead", "a", "one")
    with pytest.raises(
        TeamError,
        match=rf"acknowledge seq {sent.seq + 1000} in the inbox of 'a': it holds no message",
    ):
        await client.acknowledge(team.id, "a", sent.seq + 1000)
    assert await client.acknowledge(team.id, "a", sent.seq) == sent.seq
    with pytest.raises(TeamError, match="the messages sent later would be skipped unread"):
        await client.acknowledge(team.id, "a", sent.seq + 1)
    later = await client.send_message(team.id, "lead", "a", "two")
    assert [m.content for m in await client.unread(team.id, "a")] == ["two"]
    assert await client.acknowledge(team.id, "a", later.seq) == later.seq
    assert await client.acknowledge(team.id, "a", 0) == later.seq  # never backwards


async def test_an_acknowledgement_checked_while_the_team_is_deleted_names_the_deletion(
    client: LocalTeamClient, store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = await crew(client)
    sent = await client.send_message(team.id, "lead", "a", "hi")
    paused = Paused(store, "read", client._keys(team.id).inbox("a"))  # the seq check's read
    monkeypatch.setattr(store, "read", paused)
    error = await race_delete(
        client, paused, team, lambda: client.acknowledge(team.id, "a", sent.seq)
    )
    monkeypatch.undo()
    assert await leftovers(client, store, team) == []
    assert isinstance(error, UnknownTeamError) and f"team {team.id!r} was deleted" in str(error)
