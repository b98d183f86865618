"""``AgentState``: everything needed to resume an agent, persisted by the store after every call.

The agent objects hold no per-session state; a state is loaded, run and saved per (org, user, agent,
session). Records carry ``schema_version``; loading a newer version fails with ``SchemaVersionError``
instead of silently dropping fields.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import SchemaVersionError
from .message import Block, Msg, ToolResultBlock, ToolUseBlock, new_id
from .records import StoredRecord

STATE_SCHEMA_VERSION = 1

PermissionMode = Literal["default", "accept_edits", "plan", "bypass", "dont_ask"]


class PermissionRule(StoredRecord):
    """``allow`` / ``deny`` / ``ask`` for a tool name, optionally only when an argument matches a
    glob. Made by our code (from rule strings), stored in the state: a newer field is kept."""

    model_config = ConfigDict(frozen=True)
    tool: str
    behavior: Literal["allow", "deny", "ask"]
    pattern: str | None = None
    argument: str | None = None


class PermissionContext(BaseModel):
    """The permission mode and the rules the user accepted during HITL.

    ``mode`` overrides the agent's configured mode when it is not ``default``, or when
    ``mode_chosen`` says this session chose it (plan mode entered or left with ``enter_plan_mode``
    / an approved ``exit_plan_mode``), so leaving plan mode works on an agent configured for plan.
    """

    mode: PermissionMode = "default"
    rules: list[PermissionRule] = Field(default_factory=list)
    mode_chosen: bool = False


class ToolContext(BaseModel):
    """Tool-side memory: file-read cache (path -> content hash) and the active tool groups."""

    file_read_cache: dict[str, str] = Field(default_factory=dict)
    active_groups: list[str] = Field(default_factory=list)


class PlanTask(BaseModel):
    """One item of the session's task list (``todo_write``, Claude Code's ``TodoWrite``):
    ``title`` is its content, ``active_form`` how it reads while in progress ("Running tests")."""

    id: str = Field(default_factory=new_id)
    title: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    active_form: str = ""


class TasksContext(BaseModel):
    """The session's task list (the plan), written whole by ``todo_write``; kept by compression."""

    tasks: list[PlanTask] = Field(default_factory=list)


class UsageLedger(BaseModel):
    """Token usage the model reported for this session, and how large its last prompt was.

    ``prompt_tokens`` is the last response's reported input plus output tokens: the size of the
    context up to and including that response, whose last message (``prompt_messages`` messages in,
    id ``prompt_last_id``) anchors it. Compression budgets start from it and estimate only what came
    after; a context that changed below the anchor falls back to estimating everything.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    prompt_messages: int = 0
    prompt_last_id: str = ""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def record(self, input_tokens: int, output_tokens: int, context: list[Msg]) -> None:
        """Add one response's reported usage; ``context`` ends with that response."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.requests += 1
        if input_tokens > 0 and context:
            self.prompt_tokens = input_tokens + output_tokens
            self.prompt_messages = len(context)
            self.prompt_last_id = context[-1].id
        else:
            self.forget_prompt()

    def anchor_estimate(self, tokens: int, context: list[Msg]) -> None:
        """Anchor an estimated size (``tokens``) at ``context``'s last message, for a response
        whose model reported no usage: the next budget estimates only the messages after it."""
        if tokens > 0 and context:
            self.prompt_tokens = tokens
            self.prompt_messages = len(context)
            self.prompt_last_id = context[-1].id

    def forget_prompt(self) -> None:
        """Drop the anchor (the context was cut or cleared)."""
        self.prompt_tokens = self.prompt_messages = 0
        self.prompt_last_id = ""

    def anchor(self, context: list[Msg]) -> int:
        """How many leading messages of ``context`` ``prompt_tokens`` covers (0: none)."""
        n = self.prompt_messages
        if self.prompt_tokens <= 0 or not 0 < n <= len(context):
            return 0
        return n if context[n - 1].id == self.prompt_last_id else 0


def check_schema_version(data: Any, supported: int, what: str) -> Any:
    """Raise SchemaVersionError if a raw record says it is newer than ``supported``."""
    if isinstance(data, dict):
        found = data.get("schema_version", supported)
        if isinstance(found, int) and found > supported:
            raise SchemaVersionError(
                f"{what} has schema_version {found} but this agentscope-teams understands up to "
                f"{supported}; upgrade agentscope-teams to read it"
            )
    return data


def raise_if_newer(raw: str | bytes, checks: dict[str | None, tuple[int, str]]) -> None:
    """After a record failed validation: raise SchemaVersionError if it (``None``) or one of its
    top-level fields (by name) is a dict with a newer ``schema_version``. ``checks`` maps those to
    ``(supported, what)``; a record that is not JSON is left to the caller's error."""
    try:
        data = json.loads(raw)
    except ValueError:
        return
    if not isinstance(data, dict):
        return
    for field, (supported, what) in checks.items():
        check_schema_version(data if field is None else data.get(field), supported, what)


