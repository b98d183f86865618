"""Claude Code parity of hook matching and running: matcher forms, events without matchers,
identical commands run once, and a hook whose answer cannot be read is reported."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agentscope_teams.agent import CompressionConfig, ReActAgent, ReActConfig
from agentscope_teams.agent.react import ReplyOptions
from agentscope_teams.compose import HarnessAgent
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.events import HintEvent, RequireUserConfirmEvent
from agentscope_teams.hooks import Hook, Hooks, parse_hooks, settings_hooks
from agentscope_teams.message import AssistantMsg, UserMsg
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.state import AgentState
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import SubagentSpec
from agentscope_teams.subagents.strict import spec_problems
from agentscope_teams.tools import Tool, tool

from ..subagents.helpers import ALICE, runs, spawn
from .helpers import CTX, agent, command_hooks, script, tool_results
from .pairing import parent

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})


@pytest.mark.parametrize(
    ("matcher", "name", "selected"),
    [
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),  # letters only: an exact name
        ("Edit|Write", "Write", True),
        ("Edit|Write", "MultiEdit", False),  # a list of exact names
        ("^Notebook", "NotebookEdit", True),  # a regex is unanchored, as JavaScript's test()
        ("Output$", "BashOutput", True),
        ("^Bash$", "BashOutput", False),
        ("mcp__memory__.*", "mcp__memory__create_entities", True),
        ("mcp__memory", "mcp__memory__create_entities", False),  # exact: matches no tool
        ("code-reviewer", "code-reviewer", True),  # an agent type: names with '-' are exact
        ("code-reviewer", "code-reviewer-strict", False),
        ("*", "anything", True),
        ("", "anything", True),
    ],
)
def test_matcher_forms_select_as_in_claude_code(matcher: str, name: str, selected: bool) -> None:
    assert Hook("PreToolUse", matcher, command="true").matches(name) is selected


async def test_an_unanchored_regex_matcher_guards_the_write(tmp_path: Path) -> None:
    guard = script(tmp_path, "g.sh", "echo 'no writes' >&2\nexit 2\n")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=command_hooks("PreToolUse", guard, "^Wri")) as a:
        await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert tool_results(model.requests[1]) == ["no writes"]


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop"])
async def test_a_matcher_on_an_event_without_matchers_is_ignored(
    tmp_path: Path, event: str
) -> None:
    """Claude Code ignores ``matcher`` for UserPromptSubmit and Stop: the hook fires."""
    mark = tmp_path / "fired"
    command = script(tmp_path, "m.sh", f"touch {mark}\n")
    hooks = Hooks(parse_hooks(command_hooks(event, command, "Bash")), project_dir=tmp_path)
    await hooks.fire(event, {"session_id": "s1", "prompt": "hi", "stop_hook_active": False})
    assert mark.exists()


async def test_identical_commands_of_one_event_run_once(tmp_path: Path) -> None:
    """The same command in two matcher groups (or two settings files) runs once per event."""
    log = tmp_path / "runs"
    command = script(tmp_path, "count.sh", f"echo run >> {log}\n")
    config = {
        "PreToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": command}]},
            {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": command}]},
        ]
    }
    hooks = Hooks(parse_hooks(config), project_dir=tmp_path)
    await hooks.fire("PreToolUse", {"tool_name": "Write", "tool_input": {}})
    assert log.read_text().splitlines() == ["run"]


async def test_a_hook_printing_broken_json_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Claude Code does not act on JSON it cannot parse; the failure is reported, not silent."""
    body = 'echo \'{"hookSpecificOutput": {"permissionDecision": "deny"\'\n'
    command = script(tmp_path, "broken.sh", body)
    hooks = Hooks(parse_hooks(command_hooks("PreToolUse", command)), project_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="agentscope_teams.hooks"):
        outcome = await hooks.fire("PreToolUse", {"tool_name": "Write", "tool_input": {}})
    assert outcome.permission is None
    assert outcome.errors and "broken.sh" in outcome.errors[0] and "JSON" in outcome.errors[0]
    assert any("broken.sh" in r.getMessage() for r in caplog.records)


def _deploy_tool(calls: list[str]) -> Tool:
    @tool(requires_confirmation=True)
    async def deploy(target: str) -> str:
        """Deploy.

        Args:
            target: where
        """
        calls.append(target)
        return "deployed"

    return deploy


