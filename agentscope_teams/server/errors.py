"""Errors of the control plane and the one table that maps them to HTTP status codes.

The server answers every failure with ``{"error": {"type": <class name>, "message": ..., ...}}`` and
the status of :func:`status_for`; :func:`error_from_response` turns such an answer back into the same
exception class on the client, from the status code and the ``type`` field (never the message text)::

    401  ControlPlaneAuthError   no token, an unknown / revoked / expired token
    403  ControlPlaneAuthError   a valid token acting outside its scope (another team or member)
    404  UnknownTeamError, UnknownTaskError, UnknownMemberError
    409  ClaimConflict, VersionConflict, NotTaskOwnerError, TaskStateError, TeamError
    413  ValueTooLargeError      the request body (or a stored value) is over the size limit
    422  ValueError              an invalid identifier or request body
    503  StoreUnavailableError   the store behind the server cannot be reached
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    ClaimConflict,
    NotTaskOwnerError,
    StoreUnavailableError,
    TaskStateError,
    TeamError,
    UnknownMemberError,
    ValueTooLargeError,
    VersionConflict,
)
from ..errors import ControlPlaneAuthError as ControlPlaneAuthError  # re-exported
from ..errors import ControlPlaneError as ControlPlaneError  # re-exported
from ..teams import UnknownTaskError, UnknownTeamError

#: Most specific first: the first class an exception is an instance of gives its status.
STATUS_TABLE: tuple[tuple[type[Exception], int], ...] = (
    (ControlPlaneAuthError, 403),
    (UnknownTeamError, 404),
    (UnknownTaskError, 404),
    (UnknownMemberError, 404),
    (ClaimConflict, 409),
    (VersionConflict, 409),
    (NotTaskOwnerError, 409),
    (TaskStateError, 409),
    (TeamError, 409),
    (ValueTooLargeError, 413),
    (StoreUnavailableError, 503),
    (ValueError, 422),
)

_BY_NAME: dict[str, type[Exception]] = {cls.__name__: cls for cls, _ in STATUS_TABLE}


def status_for(exc: BaseException) -> int:
    """The HTTP status of an exception the server reports (500 for anything unexpected)."""
    if isinstance(exc, ControlPlaneError) and exc.status is not None:
        return exc.status
    return next((status for cls, status in STATUS_TABLE if isinstance(exc, cls)), 500)


def error_body(exc: BaseException) -> dict[str, Any]:
    """The JSON body of an error answer; conflicts carry their structured fields."""
    detail: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ClaimConflict):
        detail.update(task_id=exc.task_id, owner=exc.owner)
    elif isinstance(exc, VersionConflict):
        detail.update(key=list(exc.key), expected=exc.expected, found=exc.found)
    if status_for(exc) == 500:
        detail = {"type": "InternalError", "message": "internal server error; see the server log"}
    return {"error": detail}


def error_from_response(status: int, body: Any, what: str) -> Exception:
    """The exception for an error answer: by ``type`` when it is a known class, else by status."""
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict):
        detail = {}
    message = str(detail.get("message") or f"{what} failed with HTTP {status}")
    kind = _BY_NAME.get(str(detail.get("type")))
    if status in (401, 403):
        return ControlPlaneAuthError(message, status)
    if kind is ClaimConflict:
        return ClaimConflict(str(detail.get("task_id", "")), detail.get("owner"), message)
    if kind is VersionConflict:
        key = detail.get("key") or []
        return VersionConflict([str(k) for k in key], detail.get("expected"), detail.get("found"))
    if kind is not None and kind not in (ValueTooLargeError, ControlPlaneAuthError):
        return kind(message)
    if status == 404:
        return UnknownTeamError(message)
    if status == 409:
        return TeamError(message)
    if status in (413, 422):
        return ValueError(message)
    if status == 503:
        return StoreUnavailableError(message)
    return ControlPlaneError(f"{what}: HTTP {status}: {message}", status)
