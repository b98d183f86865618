"""agentscope-teams: stateless multi-agent LLM applications over a pluggable store.

The names below are the public API (``tests/test_public_api.py`` pins them).
"""

from __future__ import annotations

from .context import RuntimeContext, current_context, use_context
from .errors import (
    AgentScopeTeamsError,
    AuthenticationError,
    ClaimConflict,
    ConfigurationError,
    HITLError,
    MissingDependencyError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    NotTaskOwnerError,
    SchemaVersionError,
    SessionBusyError,
    SpecError,
    StoreError,
    StoreUnavailableError,
    TaskStateError,
    ToolError,
    UnknownMemberError,
    ValueTooLargeError,
    VersionConflict,
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
from .state import AgentState

__version__ = "0.1.0"

__all__ = [
    "AgentScopeTeamsError",
    "AgentState",
    "AssistantMsg",
    "AuthenticationError",
    "ClaimConflict",
    "ConfigurationError",
    "DataBlock",
    "HITLError",
    "MissingDependencyError",
    "ModelConnectionError",
    "ModelError",
    "ModelResponseError",
    "Msg",
    "NotTaskOwnerError",
    "RuntimeContext",
    "SchemaVersionError",
    "SessionBusyError",
    "SpecError",
    "StoreError",
    "StoreUnavailableError",
    "SystemMsg",
    "TaskStateError",
    "TextBlock",
    "ToolError",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnknownMemberError",
    "UserMsg",
    "ValueTooLargeError",
    "VersionConflict",
    "__version__",
    "current_context",
    "use_context",
]
