"""PreToolUse / PostToolUse command hooks: real scripts, Claude Code's names and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams.events import RequireUserConfirmEvent
from agentscope_teams.model import ScriptedModel
from agentscope_teams.tools import PermissionEngine, tool
from agentscope_teams.tools.permissions import parse_rule

from .helpers import CTX, HAS_JQ, agent, command_hooks, read_lines, script, tool_results

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})


def _blocking_script(tmp_path: Path) -> str:
    """Exit 2 on Write, naming the file on stderr (jq when installed, else python)."""
    if HAS_JQ:
        body = (
            "input=$(cat)\n"
            'name=$(echo "$input" | jq -r .tool_name)\n'
            'path=$(echo "$input" | jq -r .tool_input.file_path)\n'
            'if [ "$name" = "Write" ]; then echo "no writes to $path" >&2; exit 2; fi\n'
        )
        return script(tmp_path, "guard.sh", body)
    body = (
        "import json, sys\nd = json.load(sys.stdin)\n"
        "if d['tool_name'] == 'Write':\n"
        "    print('no writes to ' + d['tool_input']['file_path'], file=sys.stderr); sys.exit(2)\n"
    )
    return script(tmp_path, "guard.py", body, python=True)


@pytest.mark.parametrize("hooked", [True, False])
async def test_pre_tool_use_exit_2_blocks_the_write_and_the_model_reads_stderr(
    tmp_path: Path, hooked: bool
) -> None:
    model = ScriptedModel([WRITE, "done"])
    hooks = (
        command_hooks("PreToolUse", _blocking_script(tmp_path), "Write|Edit") if hooked else None
    )
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("write it", CTX)
    written = (tmp_path / "ws" / "a.txt").exists()
    results = tool_results(model.requests[1])
    if hooked:
        assert not written
        assert results == [f"no writes to {(tmp_path / 'ws' / 'a.txt').resolve()}"]
    else:  # control: without the hook the write happens
        assert written


@pytest.mark.parametrize("decision", ["deny", "allow", "ask"])
async def test_pre_tool_use_json_permission_decision(tmp_path: Path, decision: str) -> None:
    calls: list[str] = []

    @tool(requires_confirmation=True)
    async def deploy(target: str) -> str:
        """Deploy.

        Args:
            target: where
        """
        calls.append(target)
        return "deployed"

    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": f"policy says {decision}",
        }
    }
    command = script(tmp_path, "p.py", f"print({json.dumps(json.dumps(out))})\n", python=True)
    model = ScriptedModel([ScriptedModel.tool_call("deploy", {"target": "prod"}), "done"])
    events = []
    async with agent(
        tmp_path, model, tools=[deploy], hooks=command_hooks("PreToolUse", command, "deploy")
    ) as a:
        async for ev in a.stream("go", CTX):
            events.append(ev)
    asked = any(isinstance(e, RequireUserConfirmEvent) for e in events)
    if decision == "deny":
        assert calls == [] and not asked
        assert tool_results(model.requests[1]) == ["policy says deny"]
    elif decision == "allow":  # the tool requires confirmation: allow skips the prompt
        assert calls == ["prod"] and not asked
    else:
        assert calls == [] and asked


async def test_allow_does_not_override_a_deny_rule(tmp_path: Path) -> None:
    out = {"hookSpecificOutput": {"permissionDecision": "allow"}}
    command = script(tmp_path, "p.py", f"print({json.dumps(json.dumps(out))})\n", python=True)
    model = ScriptedModel([WRITE, "done"])
    engine = PermissionEngine([parse_rule("write_file", "deny")])
    async with agent(
        tmp_path, model, permissions=engine, hooks=command_hooks("PreToolUse", command)
    ) as a:
        await a.call("go", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert "denied by rule" in tool_results(model.requests[1])[0]


async def test_updated_input_rewrites_the_path(tmp_path: Path) -> None:
    body = (
        "import json, sys\nd = json.load(sys.stdin)\n"
        "i = dict(d['tool_input'], file_path='b.txt')\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'permissionDecision': 'allow', 'updatedInput': i}}))\n"
    )
    model = ScriptedModel([WRITE, "done"])
    hooks = command_hooks("PreToolUse", script(tmp_path, "r.py", body, python=True), "Write")
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("go", CTX)
        state = await a.get_agent_state(CTX)
    assert (tmp_path / "ws" / "b.txt").read_text() == "x"
    assert not (tmp_path / "ws" / "a.txt").exists()
    # the call in the context is the one that ran
    calls = [b for m in state.context if isinstance(m.content, list) for b in m.content]
    assert any(getattr(b, "input", {}).get("path") == "b.txt" for b in calls)


async def test_updated_input_is_validated_by_the_tool(tmp_path: Path) -> None:
    out = {"hookSpecificOutput": {"updatedInput": {"file_path": 5}}}
    command = script(tmp_path, "p.py", f"print({json.dumps(json.dumps(out))})\n", python=True)
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=command_hooks("PreToolUse", command)) as a:
        await a.call("go", CTX)
    [result] = tool_results(model.requests[1])
    assert "content" in result  # the rewritten input lacks content: a tool error, not a crash


async def test_post_tool_use_sees_the_tool_response_under_claude_code_names(tmp_path: Path) -> None:
    log = tmp_path / "post.jsonl"
    body = f"cat >> {log}\necho >> {log}\necho 'checked by the linter' >&2\nexit 2\n"
    model = ScriptedModel([WRITE, "done"])
    hooks = command_hooks("PostToolUse", script(tmp_path, "post.sh", body), "Write")
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("go", CTX)
    [event] = read_lines(log)
    assert event["hook_event_name"] == "PostToolUse"
    assert event["tool_name"] == "Write"
    # Claude Code's file_path is absolute (here: in the session's workspace, the event's cwd)
    path = str((tmp_path / "ws" / "a.txt").resolve())
    assert event["tool_input"] == {"file_path": path, "content": "x"}
    assert event["cwd"] == str((tmp_path / "ws").resolve())
    assert event["tool_use_id"] and event["session_id"] == "s1"
    assert event["permission_mode"] == "default"
    assert "a.txt" in event["tool_response"]["output"]
    assert (tmp_path / "ws" / "a.txt").exists()  # PostToolUse cannot undo
    [result] = tool_results(model.requests[1])
    assert result.endswith("[hook] checked by the linter")


async def test_a_tool_with_no_claude_code_name_is_matched_by_our_name(tmp_path: Path) -> None:
    log = tmp_path / "seen.jsonl"
    body = f"cat >> {log}\necho >> {log}\n"

    @tool
    async def ping() -> str:
        """Ping."""
        return "pong"

    model = ScriptedModel([ScriptedModel.tool_call("ping", {}), WRITE, "done"])
    hooks = command_hooks("PreToolUse", script(tmp_path, "s.sh", body), "ping|Write")
    async with agent(tmp_path, model, tools=[ping], hooks=hooks) as a:
        await a.call("go", CTX)
    assert [e["tool_name"] for e in read_lines(log)] == ["ping", "Write"]


async def test_python_callable_hooks(tmp_path: Path) -> None:
    seen: list[str] = []

    async def guard(event: dict) -> dict | None:
        seen.append(event["tool_name"])
        return {"decision": "block", "reason": "not today"}

    def audit(event: dict) -> None:  # a sync hook runs off the event loop
        seen.append("post:" + event["tool_name"])

    model = ScriptedModel([WRITE, "done"])
    hooks = {"PreToolUse": [("Write", guard)], "PostToolUseFailure": [("*", audit)]}
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("go", CTX)
    assert seen == ["Write"]
    assert tool_results(model.requests[1]) == ["not today"]
    assert not (tmp_path / "ws" / "a.txt").exists()


@pytest.mark.parametrize("mode", ["dont_ask", "default"])
async def test_a_hook_ask_in_dont_ask_mode_is_refused(tmp_path: Path, mode: str) -> None:
    out = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check"}}
    command = script(tmp_path, "p.py", f"print({json.dumps(json.dumps(out))})\n", python=True)
    model = ScriptedModel([WRITE, "done"])
    engine = PermissionEngine(mode=mode)  # type: ignore[arg-type]
    events = []
    async with agent(
        tmp_path, model, permissions=engine, hooks=command_hooks("PreToolUse", command)
    ) as a:
        async for ev in a.stream("go", CTX):
            events.append(ev)
    asked = any(isinstance(e, RequireUserConfirmEvent) for e in events)
    assert not (tmp_path / "ws" / "a.txt").exists()
    if mode == "dont_ask":  # nobody to ask: refused, the model reads why
        assert not asked and "dontAsk" in tool_results(model.requests[1])[0]
    else:  # the control: the same hook asks
        assert asked


async def test_a_post_tool_use_block_names_only_the_hooks_that_blocked(tmp_path: Path) -> None:
    """Two PostToolUse hooks on one call: the one that blocks (exit 2) is named in the result's
    record of the block; the one that answered with context is not."""
    lint = script(tmp_path, "lint.sh", "cat > /dev/null\necho 'fails the linter' >&2\nexit 2\n")
    note = script(tmp_path, "note.sh", 'cat > /dev/null\necho \'{"additionalContext": "seen"}\'\n')
    hooks = {
        "PostToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": c}]} for c in (lint, note)
        ]
    }
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("go", CTX)
        state = await a.get_agent_state(CTX)
    [result] = [
        b for m in state.context for b in m.blocks if getattr(b, "type", "") == "tool_result"
    ]
    assert not result.is_error and (tmp_path / "ws" / "a.txt").exists()  # the tool ran
    assert result.data is not None
    assert result.data["hook_block_after_tool"] == {
        "event": "PostToolUse",
        "hooks": [f"PostToolUse[Write] {lint}"],
        "reason": "fails the linter",
    }
