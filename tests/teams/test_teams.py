"""Team records: creation, members, listing, deletion and (org, user) isolation."""

from __future__ import annotations

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError, UnknownMemberError
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    MemberStatus,
    TeamClient,
    TeamKeys,
    TeamStatus,
    UnknownTeamError,
)

pytestmark = pytest.mark.anyio


def other(ctx: RuntimeContext, **changes: str) -> RuntimeContext:
    fields = {"session_id": "s-other", "user_id": ctx.user_id, "org_id": ctx.org_id, **changes}
    return RuntimeContext(metadata={}, **fields)


async def test_create_spawn_and_list(client: LocalTeamClient) -> None:
    assert isinstance(client, TeamClient)
    team = await client.create_team("crew", members=[Member(name="a", spec="coder")])
    spawned = await client.spawn_member(team.id, "b", "reviewer", session_id="s-b")
    assert (spawned.name, spawned.spec, spawned.session_id) == ("b", "reviewer", "s-b")
    assert await client.spawn_member(team.id, "b", "reviewer") == spawned
    with pytest.raises(TeamError, match="already has a member named 'b'"):
        await client.spawn_member(team.id, "b", "tester")
    with pytest.raises(TeamError, match="already has a member named 'lead'"):
        await client.spawn_member(team.id, "lead", "tester")
    running = await client.set_member_status(team.id, "a", MemberStatus.RUNNING)
    assert running.status is MemberStatus.RUNNING
    with pytest.raises(UnknownMemberError):
        await client.set_member_status(team.id, "ghost", MemberStatus.RUNNING)
    fetched = await client.get_team(team.id)
    assert fetched.participants() == ["lead", "a", "b"]
    assert fetched.member("a") == running
    second = await client.create_team("second")
    assert [t.id for t in await client.list_teams()] == [team.id, second.id]
    with pytest.raises(TeamError, match="must be unique"):
        await client.create_team("dup", members=[Member(name="x"), Member(name="x")])


async def test_a_new_member_name_with_a_slash_is_refused_naming_what_to_use(
    client: LocalTeamClient,
) -> None:
    # the HTTP API names members in URL paths (/inbox/{member}): 'ui/forms' could not be read there
    team = await client.create_team("crew")
    with pytest.raises(ValueError, match=r"'ui/forms' may not contain '/'.*'ui-forms'"):
        await client.spawn_member(team.id, "ui/forms", "coder")
    with pytest.raises(ValueError, match="may not contain '/'"):
        await client.create_team("crew2", members=[Member(name="a/b")])
    with pytest.raises(ValueError, match="lead 'x/lead' may not contain '/'"):
        await client.create_team("crew3", lead="x/lead")
    assert [m.name for m in (await client.get_team(team.id)).members] == []


async def test_teams_are_invisible_to_other_users(
    client: LocalTeamClient, store: BaseStore
) -> None:
    team = await client.create_team("secret", members=[Member(name="a")])
    task = await client.assign_task(team.id, "private")
    for ctx in (
        other(client.ctx, user_id="bob"),
        other(client.ctx, org_id=f"{client.ctx.org_id}-other"),
    ):
        bob = LocalTeamClient(store, ctx)
        assert await bob.list_teams() == []
        missing = f"no team {team.id!r} is visible to this user"
        for op in (
            bob.get_team(team.id),
            bob.list_tasks(team.id),
            bob.get_task(team.id, task.id),
            bob.claim_task(team.id, "a"),
            bob.claim_task(team.id, "a", task.id),
            bob.send_message(team.id, "a", "lead", "hi"),
            bob.read_messages(team.id, "a"),
            bob.assign_task(team.id, "intrude"),
            bob.delete_team(team.id),
        ):
            with pytest.raises(UnknownTeamError, match=missing):
                await op
        await bob.create_team("bob's own")
    assert [t.id for t in await client.list_teams()] == [team.id]
    assert (await client.get_task(team.id, task.id)).owner is None
    assert await client.read_messages(team.id, "lead") == []
    same_user = LocalTeamClient(store, other(client.ctx))
    assert (await same_user.get_team(team.id)).id == team.id


async def test_delete_team_removes_its_records(client: LocalTeamClient, store: BaseStore) -> None:
    team = await client.create_team("temp", members=[Member(name="a")])
    await client.assign_task(team.id, "one")
    await client.send_message(team.id, "lead", "a", "hi")
    await client.acknowledge(team.id, "a", 1)
    keep = await client.create_team("keep")
    # A crashed earlier delete left the team marked deleted with its records in place.
    await client.set_team_status(team.id, TeamStatus.DONE)
    await client._update_team(
        team.id, lambda t: t.model_copy(update={"status": TeamStatus.DELETED})
    )
    with pytest.raises(UnknownTeamError, match="was deleted"):
        await client.get_team(team.id)
    assert [t.id for t in await client.list_teams()] == [keep.id]

    await client.delete_team(team.id)
    keys = TeamKeys(client.ctx.owner_scope(), team.id)
    assert await store.list_keys(keys.base) == []
    assert await store.read(keys.inbox("a")) == []
    with pytest.raises(UnknownTeamError, match="is visible"):
        await client.delete_team(team.id)
    assert [t.id for t in await client.list_teams()] == [keep.id]
