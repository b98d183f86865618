"""Remote A2A agents as subagents (official ``a2a-sdk``): a spec's ``a2a:`` block; see ``docs/a2a.md``."""

from .config import RemoteAgentConfig
from .member import RemoteMemberModel
from .remote import RemoteA2AModel, RemoteConversation, RemoteReply

__all__ = [
    "RemoteA2AModel",
    "RemoteAgentConfig",
    "RemoteConversation",
    "RemoteMemberModel",
    "RemoteReply",
]
