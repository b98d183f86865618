"""``Hooks``: the hooks an agent runs, and :meth:`Hooks.fire` to run those of one event."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from ..model.base import ChatModel
from ..tools import Tool
from ..tools.claude_code import claude_name_of, to_claude_input
from ..tools.modes import claude_name
from ..tracing import hook_denial
from ..trust import project_root
from .background import current_background, unheeded
from .command import run_command
from .condition import condition_holds, names_an_offered_tool
from .config import GUARD_EVENTS, Hook, HookMap, merged
from .http import run_http
from .mcp_tool import McpServers, run_mcp_tool
from .outcome import HookOutcome, cannot_answer, failed, from_command, from_json
from .policy import HookPolicy
from .prompt import AgentRunner, JudgeModels, judge

__all__ = ["Hooks", "claude_mode", "tool_payload"]

log = logging.getLogger(__name__)

_MATCH_FIELD = {
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompact": "trigger",
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
}


def claude_mode(mode: str) -> str:
    """Claude Code's name of our permission mode (``accept_edits`` -> ``acceptEdits``)."""
    return claude_name(mode)


class Hooks:
    """The hooks of an agent by event. ``project_dir`` (default: the current directory, where
    Claude Code would have been started) is the cwd and ``CLAUDE_PROJECT_DIR`` of hooks given in
    code; a file's hooks use the root of their own project. ``policy`` is what the settings allow
    hooks (:mod:`.policy`: the URLs an http hook may call, the variables its headers may use)."""

    def __init__(
        self,
        hooks: HookMap | None = None,
        *,
        project_dir: Path | str | None = None,
        policy: HookPolicy | None = None,
    ):
        self.by_event: HookMap = dict(hooks or {})
        self.project_dir = Path(project_dir).resolve() if project_dir is not None else Path.cwd()
        self.policy = policy or HookPolicy()
        #: The models prompt and agent hooks name, each built at its first use (shared by copies).
        self.judges: JudgeModels = {}
        #: Whether a hook runs in the background (``async: true``): an agent call then keeps
        #: the hooks it starts (:class:`~.background.BackgroundHooks`).
        self.has_background = any(h.background for hs in self.by_event.values() for h in hs)

    def __bool__(self) -> bool:
        return any(self.by_event.values())

    def with_hooks(self, more: HookMap) -> Hooks:
        """A copy with ``more`` added (a subagent's own spec hooks)."""
        copy = Hooks(merged(self.by_event, more), project_dir=self.project_dir, policy=self.policy)
        copy.judges = self.judges
        return copy

    def matching(self, event: str, payload: Mapping[str, Any]) -> list[Hook]:
        """The hooks of ``event`` whose matcher selects ``payload`` (tool events match the
        Claude Code tool name, or our own name for a tool that has none)."""
        hooks = self.by_event.get(event, [])
        if "tool_name" in payload:
            ours = str(payload.get("_native") or payload["tool_name"])
            return [
                h
                for h in hooks
                if h.matches(str(payload["tool_name"]), ours)
                and (
                    h.rule is None or condition_holds(h.rule, payload) or _fails_closed(h, payload)
                )
            ]
        field = _MATCH_FIELD.get(event)
        if field is None:  # Claude Code ignores the matcher of an event that has nothing to match
            return list(hooks)
        target = str(payload.get(field) or "")
        return [h for h in hooks if h.matches(target)]

    def _distinct(self, hooks: list[Hook]) -> list[Hook]:
        """``hooks`` without repeats of a command (run in the same folder), as Claude Code runs
        identical commands once; the first one's timeout counts."""
        seen: set[tuple[str, str, Path]] = set()
        kept: list[Hook] = []
        for hook in hooks:
            what = hook.command if hook.kind == "command" else hook.url
            if what is not None:  # a command per folder, an http hook per URL
                key = (hook.kind, what, self._root(hook))
                if key in seen:
                    continue
                seen.add(key)
            kept.append(hook)
        return kept

    def _root(self, hook: Hook) -> Path:
        """The cwd and ``CLAUDE_PROJECT_DIR`` of a command hook."""
        return project_root(hook.source) if hook.source is not None else self.project_dir

    async def fire(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        model: ChatModel | None = None,
        agent_runner: AgentRunner | None = None,
        servers: McpServers | None = None,
    ) -> HookOutcome:
        """Run every matching hook of ``event`` at once (an identical command once) with
        ``payload`` (``hook_event_name`` is added); returns their combined outcome (empty if none
        matched). ``model`` (the agent's) judges prompt and agent hooks that name none;
        ``agent_runner`` runs agent hooks' verifiers (without it they are not run, see
        :func:`_not_run`); ``servers`` are the MCP servers of the agent firing the event, which
        mcp_tool hooks call (without them: not connected, see :mod:`.mcp_tool`)."""
        judges = (model, agent_runner, servers)
        outcome = HookOutcome()
        hooks = self._distinct(self.matching(event, payload))
        if not hooks:
            return outcome
        sent = {k: v for k, v in payload.items() if not k.startswith("_")}
        sent["hook_event_name"] = event
        answers: list[HookOutcome | None] = [None] * len(hooks)

        async def one(i: int, hook: Hook) -> None:
            refused = _unknown_if(hook) if _fails_closed(hook, payload) else None
            answer = answers[i] = refused or await self._run(hook, dict(sent), *judges)
            if answer.blocked or answer.permission == "deny":
                answer.blocked_by.append(hook.label)

        async with anyio.create_task_group() as tg:
            for i, hook in enumerate(hooks):
                tg.start_soon(one, i, hook)
        for answer in answers:
            if answer is not None:
                outcome.add(answer)
        if outcome.blocked or outcome.permission == "deny":
            hook_denial(event)
        return outcome

    async def _run(
        self,
        hook: Hook,
        payload: dict[str, Any],
        model: ChatModel | None,
        agent_runner: AgentRunner | None,
        servers: McpServers | None,
    ) -> HookOutcome:
        if hook.status_message:  # what Claude Code's spinner shows while it runs
            log.info("hook %s: %s", hook.label, hook.status_message)
        if hook.background and hook.command is not None:
            return await self._background(hook, payload)
        if hook.kind == "command" and hook.command is not None:
            result = await run_command(
                hook.command, payload, seconds=hook.timeout, project_dir=self._root(hook)
            )
            return from_command(hook.event, hook.label, result)
        if hook.kind == "http":  # unless the settings keep it from its URL (fail closed)
            refused = self.policy.refusal(hook)
            return refused or await run_http(hook, payload, self.policy.env_for(hook))
        if hook.kind == "mcp_tool":
            return await run_mcp_tool(hook, payload, servers)
        if hook.kind == "prompt" or (hook.kind == "agent" and agent_runner is not None):
            return await judge(hook, payload, model, agent_runner, self.judges)
        if hook.kind != "function":
            return _not_run(hook)
        return await _call(hook, payload)

    async def _background(self, hook: Hook, payload: dict[str, Any]) -> HookOutcome:
        """An ``async: true`` command: started in the agent call's background hooks, not waited
        for; fired outside a call, run here, its decisions unheeded (:mod:`.background`)."""
        assert hook.command is not None
        running = current_background()
        if running is not None:
            await running.start(hook, payload, self._root(hook))
            return HookOutcome()
        result = await run_command(
            hook.command, payload, seconds=hook.timeout, project_dir=self._root(hook)
        )
        answer = unheeded(hook, from_command(hook.event, hook.label, result))
        for label, text in answer.wakes:  # no call, so no session to keep the wake for
            log.warning("hook %s exited 2 where no agent call is open; nothing to wake: %s",
                        label, text)  # fmt: skip
        return answer


