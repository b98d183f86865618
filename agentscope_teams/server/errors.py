"""Errors of the control plane and the one table that maps them to HTTP status codes.

The server answers every failure with ``{"error": {"type": <class name>, "message": ..., <fields>}}``
where the fields are the structured context the error carries (``key``, ``task_id``, ``file``,
``line``, ``status_code``, ...). :data:`STATUS` gives every class of the library's error tree
(:mod:`agentscope_teams.errors`) its own status; a test walks the tree, so a new class cannot be
forgotten. :func:`error_from_response` turns an answer back into the same class on the client, from
the ``type`` field (never the message text) and else from the status::

    400  EventIdError            a ``Last-Event-ID`` the event stream never sent
    401  ControlPlaneAuthError   no token, an unknown / revoked / expired token
    402  BudgetExceededError     a budget is spent (the body names it, its unit, limit and use)
    403  ControlPlaneAuthError   a valid token acting outside its scope (another team or member)
    404  UnknownTeamError, UnknownTaskError, UnknownMemberError
    409  ClaimConflict, VersionConflict, LeaseLostError, NotTaskOwnerError, TaskStateError, TeamError,
         TaskBlockedError (a TaskCreated hook refused the task; its title, reason and hooks),
         SessionBusyError, HITLError, ChildPausedError, OutputTypeMismatchError, SchemaVersionError
         (the stored record is newer than this server: upgrade it; other records still work)
    413  ValueTooLargeError      the request body (or a stored value) is over the size limit
    422  ValueError              an invalid identifier, request body (too deep, not JSON) or query;
         LimitError (a number or text out of bounds), SpecError(s), ToolError, WebAccessError,
         CommandError, CannotConvert (AgentScope data this project cannot represent),
         OutputValidationError (a value that does not match its schema),
         InvalidSchema (a JSON schema we do not accept: docs/security.md)
    429  UsageLimitError, RateLimitWaitError: no turn of a shared rate limit within the wait
    500  ConfigurationError (OptionError), StoreError, SubagentError (GitError), OutputError, SyncCallInsideLoopError,
         AgentScopeTeamsError (a library error with its type and message); any other exception
         is an opaque ``InternalError``
    502  ModelError and its upstream failures, OutputRetriesExceededError (the model gave no valid
         output), ControlPlaneError without a status
    503  StoreUnavailableError, RateLimitError (an upstream limit, not the caller's);
         StoreBusyError (the store's pool is exhausted) with ``Retry-After``: retry then
    504  ModelTimeoutError
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import errors as e
from ..errors import ControlPlaneAuthError as ControlPlaneAuthError  # re-exported
from ..errors import ControlPlaneError as ControlPlaneError  # re-exported

#: The status of every class of the error tree; an exception's status is that of the first class
#: of its MRO listed here (so a subclass defined elsewhere inherits its parent's).
STATUS: dict[type[BaseException], int] = {
    e.AgentScopeTeamsError: 500,
    e.ConfigurationError: 500,
    e.OptionError: 500,
    e.MissingDependencyError: 500,
    e.StoreError: 500,
    e.VersionConflict: 409,
    e.LeaseLostError: 409,
    e.ValueTooLargeError: 413,
    e.StoreUnavailableError: 503,
    e.StoreBusyError: 503,
    e.EventIdError: 400,
    e.SchemaVersionError: 409,
    e.SessionBusyError: 409,
    e.SpecError: 422,
    e.SpecErrors: 422,
    e.LimitError: 422,
    e.SubagentError: 500,
    e.GitError: 500,
    e.ChildPausedError: 409,
    e.TeamError: 409,
    e.ClaimConflict: 409,
    e.TaskStateError: 409,
    e.TaskBlockedError: 409,
    e.NotTaskOwnerError: 409,
    e.ResultUnchecked: 409,
    e.UnknownMemberError: 404,
    e.UnknownTeamError: 404,
    e.UnknownTaskError: 404,
    e.ToolError: 422,
    e.WebAccessError: 422,
    e.HITLError: 409,
    e.OutputError: 500,
    e.OutputValidationError: 422,
    e.InvalidSchema: 422,
    e.OutputRetriesExceededError: 502,
    e.OutputTypeMismatchError: 409,
    e.SyncCallInsideLoopError: 500,
    e.CommandError: 422,
    e.CannotConvert: 422,
    e.ControlPlaneError: 502,
    e.ControlPlaneAuthError: 403,
    e.ModelError: 502,
    e.ModelConfigurationError: 500,
    e.AuthenticationError: 502,
    e.RateLimitError: 503,
    e.UsageLimitError: 429,
    e.BudgetExceededError: 402,
    e.RateLimitWaitError: 429,
    e.ModelServerError: 502,
    e.ModelConnectionError: 502,
    e.ModelTimeoutError: 504,
    e.ModelResponseError: 502,
    ValueError: 422,
}

_BY_NAME: dict[str, type[BaseException]] = {cls.__name__: cls for cls in STATUS}
_FALLBACK: dict[int, type[Exception]] = {
    400: ValueError,
    404: e.UnknownTeamError,
    409: e.TeamError,
    413: ValueError,
    422: ValueError,
    503: e.StoreUnavailableError,
}


def status_for(exc: BaseException) -> int:
    """The HTTP status of an exception the server reports (500 for anything unexpected)."""
    explicit = getattr(exc, "status", None) if isinstance(exc, ControlPlaneError) else None
    if isinstance(explicit, int):
        return explicit
    return next((STATUS[cls] for cls in type(exc).__mro__ if cls in STATUS), 500)


def _jsonable(value: Any) -> Any:
    """``value`` as JSON data, or ``...`` when it has no faithful JSON form (then it is left out)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        items = [_jsonable(v) for v in value]
        return items if all(i is not ... for i in items) else ...
    if isinstance(value, e.AgentScopeTeamsError):
        return _detail(value)
    return ...


