"""UserPromptSubmit, Stop and SessionStart command hooks, and the hook timeout."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.model import ScriptedModel

from .helpers import CTX, agent, command_hooks, script


async def test_user_prompt_submit_exit_2_refuses_the_prompt(tmp_path: Path) -> None:
    body = 'grep -q secret && { echo "no secrets in prompts" >&2; exit 2; }\nexit 0\n'
    model = ScriptedModel(["answer"])
    hooks = command_hooks("UserPromptSubmit", script(tmp_path, "u.sh", body))
    async with agent(tmp_path, model, hooks=hooks) as a:
        refused = await a.call("the secret is 42", CTX)
        state = await a.get_agent_state(CTX)
        assert model.requests == []  # the model never saw it
        assert "no secrets in prompts" in refused.get_text_content()
        assert all("42" not in m.get_text_content() for m in state.context)
        allowed = await a.call("hello", CTX)  # control: the same hook lets this one through
    assert allowed.get_text_content() == "answer"


async def test_user_prompt_submit_plain_stdout_is_context(tmp_path: Path) -> None:
    model = ScriptedModel(["ok"])
    hooks = command_hooks("UserPromptSubmit", script(tmp_path, "c.sh", "echo 'branch: main'\n"))
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("hi", CTX)
    texts = [m.get_text_content() for m in model.requests[0].messages]
    assert texts == ["hi", "branch: main"]


async def test_stop_exit_2_continues_once_then_stops(tmp_path: Path) -> None:
    log = tmp_path / "stop.jsonl"
    body = (
        "import json, sys\nd = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps(d) + '\\n')\n"
        "if not d['stop_hook_active']:\n"
        "    print('run the tests first', file=sys.stderr); sys.exit(2)\n"
    )
    model = ScriptedModel(["first", "second"])
    hooks = command_hooks("Stop", script(tmp_path, "stop.py", body, python=True))
    async with agent(tmp_path, model, hooks=hooks) as a:
        final = await a.call("do it", CTX)
    assert final.get_text_content() == "second"
    assert len(model.requests) == 2
    assert model.requests[1].messages[-1].get_text_content() == "run the tests first"
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["stop_hook_active"] for e in seen] == [False, True]
    assert seen[0]["last_assistant_message"] == "first"


async def test_session_start_context_comes_first_for_a_new_session_only(tmp_path: Path) -> None:
    model = ScriptedModel(["a", "b"])
    hooks = command_hooks("SessionStart", script(tmp_path, "s.sh", "echo 'todo: none'\n"))
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("one", CTX)
        await a.call("two", CTX)
    texts = [m.get_text_content() for m in model.requests[1].messages]
    assert texts == ["todo: none", "one", "a", "two"]


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie awaiting its reaper counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


async def test_a_hook_timeout_kills_its_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    body = f"sleep 300 &\necho $$ $! > {pids}\nwait\n"
    command = script(tmp_path, "slow.sh", body)
    hooks = Hooks(
        parse_hooks(command_hooks("PreToolUse", command, timeout=0.5)), project_dir=tmp_path
    )
    outcome = await hooks.fire("PreToolUse", {"tool_name": "Write", "tool_input": {}})
    assert outcome.errors and "timed out" in outcome.errors[0]
    shell, child = map(int, pids.read_text().split())
    # SIGKILL is delivered, and orphans reaped, asynchronously: give the kernel up to 10 s
    for _ in range(1000):
        if not (_alive(shell) or _alive(child)):
            break
        await anyio.sleep(0.01)
    assert not _alive(shell)
    assert not _alive(child)


async def test_hook_env_and_cwd_are_the_project_root(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    body = f'echo "{{\\"dir\\": \\"$CLAUDE_PROJECT_DIR\\", \\"cwd\\": \\"$(pwd)\\"}}" > {out}\n'
    hooks = Hooks(
        parse_hooks(command_hooks("Stop", script(tmp_path, "e.sh", body))), project_dir=tmp_path
    )
    await hooks.fire("Stop", {})
    assert json.loads(out.read_text()) == {"dir": str(tmp_path), "cwd": str(tmp_path)}
