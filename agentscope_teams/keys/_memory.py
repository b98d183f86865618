"""The key of a subagent's persistent memory (``memory:`` in its spec)."""

from __future__ import annotations

from ..context import org_segment, user_segment
from ..store.base import Key
from ._family import AGENT_MEMORY, typed


def agent_memory_key(org_id: str | None, user_id: str | None, scope: str, agent: str) -> Key:
    """The memory of ``agent`` for one user; ``scope`` is ``user``, ``project:<hash>`` or
    ``local:<hash>`` (:func:`agentscope_teams.subagents.memory.scope_segment`)."""
    return AGENT_MEMORY.key(
        org_segment(org_id), user_segment(user_id), scope, typed("agent", agent)
    )
