"""The control plane: the Agent Teams API over HTTP, tokens per member and operator, a live dashboard.

``create_app(store)`` builds the ASGI app that ``agentscope-teams serve`` runs with uvicorn;
:class:`ControlPlaneTeamClient` is the :class:`~agentscope_teams.teams.TeamClient` protocol over
HTTP. Needs the ``server`` extra (fastapi, uvicorn, httpx).
"""

from __future__ import annotations

from ..errors import MissingDependencyError

try:
    import fastapi  # noqa: F401
    import httpx  # noqa: F401
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("the control plane (agentscope_teams.server)", "server") from exc

from .app import create_app, request_shutdown
from .auth import issue_member_token, issue_operator_token
from .client import ControlPlaneTeamClient
from .errors import ControlPlaneAuthError, ControlPlaneError

__all__ = [
    "ControlPlaneAuthError",
    "ControlPlaneError",
    "ControlPlaneTeamClient",
    "create_app",
    "issue_member_token",
    "issue_operator_token",
    "request_shutdown",
]
