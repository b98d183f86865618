"""MCP tools over stdio, against real servers: mcp-server-time, mcp-server-git and a test server."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.store import InMemoryStore

from .helpers import ECHO, TIME, git_server, results_seen, tool_names_offered


def ctx(user: str = "alice", session: str = "s1") -> RuntimeContext:
    return RuntimeContext(session_id=session, user_id=user, org_id="acme")


def agent(model: ScriptedModel, servers: dict[str, object], **kw: object) -> HarnessAgent:
    return HarnessAgent(
        "lead", model, "You use tools.", store=InMemoryStore(), mcp_servers=servers, **kw
    )


async def only_result(
    model: ScriptedModel, servers: dict[str, object], **kw: object
) -> ToolResultBlock:
    """Call a fresh agent once (then close it) and return the one tool result the model read."""
    lead = agent(model, servers, **kw)
    try:
        await lead.call("go", ctx())
    finally:
        await lead.aclose()
    [result] = results_seen(model)
    return result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "dev@example.com")
    git("config", "user.name", "Dev")
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    git("add", "app.py")
    git("commit", "-q", "-m", "Add the adder")
    (root / "app.py").write_text("def add(a, b):\n    return a - b  # oops\n")
    return root


async def test_time_server_tool_result_reaches_the_model() -> None:
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("mcp__time__get_current_time", {"timezone": "Europe/Paris"}),
            "It is late.",
        ]
    )
    lead = agent(model, {"time": TIME})
    try:
        reply = await lead.call("What time is it in Paris?", ctx())
    finally:
        await lead.aclose()
    assert reply.get_text_content() == "It is late."
    offered = tool_names_offered(model)
    assert "mcp__time__get_current_time" in offered and "mcp__time__convert_time" in offered
    schema = next(t for t in model.requests[0].tools if t.name == "mcp__time__get_current_time")
    assert "timezone" in schema.parameters["properties"]  # the server's own JSON schema
    [result] = results_seen(model)
    assert not result.is_error
    assert '"timezone": "Europe/Paris"' in result.output


async def test_git_log_and_diff_reach_the_model(repo: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("mcp__git__git_log", {"repo_path": str(repo), "max_count": 5}),
            ScriptedModel.tool_call(
                "mcp__git__git_diff", {"repo_path": str(repo), "target": "HEAD"}
            ),
            "Reviewed.",
        ]
    )
    lead = agent(model, {"git": git_server(repo)})
    try:
        await lead.call("Review the last change", ctx())
    finally:
        await lead.aclose()
    log_result, diff_result = results_seen(model)
    assert not log_result.is_error and "Add the adder" in log_result.output
    assert not diff_result.is_error
    assert (
        "-    return a + b" in diff_result.output
        and "+    return a - b  # oops" in diff_result.output
    )


async def test_a_tool_error_result_is_an_error_the_model_reads() -> None:
    model = ScriptedModel(
        [ScriptedModel.tool_call("mcp__echo__fail", {"reason": "quota exceeded"}), "ok"]
    )
    result = await only_result(model, {"echo": ECHO})
    assert result.is_error and "quota exceeded" in result.output


async def test_bad_arguments_are_an_error_the_model_reads() -> None:
    model = ScriptedModel([ScriptedModel.tool_call("mcp__echo__echo", {"txt": 1}), "ok"])
    result = await only_result(model, {"echo": ECHO})
    assert result.is_error and "text: missing required argument" in result.output


def _pid(text: str) -> int:
    return int(text.split("(pid ", 1)[1].split(",", 1)[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split()[2] == "Z")


async def test_a_crash_is_a_readable_error_then_the_server_restarts() -> None:
    echo = ScriptedModel.tool_call
    model = ScriptedModel(
        [
            echo("mcp__echo__echo", {"text": "one"}),
            "first",
            echo("mcp__echo__crash", {}),
            "second",
            echo("mcp__echo__echo", {"text": "two"}),
            "third",
        ]
    )
    lead = agent(model, {"echo": ECHO})
    try:
        await lead.call("1", ctx())
        first = results_seen(model)[-1].output
        await lead.call("2", ctx())
        crashed = results_seen(model)[-1]
        await lead.call("3", ctx())
        again = results_seen(model)[-1]
    finally:
        await lead.aclose()
    assert crashed.is_error
    assert "MCP server 'echo' stopped while running 'crash'" in crashed.output
    assert "crashing on purpose" in crashed.output  # the server's stderr says why
    assert "restarted at the next call" in crashed.output
    assert not again.is_error and "echo: two" in again.output
    assert _pid(again.output) != _pid(first)
    assert lead.mcp.pool.starts == 2


def echo_brain(request: ModelRequest) -> ModelResponse | str:
    """Echo once per turn; answer without tools when asked to."""
    last = request.messages[-1]
    if last.role == "user" and last.get_text_content() == "no tools":
        return "nothing to call"
    if any(
        isinstance(b, ToolResultBlock) for b in last.content if not isinstance(last.content, str)
    ):
        return "done"
    return ScriptedModel.tool_call("mcp__echo__echo", {"text": "hi"})


async def test_one_server_per_user_started_lazily_and_stopped_on_aclose() -> None:
    model = ScriptedModel(echo_brain)
    lead = agent(model, {"echo": ECHO})
    try:
        await lead.call("echo", ctx("alice"))
        alice = _pid(results_seen(model)[-1].output)
        assert lead.mcp.pool.starts == 1
        # bob's first call lists the tools from the cache: no server of his starts yet
        await lead.call("no tools", ctx("bob"))
        assert "mcp__echo__echo" in [t.name for t in model.requests[-1].tools]
        assert lead.mcp.pool.starts == 1
        await lead.call("echo", ctx("bob", "s2"))
        bob = _pid(results_seen(model)[-1].output)
        await lead.call("echo", ctx("alice", "s3"))
        alice_again = _pid(results_seen(model)[-1].output)
        assert lead.mcp.pool.starts == 2
        assert bob != alice and alice_again == alice  # per user, reused across sessions
        assert _alive(alice) and _alive(bob)
    finally:
        await lead.aclose()
    assert not _alive(alice) and not _alive(bob)
    assert lead.mcp.pool.live() == []


async def test_max_live_closes_the_least_recently_used_idle_server() -> None:
    model = ScriptedModel(echo_brain)
    lead = agent(model, {"echo": ECHO}, mcp_options={"max_live": 1})
    try:
        await lead.call("echo", ctx("alice"))
        alice = _pid(results_seen(model)[-1].output)
        await lead.call("echo", ctx("bob"))
        bob = _pid(results_seen(model)[-1].output)
        assert len(lead.mcp.pool.live()) == 1
        assert not _alive(alice) and _alive(bob)
    finally:
        await lead.aclose()


async def test_a_call_past_the_timeout_is_a_readable_error() -> None:
    model = ScriptedModel([ScriptedModel.tool_call("mcp__echo__sleep", {"seconds": 30}), "ok"])
    result = await only_result(model, {"echo": ECHO}, mcp_options={"call_timeout": 0.5})
    assert result.is_error and "did not answer within 0.5 seconds" in result.output


async def test_a_server_that_cannot_start_is_named_and_the_call_goes_on() -> None:
    model = ScriptedModel(["fine without it"])
    lead = agent(model, {"ghost": {"command": "/nonexistent/mcp-ghost"}})
    try:
        reply = await lead.call("go", ctx())
    finally:
        await lead.aclose()
    assert reply.get_text_content() == "fine without it"
    prompt = model.requests[0].system_prompt
    assert "Unavailable MCP servers" in prompt and "ghost" in prompt
    assert "command not found" in prompt


async def test_an_idle_server_closes_itself_and_restarts_on_the_next_call() -> None:
    model = ScriptedModel(echo_brain)
    lead = agent(model, {"echo": ECHO}, mcp_options={"idle_timeout": 0.5})
    try:
        await lead.call("echo", ctx())
        first = _pid(results_seen(model)[-1].output)
        for _ in range(100):  # the server's own task closes it; wait for that, boundedly
            if not _alive(first):
                break
            await anyio.sleep(0.1)
        assert not _alive(first) and lead.mcp.pool.live() == []
        await lead.call("echo", ctx())
        second = _pid(results_seen(model)[-1].output)
    finally:
        await lead.aclose()
    assert second != first and lead.mcp.pool.starts == 2


async def test_a_server_that_died_between_calls_is_restarted_transparently() -> None:
    model = ScriptedModel(echo_brain)
    lead = agent(model, {"echo": ECHO})
    try:
        await lead.call("echo", ctx())
        first = _pid(results_seen(model)[-1].output)
        os.kill(first, signal.SIGKILL)
        for _ in range(100):
            if not _alive(first) and lead.mcp.pool.live() == []:
                break
            await anyio.sleep(0.1)
        await lead.call("echo", ctx())
        result = results_seen(model)[-1]
    finally:
        await lead.aclose()
    assert not result.is_error and _pid(result.output) != first
    assert lead.mcp.pool.starts == 2
