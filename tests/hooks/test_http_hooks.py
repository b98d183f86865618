"""``type: http`` hooks: the event JSON is POSTed to ``url``; a 2xx JSON reply is read as a
command hook's stdout; any other reply, a refused connection or a timeout is a non-blocking error.
Against a real HTTP server on a loopback port."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.hooks import Hooks, parse_hooks, settings_hooks
from agentscope_teams.model import ScriptedModel

from .helpers import CTX, agent, tool_results
from .http_server import Reply, Server


def http_hooks(event: str, url: str, matcher: str = "", **more: Any) -> dict[str, Any]:
    return {event: [{"matcher": matcher, "hooks": [{"type": "http", "url": url, **more}]}]}


PRE = {"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "ls"}}


def _deny(reason: str) -> str:
    specific = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
    }
    return json.dumps({"hookSpecificOutput": specific})


async def test_the_event_json_is_posted_and_a_deny_reply_denies(server: Server) -> None:
    server.replies["/pre"] = Reply(body=_deny("no ls here"))
    hooks = Hooks(parse_hooks(http_hooks("PreToolUse", server.url("/pre"), "Bash")))
    out = await hooks.fire("PreToolUse", dict(PRE))
    assert out.permission == "deny"
    assert out.permission_reason == "no ls here"
    (sent,) = server.seen
    assert sent["body"]["tool_input"] == {"command": "ls"}
    assert sent["body"]["hook_event_name"] == "PreToolUse"
    assert sent["headers"]["Content-Type"] == "application/json"


async def test_allow_and_block_replies_are_read_as_a_commands_stdout(server: Server) -> None:
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    server.replies["/allow"] = Reply(body=json.dumps(allow))
    server.replies["/stop"] = Reply(body=json.dumps({"decision": "block", "reason": "tests fail"}))
    pre = Hooks(parse_hooks(http_hooks("PreToolUse", server.url("/allow"))))
    assert (await pre.fire("PreToolUse", dict(PRE))).permission == "allow"
    stop = Hooks(parse_hooks(http_hooks("Stop", server.url("/stop"))))
    out = await stop.fire("Stop", {"session_id": "s1", "stop_hook_active": False})
    assert out.blocked and out.reason == "tests fail"


async def test_an_empty_2xx_reply_is_success_without_output(server: Server) -> None:
    server.replies["/ok"] = Reply(status=204)
    hooks = Hooks(parse_hooks(http_hooks("PreToolUse", server.url("/ok"))))
    out = await hooks.fire("PreToolUse", dict(PRE))
    assert out.permission is None and not out.blocked and not out.notices


@pytest.mark.parametrize("status", [403, 500])
async def test_a_non_2xx_reply_is_a_non_blocking_error_even_with_a_deny_body(
    server: Server, status: int
) -> None:
    """Status codes alone cannot block (Claude Code): the call goes on, the error is reported."""
    server.replies["/bad"] = Reply(status=status, body=_deny("ignored"))
    hooks = Hooks(parse_hooks(http_hooks("PreToolUse", server.url("/bad"))))
    out = await hooks.fire("PreToolUse", dict(PRE))
    assert out.permission is None and not out.blocked
    assert any(str(status) in n and server.url("/bad") in n for n in out.notices)


async def test_a_timeout_is_a_non_blocking_error(server: Server) -> None:
    server.replies["/slow"] = Reply(body=_deny("too late"), delay=30)
    hooks = Hooks(parse_hooks(http_hooks("PreToolUse", server.url("/slow"), timeout=0.3)))
    out = await hooks.fire("PreToolUse", dict(PRE))
    assert out.permission is None
    assert any("timed out" in n for n in out.notices)


async def test_a_refused_connection_is_a_non_blocking_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hooks = Hooks(parse_hooks(http_hooks("PreToolUse", f"http://127.0.0.1:{port}/x")))
    out = await hooks.fire("PreToolUse", dict(PRE))
    assert out.permission is None and not out.blocked
    assert any(f"127.0.0.1:{port}" in n for n in out.notices)


async def test_headers_interpolate_only_the_allowed_variables(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t0ken")
    monkeypatch.setenv("SECRET_KEY", "do-not-send")
    headers = {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "a${SECRET_KEY}b"}
    entry = http_hooks(
        "PreToolUse", server.url("/h"), headers=headers, allowedEnvVars=["HOOK_TOKEN"]
    )
    await Hooks(parse_hooks(entry)).fire("PreToolUse", dict(PRE))
    sent = server.seen[0]["headers"]
    assert sent["Authorization"] == "Bearer t0ken"
    assert sent["X-Other"] == "ab"  # not allowed: left empty, never the variable's value


async def test_without_allowed_env_vars_no_variable_is_sent(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t0ken")
    entry = http_hooks(
        "PreToolUse", server.url("/h"), headers={"Authorization": "Bearer $HOOK_TOKEN"}
    )
    await Hooks(parse_hooks(entry)).fire("PreToolUse", dict(PRE))
    assert server.seen[0]["headers"]["Authorization"] == "Bearer"  # empty, then trimmed


async def test_an_http_hook_in_settings_json_guards_an_agents_tool(
    tmp_path: Path, server: Server
) -> None:
    """End to end: a project's settings file with an http hook loads, and its deny reaches the
    model as the call's result."""
    server.replies["/guard"] = Reply(body=_deny("writes are reviewed first"))
    (tmp_path / ".claude").mkdir()
    settings = {"hooks": http_hooks("PreToolUse", server.url("/guard"), "Write")}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    assert [h.url for h in settings_hooks(tmp_path)["PreToolUse"]] == [server.url("/guard")]
    write = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})
    model = ScriptedModel([write, "done"])
    async with agent(tmp_path, model, hooks=settings["hooks"]) as a:
        await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert tool_results(model.requests[1]) == ["writes are reviewed first"]
    assert server.seen[0]["body"]["tool_name"] == "Write"


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "http"}, "url"),
        ({"type": "http", "url": "ftp://x/y"}, "url"),
        ({"type": "http", "url": "http://x/", "headers": ["a"]}, "headers"),
        ({"type": "http", "url": "http://x/", "allowedEnvVars": "A"}, "allowedEnvVars"),
    ],
)
def test_a_malformed_http_entry_names_file_entry_and_field(entry: dict, field: str) -> None:
    from agentscope_teams.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as err:
        parse_hooks({"PreToolUse": [{"hooks": [entry]}]}, "proj/.claude/settings.json")
    assert "proj/.claude/settings.json: hooks.PreToolUse[0].hooks[0]" in str(err.value)
    assert field in str(err.value)
