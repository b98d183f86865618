"""``continue: false`` (with ``stopReason``) in a hook's JSON answer, as Claude Code reads it: the
agent stops after the hook, whatever the event's own decision fields say, and the stop reason is
what the user is told (the reply's final message)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams.events import (
    HintEvent,
    ReplyEndEvent,
    RequireUserConfirmEvent,
    ToolResultEvent,
)
from agentscope_teams.model import ScriptedModel
from agentscope_teams.tools import tool

from .helpers import CTX, agent, command_hooks, script

pytestmark = pytest.mark.anyio

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})


def _answering(tmp_path: Path, answer: dict[str, object]) -> str:
    return script(tmp_path, "hook.sh", f"cat > /dev/null\necho '{json.dumps(answer)}'\n")


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
        {"decision": "approve"},
    ],
)
async def test_pre_tool_use_continue_false_stops_before_the_tool_runs(
    tmp_path: Path, extra: dict[str, object]
) -> None:
    answer = {"continue": False, "stopReason": "frozen: release in progress", **extra}
    hooks = command_hooks("PreToolUse", _answering(tmp_path, answer), "Write")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=hooks) as a:
        reply = await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()  # the call did not run
    assert len(model.requests) == 1  # the model was not asked again
    assert "frozen: release in progress" in reply.get_text_content()
    assert reply.metadata.get("stopped_by_hook")


async def test_post_tool_use_continue_false_ends_the_reply_after_the_tool(tmp_path: Path) -> None:
    answer = {"continue": False, "stopReason": "tests failed", "decision": "block", "reason": "x"}
    hooks = command_hooks("PostToolUse", _answering(tmp_path, answer), "Write")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=hooks) as a:
        reply = await a.call("write it", CTX)
    assert (tmp_path / "ws" / "a.txt").exists()  # it ran before the hook
    assert len(model.requests) == 1
    assert reply.get_text_content() == "tests failed" and reply.metadata["stopped_by_hook"]


async def test_user_prompt_submit_continue_false_stops_before_the_model(tmp_path: Path) -> None:
    answer = {"continue": False, "stopReason": "out of hours"}
    hooks = command_hooks("UserPromptSubmit", _answering(tmp_path, answer))
    model = ScriptedModel(["hello"])
    async with agent(tmp_path, model, hooks=hooks) as a:
        reply = await a.call("hi", CTX)
    assert model.requests == []
    assert reply.get_text_content() == "out of hours" and reply.metadata["stopped_by_hook"]


async def test_stop_continue_false_tells_the_user_its_reason(tmp_path: Path) -> None:
    """The model's answer stays the reply's answer; the stop reason reaches the user as a hint
    and in the final message's metadata (``hook_stop_reason``), and a block beside it does not
    send the model back to work."""
    answer = {"continue": False, "stopReason": "budget review", "decision": "block", "reason": "x"}
    hooks = command_hooks("Stop", _answering(tmp_path, answer))
    model = ScriptedModel(["the answer", "more"])
    async with agent(tmp_path, model, hooks=hooks) as a:
        events = [e async for e in a.stream("hi", CTX)]
    assert len(model.requests) == 1
    end = next(e for e in events if isinstance(e, ReplyEndEvent))
    assert end.msg.get_text_content() == "the answer"
    assert end.msg.metadata["hook_stop_reason"] == "budget review"
    hints = [e.text for e in events if isinstance(e, HintEvent)]
    assert any("budget review" in h for h in hints)


@tool(requires_confirmation=True)
async def deploy(target: str) -> str:
    """Deploy (asks the user).

    Args:
        target: Where to.
    """
    return f"deployed to {target}"


@pytest.mark.parametrize("behavior", [None, "allow"])
async def test_permission_request_continue_false_stops_instead_of_asking(
    tmp_path: Path, behavior: str | None
) -> None:
    """The call neither runs nor waits for the user: the reply ends with the stop reason and
    nothing is left awaiting confirmation."""
    answer: dict[str, object] = {"continue": False, "stopReason": "no deploys on Friday"}
    if behavior:
        verdict = {"behavior": behavior}
        answer["hookSpecificOutput"] = {"hookEventName": "PermissionRequest", "decision": verdict}
    hooks = command_hooks("PermissionRequest", _answering(tmp_path, answer), "deploy")
    model = ScriptedModel([ScriptedModel.tool_call("deploy", {"target": "prod"}), "done"])
    async with agent(tmp_path, model, tools=[deploy], hooks=hooks) as a:
        events = [e async for e in a.stream("go", CTX)]
        state = await a.get_agent_state(CTX)
    assert not any(isinstance(e, RequireUserConfirmEvent) for e in events)
    results = [e.result for e in events if isinstance(e, ToolResultEvent)]
    assert [r.output for r in results] == [
        "not run: a hook stopped the agent (no deploys on Friday)"
    ]
    end = next(e for e in events if isinstance(e, ReplyEndEvent))
    assert end.msg.get_text_content() == "no deploys on Friday"
    assert state.awaiting_confirmation == [] and len(model.requests) == 1
