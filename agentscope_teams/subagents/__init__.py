"""Subagents: spec files describing child agents a parent can spawn."""

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

__all__ = [
    "CLAUDE_CODE_TOOLS",
    "NATIVE_TOOLS",
    "ContextMode",
    "SpecErrors",
    "SpecLoadResult",
    "SpecWarning",
    "SubagentSpec",
    "WorkspaceConfig",
    "WorkspaceMode",
    "load_specs",
]
