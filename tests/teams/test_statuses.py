"""Member statuses after a team finished: every member ends ``stopped``, whichever process held (or
did not hold) its lease, and a late write of a member's call cannot bring it back. Driven directly,
without sleeping."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError
from agentscope_teams.store import BaseStore, Key, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    MemberBuilder,
    MemberStatus,
    Team,
    TeamRef,
    TeamRuntime,
    TeamStatus,
)
from agentscope_teams.teams.member.slot import Slot

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store() -> AsyncIterator[BaseStore]:
    async with store_from_url("memory://") as s:
        yield s


async def busy_team(client: LocalTeamClient) -> Team:
    """a running, b idle, c just spawned."""
    team = await client.create_team("crew", members=[Member(name=n, spec="w") for n in "abc"])
    await client.set_member_status(team.id, "a", MemberStatus.RUNNING)
    await client.set_member_status(team.id, "b", MemberStatus.IDLE)
    return team


def statuses(team: Team) -> dict[str, MemberStatus]:
    return {m.name: m.status for m in team.members}


STOPPED = dict.fromkeys("abc", MemberStatus.STOPPED)


async def test_a_done_team_stops_members_this_process_holds_no_lease_of(
    store: BaseStore, alice: RuntimeContext, tmp_path: Path
) -> None:
    client = LocalTeamClient(store, alice)
    team = await busy_team(client)
    builder = MemberBuilder(
        store=store, specs={}, client_factory=LocalTeamClient, workspace=tmp_path, root=tmp_path
    )
    runtime = TeamRuntime(store)
    ref = TeamRef(alice, team.id, builder)
    for name in "ab":  # slots whose lease was released (idle) or lost: no lease here
        runtime.slots[(*ref.key, name)] = Slot(ref, name)

    done = await client.set_team_status(team.id, TeamStatus.DONE)
    assert statuses(done) == STOPPED  # in the same write as the status

    # what a member's call still running elsewhere writes when it ends, or when it starts
    for late in (MemberStatus.IDLE, MemberStatus.RUNNING):
        with pytest.raises(TeamError, match=f"team {team.id!r} is done"):
            await client.set_member_status(team.id, "a", late)
    assert (await client.set_member_status(team.id, "b", MemberStatus.STOPPED)).status is (
        MemberStatus.STOPPED
    )
    await runtime.aclose()  # shuts down with no lease held: changes nothing
    assert statuses(await client.get_team(team.id)) == STOPPED


class CrashOnDelete:
    """A store whose deletes fail: ``delete_team`` stops right after marking the team deleted."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def delete(self, key: Key, *, expected_version: int | None = None) -> bool:
        raise OSError("crashed")


async def test_a_deleted_team_is_marked_with_its_members_stopped(
    store: BaseStore, alice: RuntimeContext
) -> None:
    """A crash right after delete_team marked the team leaves it deleted with stopped members."""
    team = await busy_team(LocalTeamClient(store, alice))
    crashing = LocalTeamClient(cast(BaseStore, CrashOnDelete(store)), alice)
    with pytest.raises(OSError, match="crashed"):
        await crashing.delete_team(team.id)
    left = await LocalTeamClient(store, alice)._team(team.id, allow_deleted=True)
    assert left.status is TeamStatus.DELETED and statuses(left) == STOPPED


async def test_an_active_team_again_lets_members_run(
    store: BaseStore, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(store, alice)
    team = await busy_team(client)
    await client.set_team_status(team.id, TeamStatus.DONE)
    await client.set_team_status(team.id, TeamStatus.ACTIVE)
    assert statuses(await client.get_team(team.id)) == STOPPED
    member = await client.set_member_status(team.id, "a", MemberStatus.RUNNING)
    assert member.status is MemberStatus.RUNNING
