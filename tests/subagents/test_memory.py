"""``memory:`` specs: a subagent's persistent memory lives in the store, per org, user and agent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunStatus
from agentscope_teams.subagents.memory import (
    MAX_FILES,
    AgentMemory,
    MemoryScope,
    read_folder,
    scope_segment,
    write_folder,
)

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from .helpers import call, last_output, make_parent, settled, spawn, spec

MEMO = ".claude/agent-memory/keeper/MEMORY.md"


def ctx_of(org: str, user: str = "alice", session: str = "s1") -> RuntimeContext:
    return RuntimeContext(session_id=session, user_id=user, org_id=org)


def writer(path: str, content: str) -> ScriptedModel:
    """A child that writes ``content`` to ``path`` of its workspace, then answers."""
    return ScriptedModel([call("write_file", path=path, content=content), "noted"], name="keeper")


def reader() -> ScriptedModel:
    return ScriptedModel(["nothing to add"], name="keeper")


async def run_child(
    tmp_path: Path, store: BaseStore, ctx: RuntimeContext, child: ScriptedModel, **kw: object
) -> str:
    """One parent call spawning ``keeper`` (``memory: user`` unless given); the spawn's result."""
    lead = make_parent(
        tmp_path,
        store,
        [spawn("keeper", "work"), "ok"],
        {"keeper": child},
        specs=[spec("keeper", **{"memory": "user", **kw})],
    )
    async with lead:
        await lead.call("go", ctx)
    return last_output(lead.loop.model.requests[1])  # type: ignore[attr-defined]


async def stored(store: BaseStore, ctx: RuntimeContext, tmp_path: Path) -> dict[str, str]:
    memory = AgentMemory(store, ctx, "keeper", MemoryScope.USER, tmp_path / "ws", tmp_path)
    return (await memory.load()).files


@asynccontextmanager
async def opened(url: str) -> AsyncIterator[BaseStore]:
    async with store_from_url(url) as store:
        yield store


@pytest.mark.parametrize("backend", ["file", "redis"])
async def test_memory_survives_a_new_agent_over_a_real_store(tmp_path: Path, backend: str) -> None:
    if backend == "redis":
        require_service("redis")
    url = REDIS_URL if backend == "redis" else f"file://{tmp_path / 'store'}"
    ctx = ctx_of(unique_namespace())  # a key prefix of this test's own on the shared server
    async with opened(url) as store:
        result = await run_child(tmp_path, store, ctx, writer(MEMO, "- the user likes tabs\n"))
        assert "noted" in result
        assert (await stored(store, ctx, tmp_path))["MEMORY.md"] == "- the user likes tabs\n"
    child = reader()
    async with opened(url) as store:  # a new process: new store client, new agent objects
        await run_child(tmp_path, store, ctx_of(ctx.org_id or "", session="s2"), child)
    assert "- the user likes tabs" in child.requests[0].system_prompt
    assert ".claude/agent-memory/keeper/" in child.requests[0].system_prompt


async def test_two_users_never_see_each_others_memory(tmp_path: Path) -> None:
    store = InMemoryStore()
    org = unique_namespace()
    await run_child(tmp_path, store, ctx_of(org), writer(MEMO, "- alice's secret\n"))
    seen = {}
    for user in ("alice", "bob", "../alice", "alice/../alice"):
        child = reader()
        await run_child(tmp_path, store, ctx_of(org, user, "s2"), child)
        seen[user] = "alice's secret" in child.requests[0].system_prompt
    assert seen == {"alice": True, "bob": False, "../alice": False, "alice/../alice": False}
    other = reader()  # the same user in another org
    await run_child(tmp_path, store, ctx_of(unique_namespace(), "alice", "s2"), other)
    assert "alice's secret" not in other.requests[0].system_prompt


async def test_the_first_200_lines_of_memory_md_reach_the_system_prompt(tmp_path: Path) -> None:
    store = InMemoryStore()
    ctx = ctx_of(unique_namespace())
    lines = "".join(f"note {n}\n" for n in range(1, 251))
    await run_child(tmp_path, store, ctx, writer(MEMO, lines))
    child = reader()
    await run_child(tmp_path, store, ctx_of(ctx.org_id or "", session="s2"), child)
    prompt = child.requests[0].system_prompt
    assert "note 1\n" in prompt and "note 200\n" in prompt
    assert "note 201" not in prompt
    assert "50 more lines of MEMORY.md are not shown" in prompt


def by_task(make: Callable[[str], ModelResponse]) -> Callable[[ModelRequest], ModelResponse]:
    """A child step that depends on the run's task (both runs share one scripted model)."""

    def step(req: ModelRequest) -> ModelResponse:
        task = req.messages[0].get_text_content()
        if any(m.tool_results() for m in req.messages):
            return ScriptedModel.text(f"done {task}")
        return make(task)

    return step