def _detail(exc: BaseException) -> dict[str, Any]:
    detail: dict[str, Any] = {"type": type(exc).__name__, "message": e.public_message(exc)}
    if isinstance(exc, ValidationError):  # each problem by field, without the input values
        detail["errors"] = [
            {"field": e.field_path(err), "message": str(err["msg"])} for err in exc.errors()
        ]
    if isinstance(exc, e.AgentScopeTeamsError):
        for name, value in vars(exc).items():
            shown = _jsonable(value)
            if not name.startswith("_") and name not in detail and shown is not ...:
                detail[name] = shown
    return detail


def error_body(exc: BaseException) -> dict[str, Any]:
    """The JSON body of an error answer: type, message and the error's structured fields.

    A library error is shown as it is (its messages are written for the caller), a store error
    in its public form (:func:`~agentscope_teams.errors.public_message`: no URL, host, user,
    database or driver text, which only the server's log shows); any other
    exception that is not a ``ValueError`` becomes an opaque ``InternalError``.
    """
    if not isinstance(exc, (e.AgentScopeTeamsError, ValueError)):
        return {
            "error": {
                "type": "InternalError",
                "message": "internal server error; see the server log",
            }
        }
    return {"error": _detail(exc)}


def retry_after(exc: BaseException) -> str | None:
    """The ``Retry-After`` header of an answer to ``exc``: whole seconds for a busy store."""
    if isinstance(exc, e.StoreBusyError):
        return str(max(1, math.ceil(exc.retry_after)))
    return None


def error_from_response(status: int, body: Any, what: str) -> Exception:
    """The exception for an error answer: by ``type`` when it is a known class, else by status."""
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict):
        detail = {}
    message = str(detail.get("message") or f"{what} failed with HTTP {status}")
    kind = _BY_NAME.get(str(detail.get("type")))
    if status in (401, 403):
        return ControlPlaneAuthError(message, status)
    if kind is not None and issubclass(kind, Exception):
        return _rebuild(kind, message, detail, status)
    fallback = _FALLBACK.get(status)
    if fallback is not None:
        return fallback(message)
    return ControlPlaneError(f"{what}: HTTP {status}: {message}", status)


def _rebuild(kind: type[Exception], message: str, detail: dict[str, Any], status: int) -> Exception:
    """An instance of ``kind`` with the server's message and fields (its constructor bypassed)."""
    if issubclass(kind, ControlPlaneError):
        return kind(message, status)
    if kind is ValueError:
        return ValueError(message)
    exc = kind.__new__(kind)
    BaseException.__init__(exc, message)
    for name, value in detail.items():
        if name in ("type", "message"):
            continue
        if name == "key" and isinstance(value, list):
            value = tuple(value)
        elif name == "file" and isinstance(value, str):
            value = Path(value)
        elif name == "errors" and isinstance(value, list):
            value = [_nested(item, status) for item in value]
        setattr(exc, name, value)
    return exc


def _nested(item: Any, status: int) -> Any:
    if not isinstance(item, dict):
        return item
    kind = _BY_NAME.get(str(item.get("type")))
    if kind is None or not issubclass(kind, Exception):
        return item
    return _rebuild(kind, str(item.get("message", "")), item, status)
