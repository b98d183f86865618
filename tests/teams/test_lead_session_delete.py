"""Deleting a lead's session ends the teams it led that are still active, as its ``endTeam``
would: completed, members stopped, out of the team directory (workers stop serving them), and
each task left open cancelled once (TaskCompleted fires for it, pairing its TaskCreated). The
same through ``HarnessAgent.delete_session`` and ``agentscope-teams sessions delete``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent.extension import Extension
from agentscope_teams.context import RuntimeContext
from agentscope_teams.hooks import Hooks, hooks_from_callables
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.teams import (
    LocalTeamClient,
    MemberStatus,
    TaskStatus,
    TeamLeadExtension,
    TeamStatus,
)
from agentscope_teams.teams.directory import get_record
from agentscope_teams.teams.lead.state import TeamLeadState

from ..backends import REDIS_URL, unique_namespace
from ..cli.conftest import Cli, cli  # noqa: F401  (the fixture)
from ..conftest import require_service
from .test_team_archive_served import served

pytestmark = pytest.mark.anyio
SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"
ALICE = RuntimeContext(session_id="s-lead", user_id="alice", org_id="acme")
OTHER = RuntimeContext(session_id="s-other", user_id="alice", org_id="acme")


@pytest.fixture(params=["memory", "file", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    if request.param == "redis":
        require_service("redis")
        async with store_from_url(REDIS_URL, namespace=unique_namespace()) as s:
            yield s
        return
    url = "memory://" if request.param == "memory" else f"file://{tmp_path / 'store'}"
    async with store_from_url(url) as s:
        yield s


def make_lead(store: BaseStore, tmp_path: Path, seen: list[dict[str, Any]]) -> HarnessAgent:
    """A lead whose every call forms a team, assigns two tasks and ends with them open."""

    def record(payload: dict[str, Any]) -> None:
        seen.append(payload)

    hooks = Hooks(
        hooks_from_callables({"TaskCreated": [record], "TaskCompleted": [record]}),
        project_dir=tmp_path,
    )
    ext = TeamLeadExtension(SPEC_DIR, run_members="workers", hooks=hooks)
    form = ScriptedModel.tool_calls(
        [
            ("createTeam", {"name": "t"}),
            ("spawnMember", {"name": "a", "spec": "reviewer"}),
            ("assignTask", {"title": "one", "assignee": "a"}),
            ("assignTask", {"title": "two"}),
        ]
    )
    model = ScriptedModel([form, "Working on it.", form, "Working on it."])
    return HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])


async def team_of(lead: HarnessAgent, ctx: RuntimeContext) -> str:
    await lead.call("go", ctx)
    team_id = TeamLeadState.peek(await lead.get_agent_state(ctx)).team_id
    assert team_id is not None
    return team_id


async def test_deleting_the_leads_session_ends_its_active_teams(
    store: BaseStore, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    lead = make_lead(store, tmp_path, seen)
    mine, other = await team_of(lead, ALICE), await team_of(lead, OTHER)
    assert sorted(await served(store)) == sorted([mine, other])
    client = LocalTeamClient(store, ALICE)

    assert await lead.delete_session(ALICE)
    team = await client.get_team(mine)  # kept, readable
    assert team.status is TeamStatus.COMPLETED and team.ended_at is not None
    assert {m.status for m in team.members} == {MemberStatus.STOPPED}
    assert [t.status for t in await client.list_tasks(mine)] == [TaskStatus.CANCELLED] * 2
    assert await get_record(store, ALICE, mine) is None
    assert await served(store) == [other]  # the other session's team is untouched
    assert (await client.get_team(other)).status is TeamStatus.ACTIVE
    ends = [(p["hook_event_name"], p["task_id"]) for p in seen if p["team_name"] == mine]
    assert sorted(ends) == sorted(
        [(e, t) for e in ("TaskCreated", "TaskCompleted") for t in ("t-1", "t-2")]
    )
    assert not await lead.delete_session(ALICE)  # nothing more happens
    assert len([p for p in seen if p["team_name"] == mine]) == 4


def test_sessions_delete_ends_the_teams_the_session_led(
    cli: Cli,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def form(store: JsonFileStore) -> str:
        return await team_of(make_lead(store, tmp_path, []), ALICE)

    team_id = cli.with_store(form)
    result = cli(
        "sessions", "delete", "s-lead", "--agent", "lead", "--user", "alice", "--org", "acme"
    )
    assert result.returncode == 0, result.stderr
    assert team_id in result.stdout and "ended" in result.stdout

    async def check(store: JsonFileStore) -> None:
        client = LocalTeamClient(store, ALICE)
        team = await client.get_team(team_id)
        assert team.status is TeamStatus.COMPLETED
        assert [t.status for t in await client.list_tasks(team_id)] == [TaskStatus.CANCELLED] * 2
        assert await served(store) == []

    cli.with_store(check)


class Failing(Extension):
    async def on_session_deleted(self, store: BaseStore, ctx: RuntimeContext, agent: str) -> None:
        raise RuntimeError("the store went away")


async def test_session_end_fires_even_when_an_extension_fails_after_the_delete(
    tmp_path: Path,
) -> None:
    ended: list[dict[str, Any]] = []
    hooks = {"SessionEnd": [ended.append]}
    async with store_from_url("memory://") as store:
        agent = HarnessAgent(
            "lead",
            ScriptedModel(["hi"]),
            workspace=tmp_path,
            store=store,
            extensions=[Failing()],
            hooks=hooks,
        )
        await agent.call("go", ALICE)
        with pytest.raises(RuntimeError, match="went away"):
            await agent.delete_session(ALICE)
        assert (await agent.list_sessions(ALICE)) == []  # deleted all the same
    assert [p["reason"] for p in ended] == ["delete"]
