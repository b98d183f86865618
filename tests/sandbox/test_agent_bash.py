"""End to end: an agent with ``sandbox=`` calls ``bash`` through its loop; permission modes decide
whether it runs, never whether it is sandboxed; its background shells stop with the call."""

from __future__ import annotations

import uuid
from pathlib import Path

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.events import RequireUserConfirmEvent, ToolResultEvent
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model import ScriptedModel
from agentscope_teams.sandbox import BubblewrapSandbox
from agentscope_teams.state import PermissionMode
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import PermissionEngine, ShellResult, output_of

from .conftest import exists, processes_with


def agent(
    root: Path, sandbox: BubblewrapSandbox, mode: PermissionMode, *calls: dict[str, object]
) -> HarnessAgent:
    script = [ScriptedModel.tool_call("bash", c) for c in calls]
    return HarnessAgent(
        "lead",
        ScriptedModel([*script, "done"]),
        workspace=root,
        store=InMemoryStore(),
        permissions=PermissionEngine(mode=mode),
        sandbox=sandbox,
    )


async def results(lead: HarnessAgent, ctx: RuntimeContext) -> list[ToolResultBlock]:
    found = []
    async for event in lead.stream("go", ctx):
        if isinstance(event, ToolResultEvent):
            found.append(event.result)
        assert not isinstance(event, RequireUserConfirmEvent)
    return found


async def test_bypass_runs_bash_in_the_sessions_workspace(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    lead = agent(tmp_path, bwrap, "bypass", {"command": "echo hi > f.txt && cat f.txt"})
    ctx = RuntimeContext(session_id="s1", user_id="alice")
    async with lead:
        [block] = await results(lead, ctx)
    result = output_of(block, ShellResult)
    assert result is not None and result.exit_code == 0 and result.output == "hi\n"
    assert block.output == "hi\n[exit code 0]"
    assert (lead.workspace_for(ctx) / "f.txt").read_text() == "hi\n"


async def test_bypass_skips_prompts_but_not_the_sandbox(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    ctx_a = RuntimeContext(session_id="a", user_id="alice")
    ctx_b = RuntimeContext(session_id="b", user_id="bob")
    victim = agent(tmp_path, bwrap, "bypass")
    secret = victim.workspace_for(ctx_b) / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("bob's secret\n")
    attack = f"cat {secret}; echo pwned > /etc/pwned; env"
    lead = agent(tmp_path, bwrap, "bypass", {"command": attack})
    async with lead:
        [block] = await results(lead, ctx_a)
    assert "bob's secret" not in block.output
    assert not exists("/etc/pwned")
    assert "OPENAI_API_KEY" not in block.output


async def test_default_mode_asks_and_plan_mode_refuses(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    ctx = RuntimeContext(session_id="s1")
    asking = agent(tmp_path, bwrap, "default", {"command": "touch made.txt"})
    async with asking:
        events = [e async for e in asking.stream("go", ctx)]
    assert any(isinstance(e, RequireUserConfirmEvent) for e in events)
    assert not (asking.workspace_for(ctx) / "made.txt").exists()

    planning = agent(tmp_path, bwrap, "plan", {"command": "touch made.txt"})
    async with planning:
        [block] = await results(planning, RuntimeContext(session_id="s2"))
    assert block.is_error and "plan mode" in block.output
    assert not (planning.workspace_for(RuntimeContext(session_id="s2")) / "made.txt").exists()


async def test_background_shells_stop_when_the_call_ends(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    marker = f"{600000 + uuid.uuid4().int % 99999}"
    lead = agent(
        tmp_path, bwrap, "bypass", {"command": f"sleep {marker}", "run_in_background": True}
    )
    async with lead:
        [block] = await results(lead, RuntimeContext(session_id="s1"))
    assert "started background shell bash_" in block.output
    assert processes_with(marker) == []


async def test_the_toolkit_children_and_members_are_built_from_has_the_shell_tools(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    spec = "---\nname: helper\ndescription: helps\n---\nYou help.\n"
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "helper.md").write_text(spec)
    lead = HarnessAgent(
        "lead",
        ScriptedModel(["done"]),
        workspace=tmp_path / "ws",
        store=InMemoryStore(),
        specs=tmp_path / "specs",
        sandbox=bwrap,
    )
    without = HarnessAgent(
        "lead", ScriptedModel(["done"]), workspace=tmp_path / "ws", store=InMemoryStore()
    )
    assert {"bash", "bash_output", "kill_shell"} <= set(lead.view.toolkit.names())
    assert "bash" not in without.view.toolkit.names()  # control: no sandbox, no shell
