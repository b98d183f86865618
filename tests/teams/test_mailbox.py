"""Mailbox semantics in one process, over every backend."""

from __future__ import annotations

import pytest

from agentscope_teams.errors import TeamError, UnknownMemberError
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, Member, Team

pytestmark = pytest.mark.anyio


async def make_team(client: LocalTeamClient) -> Team:
    members = [Member(name=n, spec="worker") for n in ("coder", "reviewer", "tester")]
    return await client.create_team("crew", lead="boss", members=members)


async def test_messages_arrive_in_order_with_store_seqs(client: LocalTeamClient) -> None:
    team = await make_team(client)
    sent = [await client.send_message(team.id, "coder", "reviewer", f"m{i}") for i in range(5)]
    got = await client.read_messages(team.id, "reviewer")
    assert [m.content for m in got] == [f"m{i}" for i in range(5)]
    assert [m.seq for m in got] == [m.seq for m in sent]
    assert all(m.sender == "coder" and m.recipient == "reviewer" for m in got)
    assert [m.seq for m in got] == sorted({m.seq for m in got})
    later = await client.read_messages(team.id, "reviewer", after=got[1].seq, limit=2)
    assert [m.content for m in later] == ["m2", "m3"]
    assert await client.read_messages(team.id, "tester") == []


async def test_lead_is_a_recipient_and_a_sender(client: LocalTeamClient) -> None:
    team = await make_team(client)
    await client.send_message(team.id, "tester", "boss", "all green")
    await client.send_message(team.id, "boss", "tester", "thanks")
    assert [m.content for m in await client.read_messages(team.id, "boss")] == ["all green"]
    assert [m.sender for m in await client.read_messages(team.id, "tester")] == ["boss"]


async def test_broadcast_reaches_everyone_but_the_sender(client: LocalTeamClient) -> None:
    team = await make_team(client)
    out = await client.broadcast_message(team.id, "reviewer", "freeze the branch")
    assert sorted(m.recipient for m in out) == ["boss", "coder", "tester"]
    for member in ("boss", "coder", "tester"):
        (msg,) = await client.read_messages(team.id, member)
        assert (msg.sender, msg.content, msg.broadcast) == ("reviewer", "freeze the branch", True)
    assert await client.read_messages(team.id, "reviewer") == []


async def test_unknown_members_are_errors_not_silent_success(client: LocalTeamClient) -> None:
    team = await make_team(client)
    with pytest.raises(
        UnknownMemberError, match=r"'ghost' is not a member .*'boss' \(lead\), 'coder'"
    ):
        await client.send_message(team.id, "coder", "ghost", "hello?")
    with pytest.raises(UnknownMemberError, match="'mallory' is not a member"):
        await client.send_message(team.id, "mallory", "coder", "spoofed")
    with pytest.raises(UnknownMemberError):
        await client.broadcast_message(team.id, "mallory", "spoofed")
    with pytest.raises(UnknownMemberError):
        await client.read_messages(team.id, "ghost")
    with pytest.raises(TeamError, match="cannot send a message to itself"):
        await client.send_message(team.id, "coder", "coder", "echo")
    assert await client.read_messages(team.id, "coder") == []


async def test_acknowledged_cursor_survives_a_new_client(
    client: LocalTeamClient, store: BaseStore
) -> None:
    team = await make_team(client)
    for i in range(6):
        await client.send_message(team.id, "coder", "tester", f"n{i}")
    first = await client.unread(team.id, "tester", limit=4)
    assert [m.content for m in first] == ["n0", "n1", "n2", "n3"]
    assert await client.acknowledge(team.id, "tester", first[-1].seq) == first[-1].seq
    assert await client.acknowledge(team.id, "tester", first[0].seq) == first[-1].seq

    restarted = LocalTeamClient(store, client.ctx)
    assert [m.content for m in await restarted.unread(team.id, "tester")] == ["n4", "n5"]
    assert [m.content for m in await restarted.unread(team.id, "tester")] == ["n4", "n5"]
    with pytest.raises(ValueError, match="cursor must be an int >= 0"):
        await restarted.acknowledge(team.id, "tester", -1)


async def test_member_view_binds_the_sender(client: LocalTeamClient) -> None:
    team = await make_team(client)
    coder = client.as_member(team.id, "coder")
    msg = await coder.send("reviewer", "PR ready")
    assert msg.sender == "coder"
    task = await client.as_member(team.id, "boss").assign("review PR", assignee="reviewer")
    reviewer = client.as_member(team.id, "reviewer")
    claimed = await reviewer.claim()
    assert claimed is not None and claimed.id == task.id
    assert (await reviewer.complete(task.id, "lgtm")).owner == "reviewer"
    assert [m.content for m in await reviewer.unread()] == ["PR ready"]
