"""The per-call hot path, counted: no thread hop, resolve or directory for a call that touches no
file; each tool schema built once however many steps and calls use it (issue 14)."""

from __future__ import annotations

import copy
import dataclasses
import os
import pathlib
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from pydantic import BaseModel

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.agent import ReActConfig
from agentscope_teams.agent.extension import CallScope, Extension
from agentscope_teams.message import AssistantMsg, Msg
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelResponse
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import Tool, ToolEnv, tool
from agentscope_teams.tools import base as tools_base

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


def counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[object]:
    """Replace ``owner.name`` by a wrapper that records each call and delegates."""
    calls: list[object] = []
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[:1])
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def steps(tool_name: str, n: int, **args: Any) -> list[ModelResponse | str]:
    return [ScriptedModel.tool_call(tool_name, args) for _ in range(n)] + ["done"]


async def ping() -> str:
    """Answer pong."""
    return "pong"


async def test_a_call_that_touches_no_file_makes_no_thread_hop_resolve_or_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    model = ScriptedModel(steps("ping", 2))
    agent = HarnessAgent("lead", model, workspace=root, store=InMemoryStore(), tools=[tool(ping)])
    hops = counting(monkeypatch, anyio.to_thread, "run_sync")
    resolves = counting(monkeypatch, pathlib.Path, "resolve")
    realpaths = counting(monkeypatch, os.path, "realpath")

    msg = await agent.call("go", CTX)

    assert msg.get_text_content() == "done"
    assert (hops, resolves, realpaths) == ([], [], [])
    assert not root.exists()  # nothing on disk until a tool needs the directory


async def test_the_workspace_is_made_when_a_file_tool_first_runs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    model = ScriptedModel(
        [*steps("list_files", 1), *steps("write_file", 1, path="a.txt", content="x")]
    )
    agent = HarnessAgent("lead", model, workspace=root, store=InMemoryStore())
    workspace = agent.workspace_for(CTX)

    await agent.call("look", CTX)
    assert workspace.is_dir()
    listed = model.requests[1].messages[-1].tool_results()[0]
    assert not listed.is_error and listed.output == "./ is empty"

    await agent.call("write", CTX)
    assert (workspace / "a.txt").read_text() == "x"


async def test_a_tool_taking_the_env_finds_its_workspace(tmp_path: Path) -> None:
    seen: list[bool] = []

    async def probe(env: ToolEnv) -> str:
        """Say whether the workspace exists."""
        seen.append(env.workspace.is_dir())
        return "ok"

    def probe_sync(env: ToolEnv) -> str:
        """Say whether the workspace exists (in a worker thread)."""
        seen.append(env.workspace.is_dir())
        return "ok"

    for fn in (probe, probe_sync):
        root = tmp_path / fn.__name__
        agent = HarnessAgent(
            "lead", ScriptedModel(steps(fn.__name__, 1)), workspace=root,
            store=InMemoryStore(), tools=[tool(fn)], builtin_tools=False,
        )  # fmt: skip
        await agent.call("go", CTX)
    assert seen == [True, True]


def test_a_resolved_workspace_must_be_absolute_without_parent_steps() -> None:
    with pytest.raises(ValueError, match="absolute"):
        ToolEnv(workspace=Path("relative"), resolved=True)
    with pytest.raises(ValueError, match=r"'\.\.'"):
        ToolEnv(workspace=Path("/a/../b"), resolved=True)
    assert ToolEnv(workspace=Path("/a/b"), resolved=True).workspace == Path("/a/b")


class PerCallTools(Extension):
    """Binds a copy of its tool to every call, as the subagent and team extensions do."""

    def __init__(self, template: Tool) -> None:
        self.template = template

    def tools(self, scope: CallScope) -> list[Tool]:
        async def bound() -> str:
            return "bound"

        return [dataclasses.replace(self.template, func=bound)]


async def test_each_tool_schema_is_built_once_across_steps_and_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds = counting(monkeypatch, tools_base, "ToolSchema")
    ping_tool, extra = tool(ping), tool(ping, name="extra")
    model = ScriptedModel(steps("ping", 4) + steps("extra", 4))
    agent = HarnessAgent(
        "lead", model, workspace=tmp_path, store=InMemoryStore(), tools=[ping_tool],
        extensions=[PerCallTools(extra)], config=ReActConfig(max_iters=10),
    )  # fmt: skip

    for session in ("s1", "s2"):
        await agent.call("go", CTX.model_copy(update={"session_id": session}))

    offered = len(agent.view.toolkit) + 1  # the built-in tools and ping, plus extra per call
    assert len(model.requests) == 10
    assert all(len(r.tools) == offered for r in model.requests)
    assert len(builds) == offered  # one per tool, not per step (10) or per call (2)


class Answer(BaseModel):
    score: int


def test_loading_a_message_runs_no_python_hook_and_outputs_still_ride_along() -> None:
    # pydantic builds a loaded message in its core: no per-message Python post-init (a declared
    # private attribute would add one to every message of every session load).
    assert Msg.model_post_init is BaseModel.model_post_init

    msg = AssistantMsg("done")
    assert msg.output is None
    msg = msg.with_output(Answer(score=3), {"score": 3})
    for kept in (msg, msg.model_copy(), copy.deepcopy(msg), pickle.loads(pickle.dumps(msg))):
        assert kept.output == Answer(score=3)
        assert kept.output_as(Answer) is kept.output
    loaded = Msg.model_validate_json(msg.model_dump_json())
    assert loaded == msg and loaded.output == {"score": 3}
    assert loaded.output_as(Answer) == Answer(score=3)
