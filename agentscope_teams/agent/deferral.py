"""Tool calls a PreToolUse hook deferred (``permissionDecision: "defer"``), as in Claude Code's
headless runs: the reply stops with them pending (not run, not denied, no result in the context);
the next call on the session resumes them.

- **Stop**: the step's other calls are decided and run as usual and their results saved; the
  deferred calls (and the step's asked calls, which wait with them) are kept in
  ``state.deferred_tool_calls``. The reply ends with a :class:`ToolDeferredEvent` and a final
  message whose metadata says ``stop_reason: "tool_deferred"`` and lists the calls
  (``deferred_tool_calls``: id, name, input, and the hook's ``permissionDecisionReason`` as
  ``reason``), as Claude Code's result does (``deferred_tool_use``). :func:`deferred_calls` is
  that list, read from a state: what every surface (A2A, MCP, the dashboard) shows.
  The model is not called again until every call of the step has a result.
- **Resume**: any next call on the session (``agent.call(None, ctx)``; ``agentscope-teams run
  --session ID`` without a prompt) first runs the held calls' PreToolUse hooks again: allow runs
  the call, deny gives the model a tool error, defer stops again. A new message given with it is
  added after their results; if they are deferred again it is not added (the final message says
  ``input_not_added``). A ``UserInterruptEvent`` closes them as interrupted instead.

Claude Code ignores ``defer`` when the model made several calls in one turn (resume re-runs only
one); here the other calls run and only the deferred ones wait, so a batch loses nothing.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from ..message import AssistantMsg, Msg, ToolUseBlock
from ..state import AgentState

STOP_REASON = "stop_reason"
"""Metadata key of a final message that ended for another reason than an answer."""

TOOL_DEFERRED = "tool_deferred"
"""The :data:`STOP_REASON` of a reply stopped by a PreToolUse ``defer`` (Claude Code's value)."""

DEFERRED_TOOL_CALLS = "deferred_tool_calls"
"""Metadata key of the deferred calls (``id``, ``name``, ``input``) of such a final message."""

INPUT_NOT_ADDED = "input_not_added"
"""Metadata key (True) of such a final message when the call brought a new message that was not
added to the context, because the calls before it are still deferred: send it again later."""


def held_calls(state: AgentState) -> list[ToolUseBlock]:
    """The deferred calls of ``state`` still without a result, in call order."""
    held = set(state.deferred_tool_calls)
    return [c for c in state.awaiting_tool_calls() if c.id in held] if held else []


class DeferredCall(BaseModel):
    """A tool call a PreToolUse hook deferred: ``reason`` is the hook's
    ``permissionDecisionReason`` ("" when it gave none, or for a call of the same turn that
    waits with it to ask the user)."""

    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""

    def summary(self, width: int = 300) -> str:
        """``name {input as JSON, cut to width} (reason: ...)``, for a person or a client."""
        args = json.dumps(self.input, ensure_ascii=False, default=str)
        args = args if len(args) <= width else args[:width] + "..."
        return f"{self.name} {args}" + (f" (reason: {self.reason})" if self.reason else "")

    def label(self) -> str:
        """``name (id): reason``, for a line of text."""
        return f"{self.name} ({self.id})" + (f": {self.reason}" if self.reason else "")


def deferred_calls(state: AgentState) -> list[DeferredCall]:
    """The calls of ``state`` a hook deferred, still without a result, with the hooks' reasons."""
    why = state.deferred_reasons
    return [
        DeferredCall(id=c.id, name=c.name, input=c.input, reason=why.get(c.id, ""))
        for c in held_calls(state)
    ]


def calls_in(msg: Msg) -> list[DeferredCall]:
    """The deferred calls a stopped reply's final message ``msg`` lists (:func:`stopped_msg`)."""
    return [DeferredCall.model_validate(c) for c in msg.metadata.get(DEFERRED_TOOL_CALLS, [])]


def stopped_msg(state: AgentState, agent: str, dropped: bool) -> Msg:
    """The final message of a reply stopped by its deferred calls (``dropped``: the call's new
    message was not added). It is not added to the context: the model never reads it."""
    calls = deferred_calls(state)
    names = "; ".join(c.label() for c in calls)
    text = (
        f"Stopped: a PreToolUse hook deferred {names}; it did not run. Call this session again "
        "(no new message needed) to run its PreToolUse hooks again and go on."
    )
    metadata: dict[str, Any] = {
        "reply_id": state.reply_id,
        STOP_REASON: TOOL_DEFERRED,
        DEFERRED_TOOL_CALLS: [c.model_dump(mode="json") for c in calls],
    }
    if dropped:
        text += " Your new message was not added; send it again once the call is decided."
        metadata[INPUT_NOT_ADDED] = True
    return AssistantMsg(text, name=agent, metadata=metadata)
