"""Spec names with dots (``dotnet-framework-4.8-expert``) work wherever a name is used: spawned as
a subagent (run record, child session, isolated directory), spawned as a team member, and never
colliding with a name that differs only in the dot."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunStatus, SubagentSpec, child_session_id, run_dir
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TaskStatus, TeamLeadExtension
from agentscope_teams.teams.rules.models import Member

from ..teams.helpers import team_id_of
from ..teams.scripts import CLAIMED, step_results
from .helpers import ALICE, is_dir, last_output, runs, spawn

pytestmark = pytest.mark.anyio
WILD = Path(__file__).parent / "corpus" / "wild"
DOTNET = "dotnet-framework-4.8-expert"
POWERSHELL = "powershell-5.1-expert"


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[BaseStore]:
    async with store_from_url(f"file://{tmp_path / 'store'}") as store:
        yield store


def _dotnet(model: str) -> SubagentSpec:
    return SubagentSpec.from_file(WILD / f"{DOTNET}.md", model_aliases={"sonnet": model})


async def test_dotted_spec_is_spawned_as_a_subagent(tmp_path: Path, file_store: BaseStore) -> None:
    spec = _dotnet("dotnet-model")
    child = ScriptedModel(["app.config is fine"])
    script = [spawn(DOTNET, "check app.config", label="net4.8"), "done"]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script, name="lead"),
        workspace=tmp_path / "ws",
        store=file_store,
        specs=[spec],
        models={"dotnet-model": child},
    )
    assert (await lead.call("go", ALICE)).get_text_content() == "done"
    assert "app.config is fine" in last_output(lead.loop.model.requests[1])  # type: ignore[attr-defined]
    [rec] = await runs(file_store)
    assert (rec.status, rec.spec, rec.label) == (RunStatus.COMPLETED, DOTNET, "net4.8")
    assert rec.child_session == child_session_id(ALICE, "lead", DOTNET, "l:net4.8")
    saved = await lead.sessions.get_session("alice", DOTNET, rec.child_session, org_id="acme")
    assert saved is not None and saved.state.context[-1].get_text_content() == "app.config is fine"
    assert rec.workspace == str(run_dir(tmp_path / "ws", ALICE, DOTNET, "l:net4.8"))
    assert is_dir(rec.workspace) and Path(rec.workspace).parent.name == DOTNET


async def test_names_differing_only_in_the_dot_never_collide(
    tmp_path: Path, file_store: BaseStore
) -> None:
    names = ["x.y", "x_y", "x-y", "xy", "x..y"]
    children = {n: ScriptedModel([f"answer of {n}"]) for n in names}
    specs = [SubagentSpec(name=n, description=f"the {n} agent", model=n) for n in names]
    script = [
        ScriptedModel.tool_calls(
            [("agent_spawn", {"agent": n, "task": "go", "label": "same"}) for n in names]
        ),
        "done",
    ]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script, name="lead"),
        workspace=tmp_path / "ws",
        store=file_store,
        specs=specs,
        models=dict(children),
        max_concurrent=len(names),  # all five at once, however the scheduler interleaves them
    )
    await lead.call("go", ALICE)
    records = {r.spec: r for r in await runs(file_store)}
    assert set(records) == set(names)
    assert all(r.status is RunStatus.COMPLETED for r in records.values())
    assert len({r.child_session for r in records.values()}) == len(names)
    assert len({r.workspace for r in records.values()}) == len(names)
    for name, rec in records.items():
        assert rec.result == f"answer of {name}"
        saved = await lead.sessions.get_session("alice", name, rec.child_session, org_id="acme")
        assert saved is not None
        assert saved.state.context[-1].get_text_content() == f"answer of {name}"
        assert is_dir(rec.workspace)
    files = {p for p in (tmp_path / "store").rglob("*") if p.is_file()}
    assert len(files) >= 2 * len(names)  # each child's session record is its own file


def _member(request: ModelRequest) -> ModelResponse | str:
    """Claim a task, complete it, then stop."""
    results = step_results(request)
    if not results:
        return ScriptedModel.tool_call("claimTask", {})
    last = results[-1]
    if last.name == "claimTask" and (found := CLAIMED.search(last.output)):
        task_id = found.group(1)
        return ScriptedModel.tool_call(
            "completeTask", {"task_id": task_id, "result": f"done {task_id}"}
        )
    return "nothing more"


async def test_dotted_specs_are_spawned_as_team_members(
    tmp_path: Path, file_store: BaseStore
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in (DOTNET, POWERSHELL):
        shutil.copy(WILD / f"{name}.md", specs)
    ext = TeamLeadExtension(specs, member_model=ScriptedModel(_member), poll=0.05, lease_ttl=2.0)
    script = [
        ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "legacy"}),
                ("spawnMember", {"name": "net-4.8", "spec": DOTNET}),
                ("spawnMember", {"name": "ps-5.1", "spec": POWERSHELL}),
                ("assignTask", {"title": "check app.config", "assignee": "net-4.8"}),
                ("assignTask", {"title": "port the script", "assignee": "ps-5.1"}),
                ("waitForTeam", {"timeout_seconds": 30}),
            ]
        ),
        "done",
    ]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script, name="lead"),
        workspace=tmp_path / "ws",
        store=file_store,
        extensions=[ext],
    )
    ctx = RuntimeContext(session_id="s-team", user_id="alice", org_id="acme")
    try:
        with anyio.fail_after(60):
            await lead.call("form a team", ctx)
        client = LocalTeamClient(file_store, ctx)
        team_id = team_id_of(await lead.get_agent_state(ctx))
        team = await client.get_team(team_id)
        assert {(m.name, m.spec) for m in team.members} == {
            ("net-4.8", DOTNET),
            ("ps-5.1", POWERSHELL),
        }
        tasks = await client.list_tasks(team_id)
        assert [(t.status, t.owner) for t in tasks] == [
            (TaskStatus.COMPLETED, "net-4.8"),
            (TaskStatus.COMPLETED, "ps-5.1"),
        ]
    finally:
        await ext.aclose()


def test_member_workspaces_stay_apart_and_under_the_root(tmp_path: Path) -> None:
    """A member name is an identifier: '..', '.' or 'a/b' never leave or share a directory."""
    builder = MemberBuilder(
        store=InMemoryStore(),
        specs={DOTNET: _dotnet("m")},
        client_factory=lambda store, ctx: LocalTeamClient(store, ctx),
        workspace=tmp_path / "ws",
        root=tmp_path / "root",
    )
    names = ["net-4.8", "net-4_8", "..", ".", "../../escape", "a/b", "a", "t-1"]
    paths = [builder.workspace_of(ALICE, "t-1", Member(name=n, spec=DOTNET)) for n in names]
    team_dir = paths[0].parent
    assert team_dir.is_relative_to(tmp_path / "root" / "team-members")
    assert [p.parent for p in paths] == [team_dir] * len(names)
    assert len({p.resolve() for p in paths}) == len(names)
    assert all(p.resolve().parent == team_dir.resolve() for p in paths)
