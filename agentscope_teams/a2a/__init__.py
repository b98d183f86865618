"""Remote A2A agents as subagents and team members (official ``a2a-sdk``; the ``a2a`` extra): a
spec's ``a2a:`` block; see ``docs/a2a.md``.

Only :class:`RemoteAgentConfig` (what a spec holds) is loaded with the package; the models load
when a remote agent is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import RemoteAgentConfig

if TYPE_CHECKING:
    from .member import RemoteMemberModel
    from .remote import RemoteA2AModel, RemoteConversation, RemoteReply, require_sdk

__all__ = [
    "RemoteA2AModel",
    "RemoteAgentConfig",
    "RemoteConversation",
    "RemoteMemberModel",
    "RemoteReply",
    "require_sdk",
]


def __getattr__(name: str) -> Any:
    if name == "RemoteMemberModel":
        from .member import RemoteMemberModel

        return RemoteMemberModel
    if name in ("RemoteA2AModel", "RemoteConversation", "RemoteReply", "require_sdk"):
        from . import remote

        return getattr(remote, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
