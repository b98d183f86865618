"""A remote A2A agent as a subagent: our lead (scripted) spawns a spec whose ``a2a:`` block names
a plain a2a-sdk server running in another process: sync and background runs, ``agent_cancel``
cancelling the remote task, ``input-required`` answered with ``agent_send``, errors as tool
errors naming the agent, ``${VAR}`` headers and project trust."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.model import ScriptedModel

from .conftest import KEY
from .helpers import Step, last_output, lead_run, run_id, sdk_client, spawn

pytest.importorskip("a2a")
SPEC = """---
description: A remote agent reached over A2A.
a2a:
  url: {url}
  headers: {{X-Api-Key: "${{REMOTE_KEY}}"}}
  timeout: {timeout}
  retries: 0
  poll: 0.1
---
"""


def specs(tmp_path: Path, url: str, timeout: float = 60) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "remote.md").write_text(SPEC.format(url=url, timeout=timeout))
    return folder


@pytest.fixture(autouse=True)
def remote_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMOTE_KEY", KEY)


def test_sync_spawn_returns_the_remote_answer(remote: str, tmp_path: Path) -> None:
    requests = lead_run(specs(tmp_path, remote), [spawn("hi there"), "done"])
    result = last_output(requests[1])
    assert not result.is_error and result.output.endswith("completed:\nremote says: hi there")


def test_input_required_is_answered_with_agent_send(remote: str, tmp_path: Path) -> None:
    steps: list[Step] = [
        spawn("ask"),
        lambda r: ScriptedModel.tool_call("agent_send", {"run": run_id(r), "message": "Ada"}),
        "done",
    ]
    requests = lead_run(specs(tmp_path, remote), steps)
    asked = last_output(requests[1]).output
    assert "[input required]" in asked and "What is your name?" in asked
    assert last_output(requests[2]).output.endswith("completed:\nhello Ada")


def test_background_run_and_agent_cancel_cancel_the_remote_task(
    remote: str, tmp_path: Path
) -> None:
    steps: list[Step] = [
        spawn("slow", timeout=0),
        lambda r: ScriptedModel.tool_call("agent_wait", {"run": run_id(r), "timeout_seconds": 1}),
        lambda r: ScriptedModel.tool_call("agent_cancel", {"run": run_id(r)}),
        "done",
    ]
    requests = lead_run(specs(tmp_path, remote), steps)
    assert "in the background" in last_output(requests[1]).output
    assert "cancelled" in last_output(requests[3]).output

    async def remote_tasks() -> list[Any]:
        from a2a.types.a2a_pb2 import ListTasksRequest, TaskState

        client = await sdk_client(remote + "/", None, headers={"X-Api-Key": KEY})
        found = await client.list_tasks(ListTasksRequest())
        return [TaskState.Name(t.status.state) for t in found.tasks]

    assert "TASK_STATE_CANCELED" in anyio.run(remote_tasks)


def test_failures_are_tool_errors_naming_the_remote_agent(remote: str, tmp_path: Path) -> None:
    requests = lead_run(specs(tmp_path, remote), [spawn("fail"), "done"])
    failed = last_output(requests[1])
    assert failed.is_error and "'remote'" in failed.output and "FAILED: it broke" in failed.output

    requests = lead_run(specs(tmp_path, remote, timeout=0.5), [spawn("slow"), "done"])
    late = last_output(requests[1])
    assert late.is_error and "did not answer within 0.5 s" in late.output

    gone = specs(tmp_path / "gone", "http://127.0.0.1:9/")  # nothing listens on port 9
    refused = last_output(lead_run(gone, [spawn("hi"), "done"])[1])
    assert refused.is_error and "cannot read its Agent Card" in refused.output


def test_headers_of_an_untrusted_project_are_not_expanded(remote: str, tmp_path: Path) -> None:
    requests = lead_run(specs(tmp_path, remote), [spawn("hi"), "done"], trust=False)
    refused = last_output(requests[1])
    assert refused.is_error and "trusted project" in refused.output


def test_a_pydantic_ai_agent_served_by_fasta2a_is_a_subagent(
    pydantic_ai_card: str, tmp_path: Path
) -> None:
    folder = specs(tmp_path, pydantic_ai_card)
    steps: list[Step] = [
        spawn("the first thing"),
        lambda r: ScriptedModel.tool_call(
            "agent_send", {"run": run_id(r), "message": "the second thing"}
        ),
        "done",
    ]
    requests = lead_run(folder, steps)
    first, second = last_output(requests[1]), last_output(requests[2])
    assert first.output.endswith("completed:\npydantic-ai heard: the first thing"), first
    assert second.output.endswith("completed:\npydantic-ai heard: the second thing"), second


def test_an_a2a_block_is_checked_when_the_spec_loads(tmp_path: Path) -> None:
    from agentscope_teams.errors import SpecError
    from agentscope_teams.subagents import SubagentSpec

    folder = tmp_path / "bad"
    folder.mkdir()
    bad = {
        "url: ftp://x": r"http\(s\) URL",
        "url: http://x\n  colour: red": "colour",
        "url: http://x\noutput: {type: object}": "answers with text",
    }
    for block, problem in bad.items():
        path = folder / "remote.md"
        path.write_text(f"---\ndescription: d\na2a:\n  {block}\n---\n")
        with pytest.raises(SpecError, match=problem):
            SubagentSpec.from_file(path)
    path.write_text("---\ndescription: d\na2a: {url: 'http://x/'}\n---\n")
    spec = SubagentSpec.from_file(path)
    assert spec.a2a is not None and spec.tools == [] and spec.a2a.timeout == 300


def test_a_waiting_task_the_remote_ended_does_not_block_the_conversation(remote: str) -> None:
    """The remote agent's task waiting for input was ended there (cancelled, expired, lost): the
    answer sent on it fails, naming the task; the next turn starts a new task in the same
    context instead of failing on the dead task again, forever."""
    from a2a.types.a2a_pb2 import CancelTaskRequest

    from agentscope_teams import RuntimeContext
    from agentscope_teams.a2a import RemoteA2AModel, RemoteAgentConfig
    from agentscope_teams.errors import ModelError
    from agentscope_teams.store.memory import InMemoryStore

    config = RemoteAgentConfig(url=remote, headers={"X-Api-Key": KEY}, retries=0, poll=0.1)
    model = RemoteA2AModel("remote", config, InMemoryStore())
    ctx = RuntimeContext(session_id="child-1", user_id="alice")

    async def talk() -> None:
        asked = await model.ask(ctx, "ask")
        assert asked.waiting and "What is your name?" in asked.text
        entry = await model.store.get(next(iter(await model.store.list_keys((), limit=10))))
        assert entry is not None
        waiting = json.loads(entry.value)["task_id"]
        client = await sdk_client(remote, None, headers={"X-Api-Key": KEY})
        await client.cancel_task(CancelTaskRequest(id=waiting))  # ended at the remote
        with pytest.raises(ModelError):
            await model.ask(ctx, "Ada")
        again = await model.ask(ctx, "hi again")  # a new task, not the dead one again
        assert not again.waiting and again.text == "remote says: hi again"

    anyio.run(talk)
