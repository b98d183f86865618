"""PreToolUse ``permissionDecision: "defer"``: the reply stops with the call pending (not run, not
denied); the next call on the session runs the call's PreToolUse hooks again and goes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams.errors import HITLError
from agentscope_teams.events import (
    ConfirmResult,
    RequireUserConfirmEvent,
    ToolDeferredEvent,
    ToolResultEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope_teams.hooks.outcome import HookOutcome, from_json
from agentscope_teams.model import ScriptedModel
from agentscope_teams.subagents import SubagentSpec
from agentscope_teams.tools import tool

from .helpers import CTX, agent, read_lines, script, tool_results

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})
PAIR = ScriptedModel.tool_calls(
    [("list_files", {"path": "."}), ("write_file", {"path": "a.txt", "content": "x"})]
)

#: A hook answering what the file ``decision`` says (defer / allow / deny / ask / stop), logging
#: each call it saw (tool name and id) to ``seen.jsonl``.
DECIDER = """\
import json, pathlib, sys
here = pathlib.Path(__file__).parent
d = json.load(sys.stdin)
with open(here / "seen.jsonl", "a") as f:
    f.write(json.dumps({"tool": d["tool_name"], "id": d["tool_use_id"]}) + "\\n")
decision = (here / "decision").read_text().strip()
if d["tool_name"] != "Write":
    sys.exit(0)
if decision == "stop":
    print(json.dumps({"continue": False, "stopReason": "halt",
                      "hookSpecificOutput": {"permissionDecision": "defer"}}))
else:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                      "permissionDecision": decision,
                      "permissionDecisionReason": "policy: " + decision}}))
