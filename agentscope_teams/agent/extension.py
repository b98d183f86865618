"""Extensions: how subsystems (subagents, teams, your own) plug into a :class:`SessionAgent`.

The agent knows no extension by name. Each one is given, per call, a :class:`CallScope`: a frozen
:class:`AgentView` of what it may use (model, toolkit, config, permissions, store, timeouts, depth,
workspace root), the caller's context, the session state and the tool environment. Per call, an
extension may prepare (async, before anything else: list a remote server's tools), offer tools
(and MCP servers to the agent's ``mcp_tool`` hooks), add to the system prompt, inject messages before each reasoning step, learn when the state was
saved (to acknowledge what it injected: delivery is at-least-once, acknowledged only after the
state holding the message is durable) and when the reply ended, and say
(:meth:`Extension.works_after_save`) whether those hooks still need the session lease.

Per-call scratch data is typed: :meth:`CallScope.local` gives each owner one object of its own
class for the duration of the call. Persisted extension data is typed too: see
:class:`~agentscope_teams.state.ExtensionState`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..context import RuntimeContext
from ..hooks import McpServers
from ..message import Msg
from ..model.base import ChatModel
from ..state import AgentState
from ..store.base import BaseStore
from ..tools import PermissionEngine, Tool, ToolEnv, Toolkit
from .config import ReActConfig

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AgentView:
    """What an extension may use of the agent it is plugged into (read-only).

    ``lease_ttl`` is the session lease's time to live, ``busy_timeout`` how long a call waits for a
    busy session, ``depth`` the nesting level (0 for a top-level agent), ``workspace`` the root
    under which per-session (and per-run) directories are made.
    """

    name: str
    model: ChatModel
    toolkit: Toolkit
    config: ReActConfig
    permissions: PermissionEngine
    store: BaseStore
    lease_ttl: float
    busy_timeout: float
    depth: int
    workspace: Path


@dataclass(slots=True)
class CallScope:
    """What an extension sees of one call (slotted, its locals made on first use: every call
    holds one while in flight)."""

    agent: AgentView
    ctx: RuntimeContext
    state: AgentState
    env: ToolEnv
    _locals: dict[tuple[int, type[Any]], Any] | None = field(default=None, repr=False)

    def local(self, owner: object, kind: type[T]) -> T:
        """The per-call ``kind()`` object of ``owner`` (made on first use, one per owner and kind).

        Extensions keep what they read or remember during one call here, instead of string keys.
        """
        slot = (id(owner), kind)
        if self._locals is None:
            self._locals = {}
        found = self._locals.get(slot)
        if found is None:
            self._locals[slot] = found = kind()
        return found


@dataclass
class ReadMark:
    """How far one call read a stream it injects from (``read``) and what it acknowledged."""

    read: int | None = None
    acked: int | None = None

    def to_acknowledge(self) -> int | None:
        """The position to acknowledge now, or None when there is nothing new."""
        return self.read if self.read and self.read != self.acked else None


class Extension:
    """Base class with no-op hooks; subclasses override what they need."""

    async def prepare(self, scope: CallScope) -> None:
        """Once per call, before :meth:`tools` and :meth:`system_prompt` are asked (e.g. to
        list a remote server's tools)."""
        return None

    def tools(self, scope: CallScope) -> list[Tool]:
        return []

    def system_prompt(self, scope: CallScope) -> str:
        return ""

    async def inject(self, scope: CallScope) -> list[Msg]:
        return []

    def hook_servers(self, ctx: RuntimeContext) -> McpServers | None:
        """The MCP servers this extension connects for ``ctx``'s calls, which the agent's
        ``mcp_tool`` hooks may call (None: none)."""
        return None

    async def after_save(self, scope: CallScope) -> None:
        return None

    async def on_reply_end(self, scope: CallScope, final: Msg) -> None:
        return None

    def works_after_save(self, scope: CallScope) -> bool:
        """Whether this call's ``after_save`` / ``on_reply_end`` need the session lease still held
        after the last save (asked just before it, per call).

        If no extension does, the last save gives the lease back in the same store operation;
        otherwise the lease is released separately after those hooks ran. An extension that
        acknowledges what it injected must say True while something is left to acknowledge
        (acknowledging after the lease is gone could let another process deliver it again). The
        default is True for any subclass overriding either hook, so extensions that do not
        answer stay safe.
        """
        kind = type(self)
        return kind.after_save is not Extension.after_save or (
            kind.on_reply_end is not Extension.on_reply_end
        )

    async def on_session_deleted(self, store: BaseStore, ctx: RuntimeContext, agent: str) -> None:
        """After ``ctx``'s session of the agent named ``agent`` was deleted (by
        :meth:`~.harness.HarnessAgent.delete_session`): end what the session left running (the
        team lead ends the teams it led). Runs once per deletion, not for a session that was not
        there; what it raises is raised to the caller, the session staying deleted."""
        return None

    async def aclose(self) -> None:
        """Stop background work this extension started (runs, member loops)."""
        return None