def _not_run(hook: Hook) -> HookOutcome:
    """A hook that cannot run (``agent`` where no agent fires the event): on a guard event it
    denies, so a guard never silently lets calls through; elsewhere a non-blocking error."""
    return cannot_answer(
        hook,
        f"was not run: hooks of type {hook.kind} do not run where no agent fires the event",
        "ask the operator to replace it with a command, http or prompt hook",
    )


def _fails_closed(hook: Hook, payload: Mapping[str, Any]) -> bool:
    """Whether a guard's ``if`` names no tool (a typo; :func:`~.condition.unknown_tool`) and no
    tool the agent has either: then it denies instead of never running."""
    return (
        hook.unknown_tool is not None
        and hook.rule is not None
        and hook.event in GUARD_EVENTS
        and not names_an_offered_tool(hook.rule, payload)
    )


def _unknown_if(hook: Hook) -> HookOutcome:
    """The denial of a guard whose ``if`` names no tool (:func:`_fails_closed`)."""
    where = str(hook.source) if hook.source is not None else "the hooks given in code"
    return cannot_answer(
        hook,
        f"cannot run: its if {hook.condition!r} (in {where}) names no tool: {hook.unknown_tool}",
        "ask the operator to fix the if",
    )


async def _call(hook: Hook, payload: dict[str, Any]) -> HookOutcome:
    """A Python hook's answer."""
    assert hook.function is not None
    try:
        if inspect.iscoroutinefunction(hook.function):
            answer = await hook.function(payload)
        else:
            answer = await anyio.to_thread.run_sync(hook.function, payload)
            if inspect.isawaitable(answer):
                answer = await answer
    except Exception as exc:  # a failing hook is a non-blocking error, as a failing command
        return failed(hook.label, f"raised {type(exc).__name__}: {exc}")
    return from_json(hook.event, answer) if isinstance(answer, dict) else HookOutcome()


_ABSOLUTE = ("file_path", "notebook_path")
"""Claude Code input fields that always hold an absolute path."""


def tool_payload(
    native: str,
    arguments: Mapping[str, Any],
    workspace: Path | None = None,
    tool: Tool | None = None,
    offered: Callable[[], Sequence[Tool]] | None = None,
) -> dict[str, Any]:
    """``tool_name`` (Claude Code's name, or ours without one) and ``tool_input`` (Claude Code's
    field names) of one of our tool calls; a relative ``file_path`` is made absolute against
    ``workspace``, as Claude Code's always is (the tools take either). ``tool`` (the call's) and
    the call's own arguments ride along, unsent, for a hook's ``if`` (:mod:`.condition`), and so
    does ``offered``, which lists the agent's tools (called only for a guard whose ``if`` names
    a tool nobody knows: no list per call)."""
    tool_input = to_claude_input(native, arguments)
    for key in _ABSOLUTE:
        value = tool_input.get(key)
        if workspace is not None and isinstance(value, str) and value and not os.path.isabs(value):
            tool_input[key] = os.path.normpath(os.path.join(workspace, value))
    return {
        "tool_name": claude_name_of(native) or native,
        "tool_input": tool_input,
        "_native": native,
        "_tool": tool,
        "_arguments": dict(arguments),
        "_workspace": workspace,
        "_offered": offered,
    }
