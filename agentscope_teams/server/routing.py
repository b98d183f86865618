"""The plumbing every API route shares: authentication, scope checks, bodies, errors.

The routes are FastAPI path operations (:mod:`.api`, :mod:`.mail_api`, :mod:`.read_api`) whose
request bodies are the pydantic models of :mod:`.schemas`; FastAPI generates the OpenAPI document
from them. Their routers use :class:`ApiRoute`, which runs, in this order and before FastAPI reads
the body: the token (401), the operator check of routes that take :func:`operator_call` (403), the
team of the path (403 / 404), then the body's size (413) and depth (422); then FastAPI validates
the body (422) and the handler runs. Every failure is answered in the error format of
:mod:`.errors`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import Any, Literal, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic_core import ValidationError
from starlette.responses import JSONResponse, Response
from starlette.types import Message

from .. import tracing
from ..errors import AgentScopeTeamsError, StoreError, TeamError, UnknownTeamError
from ..store.base import BaseStore
from ..teams import LocalTeamClient, Team
from ..tracing import metrics
from .auth import Principal, authenticate, bearer_token
from .errors import ControlPlaneAuthError, ControlPlaneError, error_body, retry_after, status_for
from .schemas import ErrorBody

log = logging.getLogger("agentscope_teams.server")
R = TypeVar("R")
#: Deepest nesting of arrays and objects a request body may have (checked before parsing).
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
Access = Literal["operator", "token"]
#: In the ASGI scope of a ``HEAD`` request routed as its ``GET`` (:func:`head_request`).
HEAD_KEY = "agentscope_teams.head"

#: The error answers every API operation documents (each with the :class:`ErrorBody` schema).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        401: "No token, or an unknown, revoked or expired one",
        403: "The token may not do this (another team, another member, operator only)",
        404: "Unknown team, task or member",
        409: "Conflict: ClaimConflict, VersionConflict, NotTaskOwnerError, TaskStateError",
        413: "The request body is over the size limit",
        422: "Invalid request body (not JSON, nested too deep, wrong fields), identifier or query",
        500: "A library error (typed) or an unexpected one (InternalError)",
        503: "The store behind the server cannot be reached, or is busy (StoreBusyError: retry "
        "after the Retry-After seconds)",
    }.items()
}


@dataclass(frozen=True, slots=True)
class Settings:
    """Server-wide knobs (see :func:`~agentscope_teams.server.app.create_app`)."""

    task_lease: float = 60.0
    max_body_bytes: int = 1024 * 1024
    poll_interval: float = 0.5
    heartbeat_seconds: float = 15.0
    resume_seconds: float = 600.0


@dataclass
class Call:
    """One authenticated request: its principal, the store and helpers for scope checks."""

    request: Request
    principal: Principal
    store: BaseStore
    settings: Settings
    _team: Team | None = field(default=None, init=False, repr=False)

    @cached_property
    def client(self) -> LocalTeamClient:
        ctx = self.principal.context()
        return LocalTeamClient(self.store, ctx, task_lease=self.settings.task_lease)

    @property
    def team_id(self) -> str:
        """The ``{team_id}`` of the path; 403 for a member token of another team."""
        team_id: str = self.request.path_params["team_id"]
        p = self.principal
        if not p.is_operator and p.team_id != team_id:
            raise ControlPlaneAuthError(
                f"this token belongs to {p.member!r} of team {p.team_id!r}; "
                f"it cannot act in team {team_id!r}",
                403,
            )
        return team_id

    async def team(self) -> Team:
        """The team of the path as the caller may see it: the one visibility rule of every route.

        403 for a member token of another team; 404 (``UnknownTeamError``) for a team of another
        org or user, an id that never existed and a deleted team alike.
        """
        if self._team is None:
            self._team = await self.client.get_team(self.team_id)
        return self._team

    def deleted(self) -> UnknownTeamError:
        """The 404 of a team deleted while this request was served."""
        return UnknownTeamError(f"team {self.team_id!r} was deleted while this request was served")

    async def settled(self, result: R) -> R:
        """``result`` of reads of the team, unless the team was deleted meanwhile (then 404).

        A delete marks the team deleted before it removes anything, so a read that met a removal
        (a task or an inbox already gone) is followed by a read of the team that sees the mark.
        """
        if await self.client.is_deleted(self.team_id):
            raise self.deleted()
        return result

    def require_operator(self, what: str) -> None:
        if not self.principal.is_operator:
            raise ControlPlaneAuthError(f"only an operator token may {what}", 403)

    async def require_lead(self, what: str) -> Team:
        """The team, when the caller is an operator or the team's lead; else 403."""
        team = await self.team()
        if not self.principal.is_operator and self.principal.member != team.lead:
            raise ControlPlaneAuthError(
                f"only an operator or the lead {team.lead!r} may {what}, not "
                f"{self.principal.member!r}",
                403,
            )
        return team

    async def acting(self, requested: str | None, *, default_lead: bool = False) -> str:
        """Who acts: a member token acts only as itself; an operator names any participant."""
        p = self.principal
        if not p.is_operator:
            assert p.member is not None
            if requested not in (None, p.member):
                raise ControlPlaneAuthError(
                    f"this token acts as {p.member!r}; it cannot act as {requested!r}", 403
                )
            return p.member
        if requested is not None:
            return requested
        if default_lead:
            return (await self.team()).lead
        raise ValueError("an operator must name the acting member (field 'member')")


