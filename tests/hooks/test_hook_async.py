"""``async: true`` command hooks (Claude Code's "run hooks in the background"): the event does not
wait for them and they cannot decide anything; what they answer in ``systemMessage`` /
``additionalContext`` reaches the model on the session's next turn. They end with the agent call
that started them: awaited within their timeout, killed past it or when the call is cancelled."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.hooks import parse_hooks
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.store import BaseStore
from agentscope_teams.tools import PermissionEngine

from .helpers import CTX, agent, script, tool_results

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})

#: Waits (up to 5 s) for the file the call writes, says what it saw, then tries to deny the call.
WATCHER = (
    "import json, os, sys, time\n"
    "d = json.load(sys.stdin)\n"
    "target = d['tool_input']['file_path']\n"
    "for _ in range(100):\n"
    "    if os.path.exists(target):\n"
    "        break\n"
    "    time.sleep(0.05)\n"
    "with open(os.environ['SEEN'], 'w') as f:\n"
    "    f.write('written' if os.path.exists(target) else 'not written')\n"
    "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',\n"
    "      'permissionDecision': 'deny', 'permissionDecisionReason': 'async says no',\n"
    "      'additionalContext': 'the audit of a.txt passed'}, 'systemMessage': 'audit done'}))\n"
)


def _entry(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, "async": True, **extra}


def _texts(request: ModelRequest) -> str:
    return "\n".join(m.get_text_content() for m in request.messages)


@pytest.mark.parametrize("background", [True, False])
async def test_an_async_pre_tool_use_hook_neither_waits_nor_denies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, background: bool
) -> None:
    monkeypatch.setenv("SEEN", str(tmp_path / "seen"))
    command = script(tmp_path, "w.py", WATCHER, python=True)
    entry = _entry(command) if background else {"type": "command", "command": command}
    hooks = {"PreToolUse": [{"matcher": "Write", "hooks": [entry]}]}
    model = ScriptedModel([WRITE, "done", "second answer"])
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("write it", CTX)
        seen = (tmp_path / "seen").read_text()  # the hook had ended when the call returned
        await a.call("and now?", CTX)
    written = (tmp_path / "ws" / "a.txt").exists()
    if background:  # the write ran while the hook still watched, and its deny was not heeded
        assert seen == "written" and written
        assert "async says no" not in tool_results(model.requests[1])[0]
        # its context reaches the model on the next turn (not the turn it ran in)
        assert "the audit of a.txt passed" not in _texts(model.requests[1])
        assert "the audit of a.txt passed" in _texts(model.requests[2])
        assert "audit done" in _texts(model.requests[2])
    else:  # control: the same hook in the foreground holds the call, then denies it
        assert seen == "not written" and not written
        assert tool_results(model.requests[1])[0].startswith("async says no")


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.split(")")[-1].split()[0] != "Z"


async def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs 2 s from now (a SIGKILL takes effect soon, not at once)."""
    for _ in range(40):
        if not _running(pid):
            return False
        await anyio.sleep(0.05)
    return True


def _sleeper(tmp_path: Path) -> str:
    """A hook whose child sleeps 30 s, its pid written to ``pid``."""
    return script(tmp_path, "s.sh", f"cat >/dev/null\nsleep 30 & echo $! > {tmp_path}/pid\nwait\n")


async def _pid(tmp_path: Path) -> int:
    for _ in range(100):
        if (tmp_path / "pid").exists() and (text := (tmp_path / "pid").read_text().strip()):
            return int(text)
        await anyio.sleep(0.05)
    raise AssertionError("the hook never started")


async def test_an_async_hook_past_its_timeout_is_killed_when_the_call_ends(tmp_path: Path) -> None:
    hooks = {"PostToolUse": [{"hooks": [_entry(_sleeper(tmp_path), timeout=1)]}]}
    model = ScriptedModel([WRITE, "done"])
    started = time.monotonic()
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("write it", CTX)
    assert time.monotonic() - started < 10  # not the 30 s the hook would take
    pid = await _pid(tmp_path)
    assert not await _alive(pid)


async def test_an_async_hook_is_killed_when_the_call_is_cancelled(tmp_path: Path) -> None:
    hooks = {"PostToolUse": [{"hooks": [_entry(_sleeper(tmp_path), timeout=60)]}]}
    slow = ScriptedModel.tool_call("bash", {"command": "sleep 20"})
    model = ScriptedModel([WRITE, slow, "done"])
    async with agent(tmp_path, model, hooks=hooks, sandbox="unsafe-host") as a:
        with anyio.move_on_after(3):
            await a.call("write it", CTX)
    pid = await _pid(tmp_path)
    assert not await _alive(pid)


def test_an_async_guard_warns_at_load_that_it_cannot_deny(caplog: pytest.LogCaptureFixture) -> None:
    data = {"PreToolUse": [{"hooks": [_entry("./guard.sh")]}]}
    with caplog.at_level(logging.WARNING):
        parse_hooks(data, "settings.json")
    assert "hooks.PreToolUse[0].hooks[0]" in caplog.text and "cannot deny" in caplog.text


def test_async_must_be_a_boolean() -> None:
    data = {"PostToolUse": [{"hooks": [_entry("true") | {"async": "yes"}]}]}
    with pytest.raises(Exception, match=r"hooks\.PostToolUse\[0\]\.hooks\[0\]\.async"):
        parse_hooks(data, "settings.json")


async def test_what_an_async_hook_said_waits_in_the_session_for_whichever_agent_serves_it(
    tmp_path: Path, redis: BaseStore, ctx: RuntimeContext
) -> None:
    """The note is kept in the stored session, not in the process: a second agent object on the
    same Redis store, with no hooks at all (another worker), gives it to its model."""
    say = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: ok"}}
    command = script(tmp_path, "n.sh", f"cat >/dev/null\necho '{json.dumps(say)}'\n")
    hooks = {"PostToolUse": [{"hooks": [_entry(command)]}]}
    first = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, first, hooks=hooks, store=redis) as a:
        await a.call("write it", ctx)
    assert all("lint: ok" not in _texts(r) for r in first.requests)
    second = ScriptedModel(["fine"])
    async with agent(tmp_path, second, store=redis) as b:
        await b.call("next", ctx)
    assert "lint: ok" in _texts(second.requests[0])


async def test_an_async_hook_is_killed_at_its_timeout_while_the_call_goes_on(
    tmp_path: Path,
) -> None:
    """Its timeout holds during the call, not only at its end: a later tool call of the same
    reply sees the hook's process gone."""
    hooks = {
        "PostToolUse": [{"matcher": "Write", "hooks": [_entry(_sleeper(tmp_path), timeout=1)]}]
    }
    probe = (
        f"for i in $(seq 60); do kill -0 $(cat {tmp_path}/pid) 2>/dev/null || "
        "{ echo gone; exit 0; }; sleep 0.1; done; echo alive"
    )
    wait = ScriptedModel.tool_call("bash", {"command": f"sleep 2; {probe}"})
    model = ScriptedModel([WRITE, wait, "done"])
    engine = PermissionEngine(mode="bypass")
    async with agent(tmp_path, model, hooks=hooks, permissions=engine, sandbox="unsafe-host") as a:
        await a.call("write it", CTX)
    assert "gone" in tool_results(model.requests[2])[-1]
