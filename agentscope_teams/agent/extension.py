"""Extensions plug subsystems (subagents, teams) into :class:`HarnessAgent` without it knowing them.

Per call, each extension may offer tools, inject messages before each reasoning step, and learn when
the state was saved (to acknowledge what it injected: delivery is at-least-once, acknowledged only
after the state that holds the message is durable) and when the reply ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..context import RuntimeContext
from ..message import Msg
from ..state import AgentState
from ..tools import Tool, ToolEnv

if TYPE_CHECKING:
    from .harness import HarnessAgent


@dataclass
class CallScope:
    """What an extension sees of one call."""

    agent: HarnessAgent
    ctx: RuntimeContext
    state: AgentState
    env: ToolEnv
    data: dict[str, Any] = field(default_factory=dict)


class Extension:
    """Base class with no-op hooks; subclasses override what they need."""

    def tools(self, scope: CallScope) -> list[Tool]:
        return []

    def system_prompt(self, scope: CallScope) -> str:
        return ""

    async def inject(self, scope: CallScope) -> list[Msg]:
        return []

    async def after_save(self, scope: CallScope) -> None:
        return None

    async def on_reply_end(self, scope: CallScope, final: Msg) -> None:
        return None

    async def aclose(self) -> None:
        """Stop background work this extension started (runs, member loops)."""
        return None
