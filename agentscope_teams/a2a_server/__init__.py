"""Our agents over the A2A protocol (official ``a2a-sdk``): see ``docs/a2a.md``."""

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