async def test_two_concurrent_runs_writing_memory_lose_nothing(tmp_path: Path) -> None:
    store = InMemoryStore()
    ctx = ctx_of(unique_namespace())

    def both(task: str) -> ModelResponse:
        return ScriptedModel.tool_calls(
            [
                ("write_file", {"path": MEMO, "content": f"- index by {task}\n"}),
                ("write_file", {"path": f"{MEMO[:-9]}{task}.md", "content": f"{task} details\n"}),
            ]
        )

    child = ScriptedModel(by_task(both), name="keeper", delay=0.1)
    lead = make_parent(
        tmp_path,
        store,
        [
            ScriptedModel.tool_calls(
                [
                    ("agent_spawn", {"agent": "keeper", "task": t, "timeout_seconds": 0})
                    for t in ("one", "two")
                ]
            ),
            "ok",
        ],
        {"keeper": child},
        specs=[spec("keeper", memory="user")],
    )
    async with lead:
        await lead.call("go", ctx)
        done = await settled(store, ctx)
    assert [r.status for r in done] == [RunStatus.COMPLETED] * 2
    files = await stored(store, ctx, tmp_path)
    assert files["one.md"] == "one details\n" and files["two.md"] == "two details\n"
    texts = "\n".join(files.values())
    assert "- index by one" in texts and "- index by two" in texts  # neither write is lost
    conflicts = [n for n in files if ".conflict-" in n]
    assert len(conflicts) == 1 and "Memory conflict" in files["MEMORY.md"]
    assert any("another run changed MEMORY.md" in (r.result or "") for r in done)


async def test_memory_beyond_the_bounds_is_refused_with_a_note(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    for n in range(MAX_FILES + 2):
        (folder / f"f{n:02}.md").write_text("x")
    (folder / "MEMORY.md").write_text("index")
    kept, refused = read_folder(folder)
    assert len(kept) == MAX_FILES and "MEMORY.md" in kept  # the index is kept first
    assert len(refused) == 3 and all("more than 25 files" in r for r in refused)


def test_scopes_name_different_memories(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert scope_segment(MemoryScope.USER, a) == scope_segment(MemoryScope.USER, b) == "user"
    assert scope_segment(MemoryScope.PROJECT, a) != scope_segment(MemoryScope.PROJECT, b)
    assert scope_segment(MemoryScope.LOCAL, a) != scope_segment(MemoryScope.PROJECT, a)


async def test_the_stored_value_is_plain_json(tmp_path: Path) -> None:
    store = InMemoryStore()
    ctx = ctx_of(unique_namespace())
    await run_child(tmp_path, store, ctx, writer(MEMO, "hello\n"), memory="project")
    memory = AgentMemory(store, ctx, "keeper", MemoryScope.PROJECT, tmp_path / "ws", tmp_path)
    entry = await store.get(memory.key)
    assert entry is not None and json.loads(entry.value) == {"files": {"MEMORY.md": "hello\n"}}


async def test_a_failed_runs_memory_writes_are_saved_too(tmp_path: Path) -> None:
    store = InMemoryStore()
    ctx = ctx_of(unique_namespace())
    child = ScriptedModel(
        [call("write_file", path=MEMO, content="- learned before failing\n"), RuntimeError("boom")],
        name="keeper",
    )
    await run_child(tmp_path, store, ctx, child)
    (rec,) = await settled(store, ctx)
    assert rec.status is RunStatus.FAILED
    assert (await stored(store, ctx, tmp_path))["MEMORY.md"] == "- learned before failing\n"


def test_materializing_never_writes_through_a_symlink_out_of_the_workspace(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    (outside / "agent-memory").mkdir(parents=True)
    (ws / ".claude").symlink_to(outside)  # left by an earlier run in a shared workspace
    folder = ws / ".claude" / "agent-memory" / "keeper"
    assert folder.parent.resolve() == (outside / "agent-memory")  # control: the path leads out
    with pytest.raises(ValueError, match="leads outside the workspace"):
        write_folder(folder, ws, {"MEMORY.md": "x"})
    assert list(outside.rglob("*")) == [outside / "agent-memory"]

    (ws / ".claude").unlink()
    (ws / ".claude" / "agent-memory").mkdir(parents=True)
    folder.symlink_to(outside / "agent-memory", target_is_directory=True)  # the folder itself
    write_folder(folder, ws, {"MEMORY.md": "x"})
    assert not folder.is_symlink() and (folder / "MEMORY.md").read_text() == "x"
    assert list(outside.rglob("*")) == [outside / "agent-memory"]
