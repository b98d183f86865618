"""Every id RuntimeContext accepts works wherever a path is derived from it.

Ids of 256 ASCII characters, 63 emoji (4 bytes each in UTF-8) or 86 ``:`` (each escaped to 3 bytes)
are too long for one file name as escaped segments. Each path-deriving feature runs in a real
``HarnessAgent.call`` with such an id as the user, the org or the session: the session workspace, the
compression archive, the file store, isolated subagent run directories (and the janitor that
removes them) and team member workspaces. Nothing raises, two long ids that differ only in their last
character never share a directory, and ``"../x"`` stays inside the workspace root.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import CompressionConfig, ReActConfig
from agentscope_teams.agent import compression as comp
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.subagents import RunBook, RunRecord, RunStatus, janitor, run_dir
from agentscope_teams.teams import (
    LocalTeamClient,
    MemberBuilder,
    TaskStatus,
    TeamLeadExtension,
    member_session_id,
)
from agentscope_teams.teams.member.builder import load_pool
from agentscope_teams.tools import ToolEnv, tool

from .subagents.helpers import call, spawn, spec
from .teams.helpers import eventually, team_id_of

pytestmark = pytest.mark.anyio

LONG = {
    "ascii": "a" * 256,
    "emoji": "\U0001f600" * 63,
    "colons": ":" * 86,
}
FIELDS = ("user_id", "org_id", "session_id")
CASES = [pytest.param(f, k, id=f"{f}-{k}") for f in FIELDS for k in LONG]


def twin(value: str) -> str:
    """Another valid id with the same length and all but its last character in common."""
    return value[:-1] + "b"


def ctx_with(field: str, value: str) -> RuntimeContext:
    ids: dict[str, Any] = {"session_id": "s1", "user_id": "alice", "org_id": "acme", field: value}
    return RuntimeContext(**ids)


def assert_contained(path: Path, root: Path) -> None:
    """``path`` is strictly below ``root`` and every name in it fits a file system (<= 255 bytes)."""
    rel = path.resolve().relative_to(root.resolve())
    assert rel.parts and ".." not in rel.parts
    for part in rel.parts:
        assert len(os.fsencode(part)) <= 255, part


def names_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[BaseStore]:
    async with store_from_url(f"file://{tmp_path / 'store'}") as store:
        yield store


# -- session workspace, compression archive, file store -----------------------------------------


def chatty(req: ModelRequest) -> ModelResponse | str:
    """Writes a note into the workspace, then answers at length (so compression runs)."""
    if req.metadata.get("purpose") == "compression":
        return "a summary"
    last = req.messages[-1]
    if last.tool_results():
        return "noted " + "words " * 60
    return ScriptedModel.tool_call("note", {"text": last.get_text_content()[:20]})


def note(text: str, env: ToolEnv) -> str:
    """Write ``text`` to notes.txt in the workspace."""
    (env.workspace / "notes.txt").write_text(text)
    return "written"


def chat_agent(root: Path, store: BaseStore) -> HarnessAgent:
    cc = CompressionConfig(trigger_tokens=100, keep_recent_tokens=0, summary_max_chars=100)
    return HarnessAgent(
        "lead", ScriptedModel(chatty), workspace=root, store=store, tools=[tool(note)],
        builtin_tools=False, config=ReActConfig(compression=cc, stream_model=False),
    )  # fmt: skip


@pytest.mark.parametrize(("field", "kind"), CASES)
async def test_session_workspace_archive_and_file_store_take_long_ids(
    tmp_path: Path, file_store: BaseStore, field: str, kind: str
) -> None:
    root = tmp_path / "ws"
    agent = chat_agent(root, file_store)
    ctxs = [ctx_with(field, LONG[kind]), ctx_with(field, twin(LONG[kind]))]
    for ctx in ctxs:
        for turn in range(3):
            await agent.call(f"turn {turn} " + "text " * 40, ctx)

    workspaces = [agent.workspace_for(ctx) for ctx in ctxs]
    archives = [comp.workspace_archive_path(w, "lead", c.session_id) for w, c in zip(workspaces, ctxs, strict=True)]  # fmt: skip
    assert workspaces[0] != workspaces[1] and archives[0] != archives[1]
    for ctx, workspace, archive in zip(ctxs, workspaces, archives, strict=True):
        assert_contained(archive, root)
        assert (workspace / "notes.txt").read_text() == "turn 2 text text tex"
        assert archive.read_text().count("\n") >= 2  # compression archived messages
        state = await agent.get_agent_state(ctx)  # saved to and read back from the file store
        assert state.summary == "a summary" and state.session_id == ctx.session_id
    sessions = await agent.sessions.list_sessions(
        user_id=ctxs[0].user_id, agent_id="lead", org_id=ctxs[0].org_id
    )
    assert ctxs[0].session_id in {s.session_id for s in sessions}


@pytest.mark.parametrize("field", FIELDS)
async def test_a_traversal_id_stays_inside_the_root(
    tmp_path: Path, file_store: BaseStore, field: str
) -> None:
    root = tmp_path / "ws"
    agent = chat_agent(root, file_store)
    for value in ("../x", "..", "../" * 85 + "x"):
        ctx = ctx_with(field, value)
        await agent.call("turn 0", ctx)
        workspace = agent.workspace_for(ctx)
        assert_contained(workspace, root)
        assert (workspace / "notes.txt").exists()
    assert names_in(tmp_path) == ["store", "ws"]


# -- isolated subagent runs and the janitor -----------------------------------------------------


def writer(name: str) -> ScriptedModel:
    return ScriptedModel(
        [call("write_file", path="out.txt", content=name), f"{name} done"] * 2, name=name
    )


@pytest.mark.parametrize(("field", "kind"), CASES)
async def test_isolated_runs_and_the_janitor_take_long_ids(
    tmp_path: Path, file_store: BaseStore, field: str, kind: str
) -> None:
    root = tmp_path / "ws"
    ctxs = [ctx_with(field, LONG[kind]), ctx_with(field, twin(LONG[kind]))]
    kept: list[Path] = []
    for ctx in ctxs:
        script = [spawn("rev", "keep", label="notes"), spawn("rev", "drop"), call("agent_list"), "ok"]  # fmt: skip
        lead = HarnessAgent(
            "lead", ScriptedModel(script), workspace=root, store=file_store,
            specs=[spec("rev")], models={"rev": writer("rev")},
        )  # fmt: skip
        await lead.call("go", ctx)
        [labelled] = [r for r in await RunBook.for_ctx(file_store, ctx).list() if r.label]
        assert labelled.status is RunStatus.COMPLETED and labelled.workspace is not None
        kept.append(Path(labelled.workspace))
        assert kept[-1] == run_dir(root, ctx, "rev", "l:notes")
        assert_contained(kept[-1], root)
        assert (kept[-1] / "out.txt").read_text() == "rev"
        assert list(kept[-1].parent.iterdir()) == [kept[-1]]  # the unlabelled run's dir is gone
    assert kept[0] != kept[1]

    orphans = [await orphan(file_store, root, ctx, f"r-{i:010d}") for i, ctx in enumerate(ctxs)]
    assert await janitor(file_store, root, ctxs[0]) == [orphans[0]]
    assert orphans[1].exists()
    assert await janitor(file_store, root) == [orphans[1]]  # the operator's sweep of every session
    assert not any(o.exists() for o in orphans) and all(k.exists() for k in kept)
    statuses = {r.run_id: r.status for c in ctxs for r in await RunBook.for_ctx(file_store, c).list()}  # fmt: skip
    assert statuses["r-0000000000"] == statuses["r-0000000001"] == RunStatus.LOST


async def orphan(store: BaseStore, root: Path, ctx: RuntimeContext, run_id: str) -> Path:
    """A running run whose process died: its lease expires and its directory stays."""
    book = RunBook.for_ctx(store, ctx)
    lease = book.lease(run_id, 0.05)
    assert await lease.try_acquire()
    workspace = run_dir(root, ctx, "rev", f"r:{run_id}")
    workspace.mkdir(parents=True)
    rec = RunRecord(
        run_id=run_id, parent_agent="lead", spec="rev", task="t", child_session="c", depth=1,
        lease=lease.holder, background=True, workspace=str(workspace),
    )  # fmt: skip
    await book.create(rec)
    await anyio.sleep(0.1)
    return workspace


# -- team member workspaces ---------------------------------------------------------------------

WORKER_SPEC = """\
    ---
    name: worker
    description: Does one task and writes its result into its own workspace.
    tools: [write_file]
    workspace:
      mode: isolated
    ---
    You do tasks.
    """


def member_script(req: ModelRequest) -> ModelResponse | str:
    last = next((m for m in reversed(req.messages) if m.tool_results()), None)
    result = last.tool_results()[-1] if last else None
    if result is None:
        return call("claimTask")
    if result.name == "claimTask" and "Claimed task t-1" in result.output:
        return call("write_file", path="result.txt", content="member work")
    if result.name == "write_file":
        return call("completeTask", task_id="t-1", result="wrote result.txt")
    return "nothing left"


def lead_script(req: ModelRequest) -> ModelResponse | str:
    results = [r for m in req.messages for r in m.tool_results()]
    if not results:
        return ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "t", "description": "long ids"}),
                ("spawnMember", {"name": "m1", "spec": "worker"}),
                ("assignTask", {"title": "write", "assignee": "m1"}),
            ]
        )
    if results[-1].name == "assignTask":
        return call("waitForTeam", timeout_seconds=30)
    return "finished"


@pytest.mark.parametrize(("field", "kind"), [c for c in CASES if c.values[0] != "session_id"])
async def test_team_member_workspaces_take_long_ids(
    tmp_path: Path, file_store: BaseStore, field: str, kind: str
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "worker.md").write_text(textwrap.dedent(WORKER_SPEC))
    root = tmp_path / "ws"
    ctxs = [ctx_with(field, LONG[kind]), ctx_with(field, twin(LONG[kind]))]
    workspaces: list[Path] = []
    for ctx in ctxs:
        ext = TeamLeadExtension(specs, member_model=ScriptedModel(member_script), poll=0.05)
        lead = HarnessAgent(
            "lead", ScriptedModel(lead_script), workspace=root, store=file_store, extensions=[ext]
        )
        try:
            with anyio.fail_after(60):
                await lead.call("go", ctx)
            team_id = team_id_of(await lead.get_agent_state(ctx))
            client = LocalTeamClient(file_store, ctx)

            async def done(client: LocalTeamClient = client, team_id: str = team_id) -> bool:
                return [t.status for t in await client.list_tasks(team_id)] == [
                    TaskStatus.COMPLETED
                ]

            await eventually(done)
            team = await client.get_team(team_id)
        finally:
            await ext.aclose()
        builder = MemberBuilder(
            file_store, load_pool(specs), LocalTeamClient, workspace=root, root=root
        )
        workspaces.append(builder.workspace_of(ctx, team_id, team.members[0]))
        assert_contained(workspaces[-1], root)
        assert (workspaces[-1] / "result.txt").read_text() == "member work"
    assert workspaces[0] != workspaces[1]


@pytest.mark.parametrize("member", ["..", "m" * 256, ":" * 86])  # a name with / is refused
async def test_a_member_name_never_leaves_the_members_root(
    tmp_path: Path, file_store: BaseStore, member: str
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "worker.md").write_text(textwrap.dedent(WORKER_SPEC))
    root = tmp_path / "a" / "b" / "ws"
    script = lead_script_for(member)
    ext = TeamLeadExtension(specs, member_model=ScriptedModel(member_script), poll=0.05)
    lead = HarnessAgent("lead", ScriptedModel(script), workspace=root, store=file_store, extensions=[ext])  # fmt: skip
    ctx = ctx_with("session_id", "s1")
    try:
        with anyio.fail_after(60):
            await lead.call("go", ctx)
        team_id = team_id_of(await lead.get_agent_state(ctx))
        client = LocalTeamClient(file_store, ctx)

        async def done() -> bool:
            return [t.status for t in await client.list_tasks(team_id)] == [TaskStatus.COMPLETED]

        await eventually(done)
        team = await client.get_team(team_id)
    finally:
        await ext.aclose()
    builder = MemberBuilder(
        file_store, load_pool(specs), LocalTeamClient, workspace=root, root=root
    )
    workspace = builder.workspace_of(ctx, team_id, team.members[0])
    assert_contained(workspace, root / "team-members")
    assert (workspace / "result.txt").read_text() == "member work"
    assert names_in(tmp_path) == ["a", "specs", "store"] and names_in(tmp_path / "a") == ["b"]


def lead_script_for(member: str) -> Any:
    def script(req: ModelRequest) -> ModelResponse | str:
        results = [r for m in req.messages for r in m.tool_results()]
        if not results:
            return ScriptedModel.tool_calls(
                [
                    ("createTeam", {"name": "t", "description": "hostile names"}),
                    ("spawnMember", {"name": member, "spec": "worker"}),
                    ("assignTask", {"title": "write", "assignee": member}),
                ]
            )
        if results[-1].name == "assignTask":
            return call("waitForTeam", timeout_seconds=30)
        return "finished"

    return script


def test_member_session_ids_stay_valid_and_distinct() -> None:
    assert member_session_id("team-1", "rev") == "team-team-1-rev"  # short ids are unchanged
    long = [member_session_id("team-" + "f" * 32, name) for name in ("m" * 256, "m" * 255 + "n")]
    assert long[0] != long[1]
    for sid in long:
        assert RuntimeContext(session_id=sid).session_id == sid and len(sid) == 256