async def token_call(request: Request) -> Call:
    """The :class:`Call` of a route any valid token may use (authenticated by :class:`ApiRoute`).

    Dependencies are ``async``: FastAPI runs a plain ``def`` one in a worker thread, which cost
    more than the rest of a small request (bench/server_framework.py)."""
    call: Call = request.state.call
    return call


async def operator_call(request: Request) -> Call:
    """The :class:`Call` of an operator-only route (:class:`ApiRoute` answers 403 to others)."""
    return await token_call(request)


def query_int(name: str, raw: str | None, default: int, *, low: int = 0, high: int = 1000) -> int:
    """The integer query parameter ``name`` (``raw`` as sent), refused unless it fits ``low..high``."""
    if raw is None:
        return default
    # ASCII digits only, and no longer than the bound: nothing is parsed that cannot fit
    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(high))) or not (
        low <= int(raw) <= high
    ):
        raise ValueError(f"query parameter {name!r} must be an integer in {low}..{high}")
    return int(raw)


#: What a read or write of a team meets when the team is deleted under it.
_DELETION_ERRORS = (TeamError, StoreError)


def check_json_depth(raw: bytes, limit: int = MAX_JSON_DEPTH) -> None:
    """``ValueError`` naming the limit when arrays and objects in ``raw`` nest deeper than it.

    Strings are removed first (brackets in text do not count), then the brackets are counted;
    an unbalanced document counts as deep as it opens. Linear in the size, in C for the most part.
    """
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return
    depth = max(accumulate(1 if b in b"[{" else -1 for b in brackets))
    if depth > limit:
        raise ValueError(
            f"the request body nests arrays and objects deeper than {limit} levels; "
            "send a flatter document"
        )


def _too_large(limit: int) -> ControlPlaneError:
    return ControlPlaneError(f"the request body is over the limit of {limit} bytes", 413)