@pytest.mark.parametrize("answer", ["exit2", "allow", "deny"])
async def test_permission_request_hook_answers_the_prompt(tmp_path: Path, answer: str) -> None:
    """A call that would ask the user: a PermissionRequest hook's exit 2 denies it with stderr
    (Claude Code: "denies the permission"), ``decision.behavior`` allows or denies it."""
    if answer == "exit2":
        body = "echo 'deploys need a ticket' >&2\nexit 2\n"
    else:
        verdict = {"behavior": answer, "message": "deploys need a ticket"}
        out = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": verdict}}
        body = f"echo '{json.dumps(out)}'\n"
    command = script(tmp_path, "perm.sh", body)
    calls: list[str] = []
    model = ScriptedModel([ScriptedModel.tool_call("deploy", {"target": "prod"}), "done"])
    hooks = command_hooks("PermissionRequest", command, "deploy")
    events = []
    async with agent(tmp_path, model, tools=[_deploy_tool(calls)], hooks=hooks) as a:
        async for ev in a.stream("go", CTX):
            events.append(ev)
    assert not any(isinstance(e, RequireUserConfirmEvent) for e in events)
    if answer == "allow":
        assert calls == ["prod"]
    else:
        assert calls == []
        assert "deploys need a ticket" in tool_results(model.requests[1])[0]


def test_a_command_without_timeout_gets_claude_codes_ten_minutes() -> None:
    """Claude Code waits 600 s for a command hook by default; at 60 s a slow guard (tests run by
    a Stop or PreToolUse hook) was killed and its block lost."""
    config = {"Stop": [{"hooks": [{"type": "command", "command": "./run-tests.sh"}]}]}
    assert parse_hooks(config)["Stop"][0].timeout == 600


async def test_system_message_and_a_failing_hook_reach_the_event_stream(tmp_path: Path) -> None:
    """``systemMessage`` is Claude Code's warning to the user, and a hook that fails (exit 1, a
    missing program) is shown to the user too: both come out as hint events of the reply."""
    warn = script(tmp_path, "warn.sh", 'echo \'{"systemMessage": "writes are audited"}\'\n')
    broken = script(tmp_path, "broken.sh", "echo 'jq: command not found' >&2\nexit 127\n")
    prompt = script(tmp_path, "prompt.sh", 'echo \'{"systemMessage": "prompt logged"}\'\n')
    hooks = {
        "PreToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": c}]}
            for c in (warn, broken)
        ],
        **command_hooks("UserPromptSubmit", prompt),
    }
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=hooks) as a:
        hints = [e.text async for e in a.stream("write it", CTX) if isinstance(e, HintEvent)]
    assert (tmp_path / "ws" / "a.txt").exists()  # a failing hook does not block, as Claude Code
    assert any("prompt logged" in h for h in hints)
    assert any("writes are audited" in h for h in hints)
    assert any("broken.sh" in h and "127" in h and "jq: command not found" in h for h in hints)


async def test_subagent_stop_continue_false_wins_over_block(tmp_path: Path) -> None:
    """Claude Code: ``continue: false`` takes precedence over ``decision: "block"``; the
    subagent stops instead of being sent back to work."""
    out = {"decision": "block", "reason": "add more", "continue": False, "stopReason": "enough"}
    gate = script(tmp_path, "gate.sh", f"echo '{json.dumps(out)}'\n")
    child = ScriptedModel(["draft", "draft plus more"])
    hooks = {"SubagentStop": [{"hooks": [{"type": "command", "command": gate}]}]}
    store = InMemoryStore()
    lead = parent(tmp_path, store, [spawn("rev", "work"), "done"], child, hooks=hooks)
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    assert len(child.requests) == 1
    assert rec.result == "draft"


