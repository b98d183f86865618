"""Our agents over the A2A protocol (official ``a2a-sdk``; the ``a2a`` extra): see ``docs/a2a.md``."""

from ..errors import MissingDependencyError

try:
    import a2a  # noqa: F401
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("the A2A server (agentscope_teams.a2a_server)", "a2a") from exc

from .app import ExposedAgent, a2a_app, agent_card
from .auth import Caller, StaticTokens, Verifier
from .stores import StorePushConfigStore, StoreTaskStore

__all__ = [
    "Caller",
    "ExposedAgent",
    "StaticTokens",
    "StorePushConfigStore",
    "StoreTaskStore",
    "Verifier",
    "a2a_app",
    "agent_card",
]