async def guarded_body(request: Request, limit: int) -> bytes:
    """The request body as JSON text: 413 past ``limit`` bytes, 422 when nested deeper than
    :data:`MAX_JSON_DEPTH` (refused before any parser recurses) or not JSON; empty is ``{}``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise _too_large(limit)
    check_json_depth(bytes(raw))
    try:
        json.loads(raw or b"{}")
    except ValueError:
        raise ValueError("the request body is not valid JSON") from None
    return bytes(raw) or b"{}"


def head_request(request: Request) -> bool:
    """Whether ``request`` is a ``HEAD`` that :class:`~.app.HeadAsGet` routed as its ``GET``; if
    so its scope says ``HEAD`` again, so the response it gets sends its headers only."""
    if not request.scope.get(HEAD_KEY):
        return False
    request.scope["method"] = "HEAD"
    return True


def error_response(exc: BaseException) -> JSONResponse:
    status = status_for(exc)
    if not isinstance(exc, (AgentScopeTeamsError, ValueError)):
        log.exception("unexpected error while serving a request", exc_info=exc)
    elif status >= 500:
        log.warning("%s while serving a request: %s", type(exc).__name__, exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if (wait := retry_after(exc)) is not None:
        headers["Retry-After"] = wait
    return JSONResponse(error_body(exc), status_code=status, headers=headers or None)


async def principal_of(request: Request, *, stream: bool = False) -> Principal:
    store: BaseStore = request.app.state.store
    return await authenticate(
        store, bearer_token(request.headers.get("authorization")), stream=stream
    )


def invalid_input(exc: RequestValidationError, title: str) -> ValueError:
    """FastAPI's validation failure as the pydantic ``ValidationError`` the API has always
    answered (type ``ValidationError``, pydantic's message), the ``body`` / ``query`` location
    prefix left out."""
    lines: list[Any] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        item = {"type": err["type"], "loc": loc[1:], "input": err.get("input")}
        if err.get("ctx"):
            item["ctx"] = err["ctx"]
        lines.append(item)
    try:
        return ValidationError.from_exception_data(title, lines)
    except Exception:  # an error type pydantic cannot rebuild: its messages, plainly
        return ValueError("; ".join(f"{e.get('loc')}: {e.get('msg')}" for e in exc.errors()))


class ApiRoute(APIRoute):
    """A path operation of the API: authenticated, scope-checked and guarded before FastAPI
    validates its input; every failure answered in the API's error format."""

    @property
    def access(self) -> Access:
        """``operator`` when the operation takes :func:`operator_call`, else ``token``."""
        calls = {dep.call for dep in self.dependant.dependencies}
        return "operator" if operator_call in calls else "token"

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        inner = super().get_route_handler()
        what = (self.summary or self.name)[:1].lower() + (self.summary or self.name)[1:]
        operator_only = self.access == "operator"
        body_field = self.body_field
        has_body = body_field is not None
        body_type = None if body_field is None else body_field.field_info.annotation
        title = getattr(body_type, "__name__", self.name)
        method = next(iter(self.methods or {"GET"}))

        async def handle(request: Request) -> Response:
            running = metrics.METRICS
            if running is not None:
                running.http_requests_running.inc()
            try:
                return await answer(request)
            finally:
                if running is not None:
                    running.http_requests_running.inc(amount=-1)

        async def answer(request: Request) -> Response:
            call: Call | None = None
            found = False  # the request found the team of its path
            try:
                principal = await principal_of(request)
                app_state = request.app.state
                call = Call(request, principal, app_state.store, app_state.settings)
                request.state.call = call
                if operator_only:
                    call.require_operator(what)
                if "team_id" in request.path_params:
                    await call.team()
                    found = True
                if has_body:
                    request = _replayed(
                        request, await guarded_body(request, call.settings.max_body_bytes)
                    )
                with tracing.incoming(request.headers):  # tasks it creates join the caller's trace
                    try:
                        return await inner(request)
                    except RequestValidationError as exc:
                        raise invalid_input(exc, title) from None
            except Exception as exc:
                if found and call is not None and await _deleted_meanwhile(method, call, exc):
                    exc = call.deleted()
                return error_response(exc)

        return handle


def _replayed(request: Request, body: bytes) -> Request:
    """A request whose body is ``body`` (already read and checked), sent as JSON."""
    headers = [
        (k, v) for k, v in request.scope["headers"] if k not in (b"content-type", b"content-length")
    ]
    request.scope["headers"] = [
        *headers,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, receive)


async def _deleted_meanwhile(method: str, call: Call, exc: Exception) -> bool:
    """Whether the request failed because the team it had found was deleted meanwhile (its
    DELETE landed while the request was served). A failed DELETE keeps its own error."""
    return (
        method != "DELETE"
        and isinstance(exc, _DELETION_ERRORS)
        and await call.client.is_deleted(call.team_id)
    )
