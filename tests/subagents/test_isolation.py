"""Tenant and workspace isolation, the depth limit and the model's mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunStatus

from .helpers import (
    ALICE,
    BOB,
    call,
    eventually,
    extension,
    last_output,
    make_parent,
    run_id_in,
    runs,
    spawn,
    spec,
    tool_results,
)

AGENT_TOOLS = {"agent_spawn", "agent_send", "agent_wait", "agent_cancel", "agent_list"}


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


def outputs(agent: HarnessAgent) -> list[str]:
    return [last_output(r) for r in agent.loop.model.requests[1:]]  # type: ignore[attr-defined]


async def test_users_never_see_each_others_runs(tmp_path: Path, store: InMemoryStore) -> None:
    child = ScriptedModel(lambda req: call("list_files"), delay=0.05)
    alice = make_parent(
        tmp_path, store, [spawn("rev", "mine", timeout_seconds=0), "ok", "ok"], {"rev": child}
    )
    await alice.call("go", ALICE)
    run = (await runs(store))[0].run_id
    script = [
        call("agent_list"),
        call("agent_send", run=run, message="hi"),
        call("agent_cancel", run=run),
        call("agent_wait", run=run, timeout_seconds=0),
        "done",
    ]
    bob = make_parent(tmp_path, store, script, {"rev": child})

    await bob.call("snoop", BOB)

    listing, send, cancel, wait = outputs(bob)
    assert listing == "No subagent runs in this session."
    for out in (send, cancel, wait):
        assert out.startswith(f"no such run {run}")
    assert [r.status for r in await runs(store)] == [RunStatus.RUNNING]
    assert await runs(store, BOB) == []
    await extension(alice).aclose()


async def test_a_run_id_of_another_session_is_no_such_run(
    tmp_path: Path, store: InMemoryStore
) -> None:
    lead = make_parent(tmp_path, store, [spawn("rev", "x"), "ok"], {"rev": ScriptedModel(["a"])})
    await lead.call("go", ALICE)
    run = (await runs(store))[0].run_id
    again = make_parent(tmp_path, store, [call("agent_wait", run=run), "ok"], {}, [spec("rev")])

    await again.call("again", ALICE.with_session("s2"))

    assert outputs(again) == [f"no such run {run}; agent_list shows the runs of this session"]


async def test_isolated_children_cannot_read_each_others_files(
    tmp_path: Path, store: InMemoryStore
) -> None:
    writer = ScriptedModel([call("write_file", path="note.txt", content="secret"), "written"])
    reader = ScriptedModel([call("read_file", path="note.txt"), "could not read"])
    script = [spawn("writer", "write", label="keep"), spawn("reader", "read"), "done"]
    lead = make_parent(tmp_path, store, script, {"writer": writer, "reader": reader})

    await lead.call("go", ALICE)

    [result] = tool_results(reader.requests[1])
    assert result.is_error and "does not exist" in result.output
    kept = (await runs(store))[0]
    assert (Path(kept.workspace or "") / "note.txt").read_text() == "secret"  # labels keep it
    assert not (lead.workspace_for(ALICE) / "note.txt").exists()


async def test_shared_children_work_in_the_parents_workspace(
    tmp_path: Path, store: InMemoryStore
) -> None:
    reader = ScriptedModel(
        [call("read_file", path="plan.md"), call("write_file", path="out.md", content="x"), "ok"]
    )
    specs = [spec("reader", workspace="shared")]
    lead = make_parent(
        tmp_path, store, [spawn("reader", "read"), "done"], {"reader": reader}, specs=specs
    )
    workspace = lead.workspace_for(ALICE)
    workspace.mkdir(parents=True)
    (workspace / "plan.md").write_text("step one")

    await lead.call("go", ALICE)

    [result] = tool_results(reader.requests[1])
    assert not result.is_error and "step one" in result.output
    assert (workspace / "out.md").read_text() == "x"
    assert (await runs(store))[0].workspace is None


async def test_workspace_path_seeds_an_isolated_run(tmp_path: Path, store: InMemoryStore) -> None:
    seed = tmp_path / "defs"
    seed.mkdir()
    (seed / "CHECKLIST.md").write_text("check auth")
    child = ScriptedModel(
        [
            call("read_file", path="CHECKLIST.md"),
            call("write_file", path="CHECKLIST.md", content="changed"),
            "ok",
        ]
    )
    specs = [spec("rev", workspace={"mode": "isolated", "path": str(seed)})]
    lead = make_parent(tmp_path, store, [spawn("rev", "x"), "done"], {"rev": child}, specs=specs)

    await lead.call("go", ALICE)

    assert "check auth" in tool_results(child.requests[1])[0].output
    assert (seed / "CHECKLIST.md").read_text() == "check auth"  # the definition is never written


async def test_depth_limit_removes_the_spawn_tools(tmp_path: Path, store: InMemoryStore) -> None:
    grandchild = ScriptedModel([spawn("leaf", "deeper"), "no spawning here"])
    child = ScriptedModel([spawn("leaf", "sub"), "child done"])
    lead = make_parent(
        tmp_path, store, [spawn("mid", "go"), "done"], {"mid": child, "leaf": grandchild}
    )

    await lead.call("go", ALICE)

    assert {t.name for t in child.requests[0].tools} >= AGENT_TOOLS
    assert not AGENT_TOOLS & {t.name for t in grandchild.requests[0].tools}
    assert "Subagents" not in grandchild.requests[0].system_prompt
    [result] = tool_results(grandchild.requests[1])
    assert result.is_error and result.output.startswith("unknown tool 'agent_spawn'")
    [mid] = await runs(store)
    [leaf] = await runs(store, ALICE.with_session(mid.child_session))  # the child's own session
    assert (mid.depth, leaf.depth, leaf.status) == (1, 2, RunStatus.COMPLETED)


async def test_an_agent_at_the_limit_offers_no_spawn_tools(
    tmp_path: Path, store: InMemoryStore
) -> None:
    model = ScriptedModel(["hi"])
    agent = HarnessAgent("deep", model, workspace=tmp_path, store=store, specs=[spec("x")], depth=2)
    await agent.call("hi", ALICE)
    assert not AGENT_TOOLS & {t.name for t in model.requests[0].tools}
    with pytest.raises(ConfigurationError, match="max_depth"):
        HarnessAgent("bad", model, workspace=tmp_path, store=store, specs=[], max_depth=0)


async def test_model_mistakes_are_tool_errors(tmp_path: Path, store: InMemoryStore) -> None:
    slow = ScriptedModel(lambda req: call("list_files"), delay=0.05)
    script = [
        spawn("nobody", "x"),
        spawn("rev", "   "),
        spawn("rev", "x", timeout_seconds=-1),
        call("agent_cancel", run="r-0000000000"),
        spawn("rev", "first", timeout_seconds=0),
        spawn("rev", "second", timeout_seconds=0),
        spawn("rev", "x", label="../../etc"),
        "sorry",
    ]
    lead = make_parent(tmp_path, store, script, {"rev": slow}, max_concurrent=1)

    await lead.call("go", ALICE)

    unknown, empty, negative, missing, started, limit, label = outputs(lead)[:7]
    assert unknown == "unknown agent 'nobody'; available agents: rev"
    assert empty.startswith("task is empty")
    assert "timeout_seconds" in negative
    assert missing.startswith("no such run r-0000000000")
    assert run_id_in(started)
    assert "limit is 1" in limit
    assert "label" in label
    assert len(await runs(store)) == 1
    await extension(lead).aclose()
    await eventually(lambda: _all_lost(store))


async def _all_lost(store: InMemoryStore) -> bool:
    return all(r.status is RunStatus.LOST for r in await runs(store))