class AgentState(BaseModel):
    """The complete resumable state of one agent in one session."""

    schema_version: int = STATE_SCHEMA_VERSION
    session_id: str = ""
    summary: str = ""
    context: list[Msg] = Field(default_factory=list)
    reply_id: str = ""
    cur_iter: int = 0
    permission_context: PermissionContext = Field(default_factory=PermissionContext)
    tool_context: ToolContext = Field(default_factory=ToolContext)
    tasks_context: TasksContext = Field(default_factory=TasksContext)
    middle_context: dict[str, Any] = Field(default_factory=dict)
    #: Tool call ids the current reply is paused on, waiting for the user's confirmation.
    awaiting_confirmation: list[str] = Field(default_factory=list)
    #: Tool call ids a PreToolUse hook deferred: the reply stopped with them pending, and the next
    #: call on the session runs their PreToolUse hooks again before anything else.
    deferred_tool_calls: list[str] = Field(default_factory=list)
    #: Why the hook deferred them (its ``permissionDecisionReason``), by call id; only the calls
    #: of ``deferred_tool_calls`` count (read it with ``agent.deferral.deferred_calls``).
    deferred_reasons: dict[str, str] = Field(default_factory=dict)
    #: Token usage the model reported (totals and the last prompt's size).
    usage: UsageLedger = Field(default_factory=UsageLedger)
    #: W3C trace context of the span that paused for confirmation (the resume links to it).
    pause_trace: dict[str, str] | None = None

    @model_validator(mode="after")
    def _check_version(self) -> AgentState:
        # An after-validator keeps pydantic's fast JSON path (a before-validator would make it build
        # Python dicts of the whole record first). Unknown fields of a newer record are ignored, so it
        # still gets here; a newer record whose known fields changed type fails validation instead,
        # which readers turn into SchemaVersionError with :func:`raise_if_newer`.
        check_schema_version(
            {"schema_version": self.schema_version}, STATE_SCHEMA_VERSION, "AgentState"
        )
        return self

    def append_context(self, name: str, blocks: list[Block]) -> Msg:
        """Append ``blocks`` to the assistant message of the current reply (creating it if needed)."""
        last = self.context[-1] if self.context else None
        if (
            last is not None
            and last.role == "assistant"
            and last.name == name
            and self.reply_id
            and last.id == self.reply_id
        ):
            grown = last.model_copy(update={"content": [*last.blocks, *blocks]})
            self.context[-1] = grown  # messages are immutable: the grown one replaces it
            return grown
        msg = Msg(id=self.reply_id or new_id(), role="assistant", name=name, content=list(blocks))
        self.context.append(msg)
        return msg

    def awaiting_tool_calls(self, name: str | None = None) -> list[ToolUseBlock]:
        """Tool calls (made by ``name`` if given) that have no result anywhere in the context."""
        answered = {
            b.tool_use_id for m in self.context for b in m.blocks if isinstance(b, ToolResultBlock)
        }
        return [
            u
            for m in self.context
            if m.role == "assistant" and (name is None or m.name == name)
            for u in m.tool_uses()
            if u.id not in answered
        ]

    def has_awaiting_tool_calls(self, name: str | None = None) -> bool:
        """True if the trailing turn has tool calls without results (e.g. paused for HITL)."""
        return bool(self.awaiting_tool_calls(name))

    def clear_context(self) -> None:
        """Forget the conversation (context, summary, reply) but keep permissions, tools and tasks."""
        self.context.clear()
        self.summary = ""
        self.reply_id = ""
        self.cur_iter = 0
        self.awaiting_confirmation.clear()
        self.end_deferral()
        self.usage.forget_prompt()

    def end_deferral(self) -> None:
        """Forget the calls a hook deferred (and why): they are decided again, or closed."""
        self.deferred_tool_calls.clear()
        self.deferred_reasons.clear()


class ExtensionState(BaseModel):
    """The persisted state of one extension, kept in ``AgentState.middle_context[KEY]``.

    Subclasses set ``KEY`` and ``SCHEMA_VERSION`` and declare typed fields; :meth:`upgrade` maps an
    older layout to the current one, so old records still load. :meth:`of` attaches the typed object
    to the state (it is saved with it); :meth:`peek` reads without attaching.
    """

    KEY: ClassVar[str]
    SCHEMA_VERSION: ClassVar[int] = 1
    #: Keys of older layouts that :meth:`upgrade` reads; :meth:`of` removes them.
    LEGACY_KEYS: ClassVar[tuple[str, ...]] = ()
    schema_version: int = 1

    @model_validator(mode="before")
    @classmethod
    def _check_version(cls, data: Any) -> Any:
        return check_schema_version(data, cls.SCHEMA_VERSION, cls.__name__)

    @classmethod
    def upgrade(cls, middle: dict[str, Any]) -> Any:
        """The raw stored value of this extension (override to read an older layout)."""
        return middle.get(cls.KEY)

    @classmethod
    def peek(cls, state: AgentState) -> Self:
        """The typed state as stored (a default if absent), not attached: changes are not saved."""
        found = state.middle_context.get(cls.KEY)
        if isinstance(found, cls):
            return found
        raw = cls.upgrade(state.middle_context)
        return cls() if raw is None else cls.model_validate(raw)

    @classmethod
    def of(cls, state: AgentState) -> Self:
        """The typed state attached to ``state``: changes to it are saved with the state."""
        found = cls.peek(state)
        for legacy in cls.LEGACY_KEYS:
            state.middle_context.pop(legacy, None)
        state.middle_context[cls.KEY] = found
        return found
