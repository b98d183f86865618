"""Agents: the stateless :class:`ReActAgent` loop and the :class:`SessionAgent` shell around it.

``HarnessAgent`` (subagents and teams from specs) is composed above this layer, in
:mod:`agentscope_teams.compose`.
"""

from __future__ import annotations

from .config import CompressionConfig, ReActConfig
from .extension import AgentView, CallScope, Extension, ReadMark
from .harness import SessionAgent
from .react import ReActAgent, ReplyOptions

__all__ = [
    "AgentView",
    "CallScope",
    "CompressionConfig",
    "Extension",
    "ReActAgent",
    "ReActConfig",
    "ReadMark",
    "ReplyOptions",
    "SessionAgent",
]