def _notify_project(root: Path) -> Path:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "a.md").write_text("---\nname: a\ndescription: A.\n---\nBody.\n")
    notify = [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send Claude"}]}]
    guard = [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
    settings = {"hooks": {"Notification": notify, "PreToolUse": guard}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    return agents


@pytest.mark.parametrize("trusted", [True, False])
def test_a_claude_code_event_that_never_happens_here_does_not_stop_the_project(
    tmp_path: Path, trusted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A settings.json with a ``Notification`` hook (common in Claude Code projects) made the
    agent refuse to start; now that hook is left out with a warning naming file and event."""
    agents = _notify_project(tmp_path)
    with caplog.at_level(logging.WARNING, logger="agentscope_teams.hooks"):
        lead = HarnessAgent(
            "lead", ScriptedModel(["x"]), "sys", specs=agents, store=InMemoryStore(),
            workspace=tmp_path / "ws", trust_project=trusted,
        )  # fmt: skip
    assert set(lead.hooks.by_event) == ({"PreToolUse"} if trusted else set())
    warned = [r.getMessage() for r in caplog.records]
    assert any("settings.json" in m and "Notification" in m for m in warned)


def test_a_misspelt_event_is_still_an_error(tmp_path: Path) -> None:
    config = {"PreTooluse": [{"hooks": [{"type": "command", "command": "x"}]}]}
    with pytest.raises(ConfigurationError, match="PreTooluse"):
        parse_hooks(config, tmp_path / "settings.json")


def test_strict_check_flags_a_spec_hook_on_an_event_that_never_happens(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    path.write_text(
        "---\ndescription: N.\nhooks:\n  Notification:\n    - hooks:\n"
        "        - type: command\n          command: notify-send hi\n---\nBody.\n"
    )
    spec = SubagentSpec.from_file(path)
    [problem] = spec_problems(spec, None)
    assert problem.line == 3 and "Notification" in problem.reason


async def test_a_hook_sees_absolute_file_paths_as_in_claude_code(tmp_path: Path) -> None:
    """Claude Code's ``file_path`` is absolute; a guard comparing it with the project folder
    (``cwd``) missed a relative one and let the write through."""
    body = (
        "import json, os, sys\nd = json.load(sys.stdin)\n"
        "p = d['tool_input']['file_path']\n"
        "if os.path.isabs(p) and p.startswith(os.path.join(d['cwd'], 'secrets') + os.sep):\n"
        "    print('no writes to secrets', file=sys.stderr); sys.exit(2)\n"
    )
    guard = script(tmp_path, "guard.py", body, python=True)
    write = ScriptedModel.tool_call("write_file", {"path": "secrets/key", "content": "x"})
    model = ScriptedModel([write, "done"])
    async with agent(tmp_path, model, hooks=command_hooks("PreToolUse", guard, "Write")) as a:
        await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "secrets" / "key").exists()
    assert tool_results(model.requests[1]) == ["no writes to secrets"]


async def test_pre_tool_use_additional_context_reaches_the_model(tmp_path: Path) -> None:
    """Claude Code adds a PreToolUse ``additionalContext`` for the model; it was dropped."""
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "a.txt is generated: edit a.in instead",
        }
    }
    command = script(tmp_path, "ctx.sh", f"echo '{json.dumps(out)}'\n")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=command_hooks("PreToolUse", command, "Write")) as a:
        await a.call("write it", CTX)
    assert (tmp_path / "ws" / "a.txt").exists()
    [result] = tool_results(model.requests[1])
    assert "a.txt is generated: edit a.in instead" in result


async def test_session_start_compact_restores_hook_context_after_compression(
    tmp_path: Path,
) -> None:
    """Compression summarizes the oldest messages, SessionStart's context among them; Claude Code
    fires SessionStart again with ``source: compact`` so hooks put it back."""
    log = tmp_path / "sources"
    body = (
        "import json, sys\nd = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(d['source'] + '\\n')\nprint('rules: be brief')\n"
    )
    hooks = Hooks(
        parse_hooks(command_hooks("SessionStart", script(tmp_path, "s.py", body, python=True))),
        project_dir=tmp_path,
    )
    seen: list[ModelRequest] = []

    def brain(req: ModelRequest) -> str:
        seen.append(req)
        return "a summary" if req.metadata.get("purpose") == "compression" else "fine"

    cc = CompressionConfig(trigger_tokens=100, keep_recent_tokens=0)
    bot = ReActAgent("bot", ScriptedModel(brain), config=ReActConfig(compression=cc))
    state = AgentState(
        session_id="s",
        context=[UserMsg("rules: be brief", name="hook"), UserMsg("w" * 800), AssistantMsg("ok")],
    )
    await bot.reply("more", state, ReplyOptions(hooks=hooks))
    assert state.summary  # compressed
    answer = next(r for r in seen if r.metadata.get("purpose") != "compression")
    texts = [m.get_text_content() for m in answer.messages]
    assert "rules: be brief" in texts
    assert log.read_text().split() == ["compact"]


@pytest.mark.parametrize("where", ["settings.json", "settings.local.json"])
def test_disable_all_hooks_turns_the_project_hooks_off(tmp_path: Path, where: str) -> None:
    """Claude Code's ``disableAllHooks: true`` (often in the uncommitted settings.local.json)
    turns the project's hooks off; they ran anyway."""
    claude = tmp_path / ".claude"
    claude.mkdir()
    hook = [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
    (claude / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": hook}}))
    off = claude / where
    off.write_text(json.dumps({**json.loads(off.read_text() if off.exists() else "{}"),
                               "disableAllHooks": True}))  # fmt: skip
    assert settings_hooks(tmp_path) == {}
    off.write_text(json.dumps({"hooks": {"PreToolUse": hook}}))  # control: without it they load
    assert set(settings_hooks(tmp_path)) == {"PreToolUse"}


async def test_a_subagent_stopped_by_its_stop_hook_tells_the_parent_why(tmp_path: Path) -> None:
    """``continue: false`` on SubagentStop ends the run; its ``stopReason`` reached no one. The
    parent's tool result (and the run's record) now say a hook stopped the child, and why."""
    out = {"continue": False, "stopReason": "coverage gate failed"}
    gate = script(tmp_path, "gate.sh", f"echo '{json.dumps(out)}'\n")
    hooks = {"SubagentStop": [{"hooks": [{"type": "command", "command": gate}]}]}
    store = InMemoryStore()
    model = ScriptedModel([spawn("rev", "work"), "done"], name="lead")
    lead = parent(tmp_path, store, model, ScriptedModel(["draft"]), hooks=hooks)
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    assert rec.result == "draft"
    assert rec.hook_stop == "coverage gate failed"
    [seen] = tool_results(model.requests[1])
    assert "draft" in seen
    assert "stopped by a SubagentStop hook: coverage gate failed" in seen
