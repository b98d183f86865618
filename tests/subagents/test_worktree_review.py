"""``isolation: worktree`` under load: parallel spawns each get their own worktree and branch."""

from __future__ import annotations

from pathlib import Path

from agentscope_teams.message import ToolUseBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunStatus

from .helpers import ALICE, call, make_parent, settled, spawn, spec, tool_results
from .test_worktree import branches, git, repo, run_once, worktrees

__all__ = ["repo"]  # the fixture


async def test_parallel_worktree_spawns_do_not_collide(tmp_path: Path, repo: Path) -> None:
    def child(request: ModelRequest) -> ModelResponse:
        task = request.messages[0].get_text_content().strip()
        if not any(m.tool_results() for m in request.messages):
            return call("write_file", path=f"{task}.txt", content=task)
        return ScriptedModel.text(f"wrote {task}")

    calls = [
        ToolUseBlock(id=f"c{i}", name="agent_spawn", input={"agent": "dev", "task": f"t{i}"})
        for i in range(4)
    ]
    store = InMemoryStore()
    lead = make_parent(
        tmp_path,
        store,
        [ScriptedModel.tool_calls(calls), "done"],
        {"dev": ScriptedModel(child, name="dev")},
        specs=[spec("dev", isolation="worktree")],
    )
    async with lead:
        await lead.call("fan out", ALICE)
        records = await settled(store)
    results = tool_results(lead.loop.model.requests[1])  # type: ignore[attr-defined]
    assert all(not r.is_error for r in results), [r.output for r in results]
    assert [r.status for r in records] == [RunStatus.COMPLETED] * 4
    assert len(branches(repo)) == 4 and len(worktrees(repo)) == 5
    trees = [Path(w.removeprefix("worktree ")) for w in worktrees(repo)[1:]]
    found = sorted(p.name for t in trees for p in t.glob("t*.txt"))
    assert found == ["t0.txt", "t1.txt", "t2.txt", "t3.txt"]
    assert git(repo, "status", "--porcelain") == ""
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert len([line for line in exclude if "subagents" in line]) == 1


async def test_a_repository_without_a_commit_is_a_clear_tool_error(tmp_path: Path) -> None:
    """``isolation: worktree`` branches from HEAD: a repository with no commit yet says so and
    what to do, instead of git's 'not a valid object name: HEAD'."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    git(workspace, "init", "-q", "-b", "main")
    child = ScriptedModel(["never runs"], name="dev")
    result = await run_once(tmp_path, child, [spawn("dev", "build"), "ok"])
    assert "has no commit yet" in result and str(workspace) in result, result
    assert "commit" in result.split("has no commit yet", 1)[1]
    assert child.requests == [] and branches(workspace) == []
