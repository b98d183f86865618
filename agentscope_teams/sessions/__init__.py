"""Sessions: AgentScope 2.0's session API over any store (:mod:`.storage`), its records
(:mod:`.records`, :mod:`.config`, :mod:`.origins`), listings that report unreadable records instead
of failing, and the import of sessions stored by AgentScope itself (:mod:`agentscope_teams.agentscope_import`)."""

from __future__ import annotations

from ..listing import Listing, Unreadable  # re-exported: the listings of every record kind
from .config import (
    ChatModelConfig,
    RealtimeModelConfig,
    SessionConfig,
    SessionKnowledgeConfig,
    SessionNaming,
    TTSModelConfig,
)
from .origins import (
    ApiOrigin,
    ChannelOrigin,
    ScheduleOrigin,
    SessionOrigin,
    SessionSource,
    SOPOrigin,
    SubagentOrigin,
    SystemOrigin,
    TeamOrigin,
    UserOrigin,
)
from .records import SESSION_SCHEMA_VERSION, SessionRecord
from .records import (
    SessionBody as SessionBody,  # the persisted body (bench/session_roundtrip.py parses it)
)
from .redis_storage import RedisSessionStorage, RedisStorage
from .storage import SessionStorage, session_key

__all__ = [
    "SESSION_SCHEMA_VERSION",
    "ApiOrigin",
    "ChannelOrigin",
    "ChatModelConfig",
    "Listing",
    "RealtimeModelConfig",
    "RedisSessionStorage",
    "RedisStorage",
    "SOPOrigin",
    "ScheduleOrigin",
    "SessionConfig",
    "SessionKnowledgeConfig",
    "SessionNaming",
    "SessionOrigin",
    "SessionRecord",
    "SessionSource",
    "SessionStorage",
    "SubagentOrigin",
    "SystemOrigin",
    "TTSModelConfig",
    "TeamOrigin",
    "Unreadable",
    "UserOrigin",
    "session_key",
]
