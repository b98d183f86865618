"""Subagents: spec files describing child agents, and the runtime that spawns them.

``HarnessAgent(specs=...)`` builds a :class:`SubagentExtension`, which offers the tools
``agent_spawn``, ``agent_send``, ``agent_wait``, ``agent_cancel`` and ``agent_list``. Runs are
recorded in the store (:class:`RunRecord`), isolated run directories are cleaned by :func:`janitor`.
"""

from .extension import SubagentExtension
from .inbox import Inbox, Notice
from .options import SubagentOptions
from .runs import RunBook, RunRecord, RunStatus, child_session_id
from .spec import (
    CLAUDE_CODE_TOOLS,
    NATIVE_TOOLS,
    ContextMode,
    SpecErrors,
    SpecLoadResult,
    SpecWarning,
    SubagentSpec,
    WorkspaceConfig,
    WorkspaceMode,
    load_specs,
)
from .workspace import janitor, run_dir

__all__ = [
    "CLAUDE_CODE_TOOLS",
    "NATIVE_TOOLS",
    "ContextMode",
    "Inbox",
    "Notice",
    "RunBook",
    "RunRecord",
    "RunStatus",
    "SpecErrors",
    "SpecLoadResult",
    "SpecWarning",
    "SubagentExtension",
    "SubagentOptions",
    "SubagentSpec",
    "WorkspaceConfig",
    "WorkspaceMode",
    "child_session_id",
    "janitor",
    "load_specs",
    "run_dir",
]
