"""``isolation: worktree``: each run works in a git worktree, removed when it changed nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunStatus, worktree
from agentscope_teams.subagents.workspace import janitor, run_dir, slot_for
from agentscope_teams.subagents.worktree import GitError, create, discard_orphan

from .helpers import ALICE, call, last_output, make_parent, settled, spawn, spec, with_run


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit; the parent agent's workspace is its top directory."""
    path = tmp_path / "ws"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    git(path, "config", "commit.gpgsign", "false")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-qm", "first")
    return path


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--list", "agent/*", "--format=%(refname:short)").split()


def worktrees(repo: Path) -> list[str]:
    return [
        line
        for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


async def run_once(tmp_path: Path, child: ScriptedModel, script: list[object]) -> str:
    store = InMemoryStore()
    lead = make_parent(
        tmp_path, store, script, {"dev": child}, specs=[spec("dev", isolation="worktree")]
    )
    async with lead:
        await lead.call("go", ALICE)
        await settled(store)
    return last_output(lead.loop.model.requests[1])  # type: ignore[attr-defined]


async def test_a_run_that_changes_nothing_leaves_no_worktree_nor_branch(
    tmp_path: Path, repo: Path
) -> None:
    child = ScriptedModel([call("list_files"), "nothing to change"], name="dev")
    result = await run_once(tmp_path, child, [spawn("dev", "look"), "ok"])
    assert "nothing to change" in result and "branch" not in result
    assert branches(repo) == [] and len(worktrees(repo)) == 1
    assert git(repo, "status", "--porcelain") == ""


async def test_a_run_that_writes_keeps_its_branch_and_names_it(tmp_path: Path, repo: Path) -> None:
    child = ScriptedModel(
        [call("write_file", path="feature.txt", content="new\n"), "wrote it"], name="dev"
    )
    result = await run_once(tmp_path, child, [spawn("dev", "build"), "ok"])
    (branch,) = branches(repo)
    assert branch.startswith("agent/dev-") and f"branch {branch}" in result
    tree = Path(worktrees(repo)[1].removeprefix("worktree "))
    assert f"worktree {tree}" in result
    assert (tree / "feature.txt").read_text() == "new\n"
    assert not (repo / "feature.txt").exists()  # the main checkout is untouched
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(repo, "log", "--oneline", branch).count("\n") == 1  # nothing committed for us


async def test_outside_a_git_repository_the_spawn_is_a_tool_error(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    child = ScriptedModel(["never runs"], name="dev")
    result = await run_once(tmp_path, child, [spawn("dev", "build"), "ok"])
    assert "is not inside a git repository" in result and "isolation: worktree" in result
    assert child.requests == []


async def test_a_cancelled_runs_clean_worktree_is_removed(tmp_path: Path, repo: Path) -> None:
    child = ScriptedModel(lambda req: call("list_files"), name="dev", delay=0.05)
    store = InMemoryStore()
    script = [
        spawn("dev", "loop", timeout_seconds=0),
        with_run(lambda run: call("agent_cancel", run=run)),
        "ok",
    ]
    lead = make_parent(
        tmp_path, store, script, {"dev": child}, specs=[spec("dev", isolation="worktree")]
    )
    async with lead:
        await lead.call("go", ALICE)
        (rec,) = await settled(store)
    assert rec.status is RunStatus.CANCELLED
    assert branches(repo) == [] and len(worktrees(repo)) == 1


async def test_the_janitor_part_removes_a_clean_orphan_and_keeps_a_changed_one(
    tmp_path: Path, repo: Path
) -> None:
    clean = await create(repo, tmp_path / "orphans" / "a", "agent/x-1")
    changed = await create(repo, tmp_path / "orphans" / "b", "agent/x-2")
    (changed.path / "work.txt").write_text("unsaved work\n")
    assert await discard_orphan(clean.path) is True
    assert await discard_orphan(changed.path) is False
    assert branches(repo) == ["agent/x-2"] and not clean.path.exists()
    assert (changed.path / "work.txt").exists()


async def test_the_janitor_removes_a_crashed_runs_clean_worktree(
    tmp_path: Path, repo: Path
) -> None:
    root = tmp_path / "ws"
    crashed = run_dir(root, ALICE, "dev", slot_for("r-00000000aa", None))
    kept = run_dir(root, ALICE, "dev", slot_for("r-00000000bb", None))
    await create(repo, crashed, "agent/dev-00000000aa")
    await create(repo, kept, "agent/dev-00000000bb")
    (kept / "README.md").write_text("edited\n")
    git(repo, "worktree", "list")  # both are registered

    removed = await janitor(InMemoryStore(), root)

    assert removed == [crashed] and not crashed.exists() and kept.exists()
    assert branches(repo) == ["agent/dev-00000000bb"] and len(worktrees(repo)) == 2
    assert git(repo, "status", "--porcelain") == ""  # .subagents/ is excluded from the checkout


async def test_a_git_command_that_hangs_is_stopped_at_the_timeout(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worktree, "GIT_TIMEOUT", 0.5)
    with pytest.raises(GitError, match=r"took more than 0\.5s"):
        await worktree.git(repo, "-c", "alias.hang=!sleep 5", "hang")
    with pytest.raises(GitError, match="not a git repository"):
        await worktree.git(tmp_path, "status")


async def test_a_failed_run_with_changes_names_its_branch_in_the_error(
    tmp_path: Path, repo: Path
) -> None:
    child = ScriptedModel(
        [call("write_file", path="half.txt", content="half\n"), RuntimeError("model broke")],
        name="dev",
    )
    store = InMemoryStore()
    lead = make_parent(
        tmp_path,
        store,
        [spawn("dev", "build"), "ok"],
        {"dev": child},
        specs=[spec("dev", isolation="worktree")],
    )
    async with lead:
        await lead.call("go", ALICE)
        (rec,) = await settled(store)
    (branch,) = branches(repo)
    assert rec.status is RunStatus.FAILED
    assert "model broke" in (rec.error or "") and f"branch {branch}" in (rec.error or "")
