"""agentscope-teams: stateless multi-agent LLM applications over a pluggable store.

The names below are the public API (``tests/test_public_api.py`` pins them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    AgentScopeTeamsError,
    AuthenticationError,
    BudgetExceededError,
    CannotConvert,
    ChildPausedError,
    ClaimConflict,
    CommandError,
    ConfigurationError,
    ControlPlaneAuthError,
    ControlPlaneError,
    EventIdError,
    GitError,
    HITLError,
    InvalidSchema,
    LeaseLostError,
    LimitError,
    MissingDependencyError,
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    NotTaskOwnerError,
    OptionError,
    OutputError,
    OutputRetriesExceededError,
    OutputTypeMismatchError,
    OutputValidationError,
    RateLimitError,
    RateLimitWaitError,
    ResultUnchecked,
    SchemaVersionError,
    SessionBusyError,
    SpecError,
    SpecErrors,
    StoreBusyError,
    StoreError,
    StoreUnavailableError,
    SubagentError,
    SyncCallInsideLoopError,
    TaskBlockedError,
    TaskStateError,
    TeamError,
    ToolError,
    UnknownMemberError,
    UnknownTaskError,
    UnknownTeamError,
    UsageLimitError,
    ValueTooLargeError,
    VersionConflict,
    WebAccessError,
)

if TYPE_CHECKING:
    from .agent import CompressionConfig, ReActAgent, ReActConfig, SessionAgent
    from .compose import HarnessAgent, extensions_from_specs
    from .context import RuntimeContext, current_context, use_context
    from .events import (
        ConfirmResult,
        ExceedMaxItersEvent,
        RequireUserConfirmEvent,
        ToolDeferredEvent,
        UserConfirmResultEvent,
        UserInterruptEvent,
    )
    from .message import (
        AssistantMsg,
        DataBlock,
        Msg,
        SystemMsg,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMsg,
    )
    from .model import ChatModel, ModelResponse, ScriptedModel, model_from_string
    from .model.openai import OpenAIChatModel
    from .sessions import SessionConfig, SessionRecord, SessionSource, SessionStorage
    from .state import AgentState
    from .store import BaseStore, InMemoryStore, store_from_url
    from .subagents import SubagentSpec, WorkspaceMode, load_specs
    from .tools import PermissionEngine, Tool, Toolkit, tool
    from .usage import Budget, RateLimit, UsageGovernor

#: Where each public name lives, imported on first use so that a process importing one submodule
#: (a worker, the command line, a store) does not load the agents, tools and teams it never uses.
_LAZY: dict[str, str] = {
    "CompressionConfig": "agent",
    "ReActAgent": "agent",
    "ReActConfig": "agent",
    "SessionAgent": "agent",
    "HarnessAgent": "compose",
    "extensions_from_specs": "compose",
    "RuntimeContext": "context",
    "current_context": "context",
    "use_context": "context",
    "ConfirmResult": "events",
    "ExceedMaxItersEvent": "events",
    "RequireUserConfirmEvent": "events",
    "ToolDeferredEvent": "events",
    "UserConfirmResultEvent": "events",
    "UserInterruptEvent": "events",
    "AssistantMsg": "message",
    "DataBlock": "message",
    "Msg": "message",
    "SystemMsg": "message",
    "TextBlock": "message",
    "ToolResultBlock": "message",
    "ToolUseBlock": "message",
    "UserMsg": "message",
    "ChatModel": "model",
    "ModelResponse": "model",
    "ScriptedModel": "model",
    "model_from_string": "model",
    "SessionConfig": "sessions",
    "SessionRecord": "sessions",
    "SessionSource": "sessions",
    "SessionStorage": "sessions",
    "AgentState": "state",
    "BaseStore": "store",
    "InMemoryStore": "store",
    "store_from_url": "store",
    "SubagentSpec": "subagents",
    "WorkspaceMode": "subagents",
    "load_specs": "subagents",
    "PermissionEngine": "tools",
    "Tool": "tools",
    "Toolkit": "tools",
    "tool": "tools",
    "Budget": "usage",
    "RateLimit": "usage",
    "UsageGovernor": "usage",
    "OpenAIChatModel": "model.openai",  # the openai SDK is slow to import
}

__all__ = [
    "AgentScopeTeamsError",
    "AgentState",
    "AssistantMsg",
    "AuthenticationError",
    "BaseStore",
    "ChatModel",
    "ChildPausedError",
    "ClaimConflict",
    "CommandError",
    "CompressionConfig",
    "ConfigurationError",
    "ConfirmResult",
    "ControlPlaneAuthError",
    "ControlPlaneError",
    "EventIdError",
    "DataBlock",
    "ExceedMaxItersEvent",
    "GitError",
    "HITLError",
    "InvalidSchema",
    "ResultUnchecked",
    "SyncCallInsideLoopError",
    "HarnessAgent",
    "InMemoryStore",
    "LeaseLostError",
    "LimitError",
    "MissingDependencyError",
    "OptionError",
    "CannotConvert",
    "ModelConfigurationError",
    "ModelConnectionError",
    "ModelError",
    "ModelResponse",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "Msg",
    "NotTaskOwnerError",
    "OpenAIChatModel",
    "OutputError",
    "OutputRetriesExceededError",
    "OutputTypeMismatchError",
    "OutputValidationError",
    "PermissionEngine",
    "RateLimitError",
    "RateLimitWaitError",
    "BudgetExceededError",
    "UsageLimitError",
    "Budget",
    "RateLimit",
    "UsageGovernor",
    "ReActAgent",
    "ReActConfig",
    "RequireUserConfirmEvent",
    "RuntimeContext",
    "SchemaVersionError",
    "ScriptedModel",
    "SessionAgent",
    "SessionBusyError",
    "SessionConfig",
    "SessionRecord",
    "SessionSource",
    "SessionStorage",
    "SpecError",
    "SpecErrors",
    "StoreBusyError",
    "StoreError",
    "StoreUnavailableError",
    "SubagentError",
    "SubagentSpec",
    "SystemMsg",
    "TaskBlockedError",
    "TaskStateError",
    "TeamError",
    "TextBlock",
    "Tool",
    "ToolDeferredEvent",
    "ToolError",
    "WebAccessError",
    "ToolResultBlock",
    "ToolUseBlock",
    "Toolkit",
    "UnknownMemberError",
    "UnknownTaskError",
    "UnknownTeamError",
    "UserConfirmResultEvent",
    "UserInterruptEvent",
    "UserMsg",
    "ValueTooLargeError",
    "VersionConflict",
    "WorkspaceMode",
    "current_context",
    "extensions_from_specs",
    "load_specs",
    "model_from_string",
    "store_from_url",
    "tool",
    "use_context",
    "__version__",
]


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
