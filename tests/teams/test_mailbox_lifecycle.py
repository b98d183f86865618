"""The mailbox around damaged messages and the team's lifecycle, on memory, Redis and PostgreSQL:
a page of unreadable messages does not stall an inbox, a send racing ``delete_team`` leaves
nothing behind."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentscope_teams.agent.extension import ReadMark
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, Team, delivery
from agentscope_teams.teams.mailbox import Mailbox
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
