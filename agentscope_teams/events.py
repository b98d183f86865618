"""Events: what ``reply_stream`` / ``HarnessAgent.stream`` yield, and the inputs that resume a pause.

Every event is a pydantic model with a ``type`` discriminator, so ``model_dump_json()`` gives a stable
machine-readable form (the CLI's ``--json``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .message import Msg, ToolResultBlock, ToolUseBlock
from .model.base import Usage


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    reply_id: str
    agent: str = ""


class ReplyStartEvent(_Event):
    type: Literal["reply_start"] = "reply_start"
    session_id: str = ""


class ReplyEndEvent(_Event):
    type: Literal["reply_end"] = "reply_end"
    msg: Msg


class ModelCallStartEvent(_Event):
    type: Literal["model_call_start"] = "model_call_start"
    iteration: int


class ModelCallEndEvent(_Event):
    type: Literal["model_call_end"] = "model_call_end"
    iteration: int
    usage: Usage = Field(default_factory=Usage)


class TextDeltaEvent(_Event):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    tool_call: ToolUseBlock


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    result: ToolResultBlock


class HintEvent(_Event):
    """Something the loop did on its own: injected notifications, recovered tool calls, compression."""

    type: Literal["hint"] = "hint"
    text: str


class RequireUserConfirmEvent(_Event):
    """The reply is paused until the user confirms or rejects these tool calls."""

    type: Literal["require_user_confirm"] = "require_user_confirm"
    tool_calls: list[ToolUseBlock]


class ToolDeferredEvent(_Event):
    """A PreToolUse hook deferred these tool calls (``permissionDecision: "defer"``): they did not
    run and have no result; the reply stopped. The next call on ``session_id`` (no new message
    needed: ``agent.call(None, ctx)``, ``agentscope-teams run --session ID``) runs their
    PreToolUse hooks again and goes on with what they decide. ``reasons``: the hooks'
    ``permissionDecisionReason`` by call id (a call whose hook gave none is not in it)."""

    type: Literal["tool_deferred"] = "tool_deferred"
    session_id: str
    tool_calls: list[ToolUseBlock]
    reasons: dict[str, str] = Field(default_factory=dict)


class ExceedMaxItersEvent(_Event):
    type: Literal["exceed_max_iters"] = "exceed_max_iters"
    max_iters: int


AgentEvent = Annotated[
    ReplyStartEvent
    | ReplyEndEvent
    | ModelCallStartEvent
    | ModelCallEndEvent
    | TextDeltaEvent
    | ToolCallEvent
    | ToolResultEvent
    | HintEvent
    | RequireUserConfirmEvent
    | ToolDeferredEvent
    | ExceedMaxItersEvent,
    Field(discriminator="type"),
]


class ConfirmResult(BaseModel):
    """The user's answer for one paused tool call.

    ``name`` / ``input`` may be echoed back for clarity, but must equal the paused call: a confirmation
    can never change what runs. ``remember`` stores an allow rule in ``state.permission_context``.
    ``answers`` answers a question the agent asked (``ask_user_question``: question -> answer); it
    becomes that call's result and is ignored for any other tool.
    """

    model_config = ConfigDict(extra="forbid")
    tool_call_id: str
    confirmed: bool
    remember: bool = False
    name: str | None = None
    input: dict[str, object] | None = None
    answers: dict[str, str] | None = None


class UserConfirmResultEvent(BaseModel):
    """Resume a paused reply with the user's decisions."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["user_confirm_result"] = "user_confirm_result"
    reply_id: str
    results: list[ConfirmResult]


class UserInterruptEvent(BaseModel):
    """Resolve every pending tool call as interrupted and leave the agent ready for new input."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["user_interrupt"] = "user_interrupt"
    reply_id: str


ReplyInput = str | Msg | list[Msg] | UserConfirmResultEvent | UserInterruptEvent | None
