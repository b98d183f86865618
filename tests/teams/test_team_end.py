"""What a user meets when a team ends: no message is lost without anyone being told.

A message to a team that ended is refused (nobody would read it: the members are stopped and the
lead's session has moved on); a message that reached the lead before the end but after the lead's
last look at its inbox is delivered to the lead's next call as a late message of the ended team.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError, ToolError
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel, ScriptItem
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, Member, TeamLeadExtension, TeamStatus
from agentscope_teams.teams.lead.state import TeamLeadState
from agentscope_teams.teams.member.tools import guarded

from ..backends import POSTGRES_URL, REDIS_URL, unique_namespace
from ..conftest import require_service

pytestmark = pytest.mark.anyio
ALICE = RuntimeContext(session_id="s", user_id="alice")
SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"


@pytest.fixture(params=["memory", "redis", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    if request.param == "memory":
        async with store_from_url("memory://") as s:
            yield s
        return
    require_service(request.param)
    url = REDIS_URL if request.param == "redis" else POSTGRES_URL
    opts = {"namespace": unique_namespace()} if request.param == "redis" else {}
    async with store_from_url(url, **opts) as s:
        yield s


async def ended_team(client: LocalTeamClient) -> str:
    team = await client.create_team(
        "t", members=[Member(name="a", spec="w"), Member(name="b", spec="w")]
    )
    await client.set_team_status(team.id, TeamStatus.COMPLETED)
    return team.id


async def test_a_message_to_an_ended_team_is_refused_and_says_why(client: LocalTeamClient) -> None:
    team_id = await ended_team(client)
    for send in (
        lambda: client.send_message(team_id, "a", "lead", "my late result"),
        lambda: client.send_message(team_id, "a", "b", "still there?"),
        lambda: client.broadcast_message(team_id, "a", "anyone?"),
    ):
        with pytest.raises(TeamError, match=rf"team {team_id!r} has ended \(completed\)"):
            await send()
    for name in ("lead", "a", "b"):  # nothing was written for nobody to read
        assert await client.read_messages(team_id, name) == []


async def test_a_member_tool_send_to_an_ended_team_is_a_tool_error(
    client: LocalTeamClient,
) -> None:
    team_id = await ended_team(client)
    view = client.as_member(team_id, "a")
    with pytest.raises(ToolError, match="has ended"):
        await guarded(lambda **kw: view.send("lead", "late"))()


def lead_with(store: BaseStore, tmp_path: Path, script: list[ScriptItem]) -> HarnessAgent:
    ext = TeamLeadExtension(SPEC_DIR, run_members="workers")  # no member loop in this process
    return HarnessAgent(
        "lead", ScriptedModel(script), workspace=tmp_path / "ws", store=store, extensions=[ext]
    )


async def test_a_message_after_the_leads_last_look_reaches_its_next_call(
    store: BaseStore, alice: RuntimeContext, tmp_path: Path
) -> None:
    """The member reports to the lead while the lead writes its final answer: the reply ends with
    the work finished, so the team ends; the lead's next call reads the message (it was lost: the
    next call forgot the ended team, and nobody read its inbox again)."""
    member = LocalTeamClient(store, alice)
    found: dict[str, str] = {}

    async def final_answer(request: ModelRequest) -> ModelResponse | str:
        team_id = found["team"] = (await member.list_teams())[0].id
        (task,) = await member.list_tasks(team_id)
        await member.claim_task(team_id, "a", task.id)
        await member.complete_task(team_id, "a", task.id, "done")
        await member.send_message(team_id, "a", "lead", "late finding: the cache is stale")
        return "The team finished."

    first: list[ScriptItem] = [
        ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "t"}),
                ("spawnMember", {"name": "a", "spec": "reviewer"}),
                ("assignTask", {"title": "review"}),
            ]
        ),
        final_answer,
        "Noted.",
    ]
    lead = lead_with(store, tmp_path, first)
    await lead.call("go", alice)
    team = await member.get_team(found["team"])
    assert team.status is TeamStatus.COMPLETED  # ended when the reply ended, work finished
    await lead.call("anything new?", alice)
    model = lead.model
    assert isinstance(model, ScriptedModel)
    seen = [m.get_text_content() for m in model.requests[-1].messages]
    late = [t for t in seen if "late finding: the cache is stale" in t]
    assert late, seen
    assert f"team {found['team']}" in late[0] and "ended" in late[0]
    # read once: acknowledged, and the lead's state has no current team
    assert await member.unread(found["team"], "lead") == []
    assert TeamLeadState.peek(await lead.get_agent_state(alice)).team_id is None


class EndBeforeAppend(InMemoryStore):
    """Ends the team just before the next append (the lead's endTeam landing between a send's
    check of the team and its write)."""

    def __init__(self) -> None:
        super().__init__()
        self.team_id: str | None = None

    async def append(self, key: Any, value: bytes, **kwargs: Any) -> int:
        if self.team_id is not None:
            team_id, self.team_id = self.team_id, None
            await LocalTeamClient(self, ALICE).set_team_status(team_id, TeamStatus.COMPLETED)
        return await super().append(key, value, **kwargs)


async def test_a_send_racing_the_end_tells_the_sender() -> None:
    store = EndBeforeAppend()
    client = LocalTeamClient(store, ALICE)
    team = await client.create_team("t", members=[Member(name="a", spec="w")])
    store.team_id = team.id
    with pytest.raises(TeamError, match="ended while this message was sent: it may stay unread"):
        await client.send_message(team.id, "a", "lead", "racing the end")


async def test_a_team_ended_and_replaced_in_one_step_still_delivers_its_late_messages(
    store: BaseStore, alice: RuntimeContext, tmp_path: Path
) -> None:
    """endTeam then createTeam in one step: the new team becomes current at once, and what the
    member sent the lead before the end (after the lead's last look) was never read."""
    member = LocalTeamClient(store, alice)
    found: dict[str, str] = {}

    async def report_then_switch(request: ModelRequest) -> ModelResponse | str:
        team_id = found["team"] = (await member.list_teams())[0].id
        await member.send_message(team_id, "a", "lead", "report of the first team")
        return ScriptedModel.tool_calls([("endTeam", {}), ("createTeam", {"name": "second"})])

    script: list[ScriptItem] = [
        ScriptedModel.tool_calls(
            [("createTeam", {"name": "first"}), ("spawnMember", {"name": "a", "spec": "reviewer"})]
        ),
        report_then_switch,
        "Switched.",
    ]
    lead = lead_with(store, tmp_path, script)
    await lead.call("go", alice)
    model = lead.model
    assert isinstance(model, ScriptedModel)
    seen = [m.get_text_content() for m in model.requests[-1].messages]
    late = [t for t in seen if "report of the first team" in t]
    assert late and "which has ended" in late[0], seen
    assert await member.unread(found["team"], "lead") == []


async def test_end_team_tells_the_lead_which_work_it_cut_off(
    store: BaseStore, alice: RuntimeContext, tmp_path: Path
) -> None:
    """endTeam while a task is in progress and another pending: the lead reads which ones were
    left unfinished (Claude Code asks before it shuts a teammate down mid-work; here the model
    that ended the team at least knows what it stopped)."""
    member = LocalTeamClient(store, alice)

    async def claim_then_end(request: ModelRequest) -> ModelResponse | str:
        team_id = (await member.list_teams())[0].id
        await member.claim_task(team_id, "a", "t-1")
        return ScriptedModel.tool_call("endTeam", {})

    script: list[ScriptItem] = [
        ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "t"}),
                ("spawnMember", {"name": "a", "spec": "reviewer"}),
                ("assignTask", {"title": "started"}),
                ("assignTask", {"title": "not started"}),
            ]
        ),
        claim_then_end,
        "Ended.",
    ]
    lead = lead_with(store, tmp_path, script)
    await lead.call("go", alice)
    model = lead.model
    assert isinstance(model, ScriptedModel)
    (ended,) = [r for m in model.requests[-1].messages for r in m.tool_results()][-1:]
    assert ended.name == "endTeam" and not ended.is_error, ended
    assert "2 tasks were not finished" in ended.output, ended.output
    assert "t-1 'started' (in progress, owner a)" in ended.output, ended.output
    assert "t-2 'not started' (pending)" in ended.output, ended.output
