"""Per-call cleanups: what a tool started for one agent call and must stop when that call ends.

A tool registers a closer with :func:`at_call_end` for its :class:`~.base.ToolEnv` (one per agent
call); :class:`~agentscope_teams.agent.SessionAgent` runs :func:`end_call` when the call ends,
however it ends (reply, pause for confirmation, error, cancellation). Code that runs tools without
an agent (``Toolkit.execute(call, env=...)``) calls :func:`end_call` itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

from .base import ToolEnv

log = logging.getLogger(__name__)

Closer = Callable[[], Awaitable[None]]

_pending: dict[int, tuple[ToolEnv, list[Closer]]] = {}


def at_call_end(env: ToolEnv, closer: Closer) -> None:
    """Run ``closer`` when the call of ``env`` ends (closers run newest first)."""
    entry = _pending.setdefault(id(env), (env, []))
    entry[1].append(closer)


async def end_call(env: ToolEnv) -> None:
    """Run (shielded from cancellation) every closer registered for ``env``; a failing closer is
    logged and the others still run."""
    entry = _pending.pop(id(env), None)  # the entry holds env: its id is not reused meanwhile
    if entry is None:
        return
    with anyio.CancelScope(shield=True):
        for closer in reversed(entry[1]):
            try:
                await closer()
            except Exception:
                log.warning("a tool's end-of-call cleanup failed", exc_info=True)
