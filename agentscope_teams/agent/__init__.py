"""Agents: the stateless :class:`ReActAgent` loop and the :class:`HarnessAgent` shell around it."""

from __future__ import annotations

from .config import CompressionConfig, ReActConfig
from .extension import CallScope, Extension
from .harness import HarnessAgent
from .react import ReActAgent, ReplyOptions

__all__ = [
    "CallScope",
    "CompressionConfig",
    "Extension",
    "HarnessAgent",
    "ReActAgent",
    "ReActConfig",
    "ReplyOptions",
]