"""


def _hooks(tmp_path: Path, *more: str) -> dict:
    commands = [script(tmp_path, "decide.py", DECIDER, python=True), *more]
    return {
        "PreToolUse": [
            {"matcher": "", "hooks": [{"type": "command", "command": c} for c in commands]}
        ]
    }


def _decide(tmp_path: Path, decision: str) -> None:
    (tmp_path / "decision").write_text(decision)


def _answer(tmp_path: Path, name: str, decision: str) -> str:
    """A second hook that always answers ``decision`` for Write."""
    out = {"hookSpecificOutput": {"permissionDecision": decision}}
    body = (
        "import json, sys\nd = json.load(sys.stdin)\n"
        f"print({json.dumps(json.dumps(out))} if d['tool_name'] == 'Write' else '')\n"
    )
    return script(tmp_path, name, body, python=True)


def _written(tmp_path: Path) -> bool:
    return (tmp_path / "ws" / "a.txt").exists()


def _wrote(results: list[str]) -> bool:
    """The model read one result, of the write (its summary names the file and its size)."""
    return len(results) == 1 and "a.txt" in results[0] and "bytes" in results[0]


def _seen_writes(tmp_path: Path) -> list[str]:
    return [s["id"] for s in read_lines(tmp_path / "seen.jsonl") if s["tool"] == "Write"]


async def test_defer_stops_with_the_call_pending_and_the_resume_asks_the_hook_again(
    tmp_path: Path,
) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        events = [e async for e in a.stream("write it", CTX)]
        assert not _written(tmp_path)
        assert len(model.requests) == 1  # the model is not asked again: the reply stopped
        [deferred] = [e for e in events if isinstance(e, ToolDeferredEvent)]
        [call] = deferred.tool_calls
        assert call.name == "write_file" and deferred.session_id == CTX.session_id
        final = events[-1].msg  # type: ignore[union-attr]
        assert final.metadata["stop_reason"] == "tool_deferred"
        assert "input_not_added" not in final.metadata  # "write it" is in the context
        assert [d["id"] for d in final.metadata["deferred_tool_calls"]] == [call.id]
        # why: the hook's permissionDecisionReason, in the event, the message and the state
        assert deferred.reasons == {call.id: "policy: defer"}
        assert final.metadata["deferred_tool_calls"][0]["reason"] == "policy: defer"
        assert "write_file (" in final.get_text_content()
        assert "policy: defer" in final.get_text_content()
        assert not any(isinstance(e, ToolResultEvent) for e in events)  # not run, not denied
        state = await a.get_agent_state(CTX)
        assert [c.id for c in state.awaiting_tool_calls()] == [call.id]  # kept, no result
        assert state.deferred_tool_calls == [call.id]
        assert state.deferred_reasons == {call.id: "policy: defer"}

        _decide(tmp_path, "allow")
        msg = await a.call(None, CTX)  # the resume
        assert msg.get_text_content() == "done"
        state = await a.get_agent_state(CTX)
        assert not state.deferred_tool_calls and not state.deferred_reasons  # forgotten
    assert _written(tmp_path)
    assert _seen_writes(tmp_path) == [call.id, call.id]  # the hook ran again for the same call
    assert _wrote(tool_results(model.requests[1]))


async def test_a_deny_on_resume_is_a_tool_error_for_the_model(tmp_path: Path) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "understood"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        await a.call("write it", CTX)
        _decide(tmp_path, "deny")
        msg = await a.call(None, CTX)
        state = await a.get_agent_state(CTX)
    assert msg.get_text_content() == "understood"
    assert not _written(tmp_path)
    assert tool_results(model.requests[1]) == ["policy: deny"]
    assert state.deferred_tool_calls == [] and not state.awaiting_tool_calls()


async def test_defer_again_stops_again_until_the_hook_decides(tmp_path: Path) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        await a.call("write it", CTX)
        again = await a.call(None, CTX)
        assert again.metadata["stop_reason"] == "tool_deferred"
        assert len(model.requests) == 1 and not _written(tmp_path)
        _decide(tmp_path, "allow")
        done = await a.call(None, CTX)
    assert done.get_text_content() == "done" and _written(tmp_path)
    assert len(_seen_writes(tmp_path)) == 3


async def test_deny_beats_defer_and_defer_beats_ask_and_allow(tmp_path: Path) -> None:
    assert _combined("defer", "deny") == "deny"
    assert _combined("ask", "defer") == "defer"
    assert _combined("defer", "allow") == "defer"
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "ok"])
    hooks = _hooks(tmp_path, _answer(tmp_path, "deny.py", "deny"))
    async with agent(tmp_path, model, hooks=hooks) as a:  # a real second hook denies
        msg = await a.call("write it", CTX)
    assert msg.get_text_content() == "ok" and not _written(tmp_path)
    assert "stop_reason" not in msg.metadata


def _combined(*decisions: str) -> str | None:
    out = HookOutcome()
    for d in decisions:
        out.add(from_json("PreToolUse", {"hookSpecificOutput": {"permissionDecision": d}}))
    return out.permission


async def test_continue_false_wins_over_defer(tmp_path: Path) -> None:
    _decide(tmp_path, "stop")
    model = ScriptedModel([WRITE, "never"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        msg = await a.call("write it", CTX)
        state = await a.get_agent_state(CTX)
    assert "halt" in msg.get_text_content() and "stop_reason" not in msg.metadata
    assert state.deferred_tool_calls == [] and not state.awaiting_tool_calls()
    assert not _written(tmp_path)


async def test_the_other_calls_of_the_turn_run_and_the_model_waits_for_the_deferred_one(
    tmp_path: Path,
) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([PAIR, "done"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        events = [e async for e in a.stream("look and write", CTX)]
        ran = [e.result.name for e in events if isinstance(e, ToolResultEvent)]
        assert ran == ["list_files"]  # the sibling ran; the deferred call did not
        assert len(model.requests) == 1
        _decide(tmp_path, "allow")
        await a.call(None, CTX)
    seen = [s["tool"] for s in read_lines(tmp_path / "seen.jsonl")]
    assert seen == ["LS", "Write", "Write"]  # the sibling's hook is not run again
    results = tool_results(model.requests[1])
    assert len(results) == 2 and _wrote(results[1:])


async def test_a_new_message_resumes_the_deferred_call_first(tmp_path: Path) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        await a.call("write it", CTX)
        _decide(tmp_path, "allow")
        await a.call("and then stop", CTX)
    assert _written(tmp_path)
    last = model.requests[1].messages
    texts = [m.get_text_content() for m in last]
    assert texts[-1] == "and then stop"  # after the call's result, which the model reads
    assert _wrote(tool_results(model.requests[1]))


async def test_a_new_message_is_not_added_while_the_call_stays_deferred(tmp_path: Path) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        await a.call("write it", CTX)
        again = await a.call("hurry", CTX)
        assert again.metadata["stop_reason"] == "tool_deferred"
        assert again.metadata["input_not_added"] is True
        state = await a.get_agent_state(CTX)
        assert "hurry" not in [m.get_text_content() for m in state.context]


async def test_an_interrupt_closes_the_deferred_call(tmp_path: Path) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "next answer"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        first = await a.call("write it", CTX)
        await a.call(UserInterruptEvent(reply_id=first.metadata["reply_id"]), CTX)
        state = await a.get_agent_state(CTX)
        assert state.deferred_tool_calls == [] and not state.awaiting_tool_calls()
        await a.call("something else", CTX)
    assert len(_seen_writes(tmp_path)) == 1  # the interrupted call was not asked about again
    assert not _written(tmp_path)


async def test_an_asked_call_of_the_same_turn_waits_with_the_deferred_one(tmp_path: Path) -> None:
    @tool(requires_confirmation=True)
    async def deploy(target: str) -> str:
        """Deploy.

        Args:
            target: where
        """
        return "deployed"

    _decide(tmp_path, "defer")
    both = ScriptedModel.tool_calls(
        [("deploy", {"target": "prod"}), ("write_file", {"path": "a.txt", "content": "x"})]
    )
    model = ScriptedModel([both, "done"])
    async with agent(tmp_path, model, tools=[deploy], hooks=_hooks(tmp_path)) as a:
        events = [e async for e in a.stream("go", CTX)]
        [deferred] = [e for e in events if isinstance(e, ToolDeferredEvent)]
        assert [c.name for c in deferred.tool_calls] == ["deploy", "write_file"]
        assert not any(isinstance(e, RequireUserConfirmEvent) for e in events)
        _decide(tmp_path, "allow")
        events = [e async for e in a.stream(None, CTX)]
    [asked] = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
    assert [c.name for c in asked.tool_calls] == ["deploy"]  # asked now, once the hook decided
    assert _written(tmp_path)


async def test_a_subagents_deferred_call_is_an_error_its_parent_reads(tmp_path: Path) -> None:
    """Nobody resumes a subagent's reply: its deferred call ends the run with an error that says
    so, instead of a run that waits forever or an answer from a reply that never finished."""
    _decide(tmp_path, "defer")
    spec = SubagentSpec(name="writer", description="Writes.", model="writer")
    lead_model = ScriptedModel(
        [ScriptedModel.tool_call("agent_spawn", {"agent": "writer", "task": "go"}), "noted"]
    )
    child_model = ScriptedModel([WRITE, "written"])
    async with agent(
        tmp_path,
        lead_model,
        specs=[spec],
        models={"writer": child_model},
        hooks=_hooks(tmp_path),
    ) as a:
        await a.call("delegate", CTX)
    assert not _written(tmp_path) and len(child_model.requests) == 1
    [result] = tool_results(lead_model.requests[1])
    assert "deferred its tool call" in result and "nobody resumes" in result, result


async def test_a_confirmation_sent_to_a_deferred_session_says_how_to_resume(
    tmp_path: Path,
) -> None:
    _decide(tmp_path, "defer")
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path)) as a:
        first = await a.call("write it", CTX)
        [held] = first.metadata["deferred_tool_calls"]
        answer = ConfirmResult(tool_call_id=held["id"], confirmed=True)
        with pytest.raises(HITLError, match="deferred") as caught:
            await a.call(UserConfirmResultEvent(reply_id=first.metadata["reply_id"],
                                                results=[answer]), CTX)  # fmt: skip
        assert caught.value.tool_call_id == held["id"]
    assert not _written(tmp_path)  # a confirmation cannot run a call a hook deferred
