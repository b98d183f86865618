"""The plumbing every API route shares: authentication, scope checks, bodies, errors, JSON.

An :class:`Endpoint` is declared once and serves twice: :func:`routes` turns it into a Starlette
route, :mod:`.openapi` into its OpenAPI operation, so the document always lists every route.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import Any, Literal, TypeVar

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import tracing
from ..errors import AgentScopeTeamsError, StoreError, TeamError, UnknownTeamError
from ..store.base import BaseStore
from ..teams import LocalTeamClient, Team
from .auth import Principal, authenticate, bearer_token
from .errors import ControlPlaneAuthError, ControlPlaneError, error_body, retry_after, status_for

log = logging.getLogger("agentscope_teams.server")
M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")
#: Deepest nesting of arrays and objects a request body may have (checked before parsing).
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
Access = Literal["operator", "token"]


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

    def path(self, name: str) -> str:
        value: str = self.request.path_params[name]
        return value

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

    async def body(self, model: type[M]) -> M:
        """The JSON body validated as ``model``; 413 past the size limit, 422 when invalid
        or nested deeper than :data:`MAX_JSON_DEPTH` (refused before the parser recurses)."""
        limit = self.settings.max_body_bytes
        declared = self.request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        raw = bytearray()
        async for chunk in self.request.stream():
            raw += chunk
            if len(raw) > limit:
                raise _too_large(limit)
        check_json_depth(bytes(raw))
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            raise ValueError("the request body is not valid JSON") from None
        return model.model_validate(data)

    def query_int(self, name: str, default: int, *, low: int = 0, high: int = 1000) -> int:
        raw = self.request.query_params.get(name)
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


Handler = Callable[[Call], Awaitable[Any]]


@dataclass(frozen=True)
class Endpoint:
    """One API operation: route, handler and what the OpenAPI document says about it."""

    method: str
    path: str
    handler: Handler
    summary: str
    body: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    many: bool = False
    status: int = 200
    #: Other success statuses the handler may answer with (same body), e.g. 200 beside 201.
    also_ok: tuple[int, ...] = ()
    access: Access = "token"
    tag: str = "teams"
    query: Sequence[tuple[str, str]] = field(default_factory=tuple)


def render(result: Any, status: int) -> Response:
    if isinstance(result, Response):
        return result
    if result is None:
        return Response(status_code=204)
    if isinstance(result, BaseModel):
        return JSONResponse(result.model_dump(mode="json"), status_code=status)
    if isinstance(result, list):
        items = [r.model_dump(mode="json") if isinstance(r, BaseModel) else r for r in result]
        return JSONResponse(items, status_code=status)
    return JSONResponse(result, status_code=status)


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


def _endpoint(ep: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    async def run(request: Request) -> Response:
        call: Call | None = None
        found = False  # the request found the team of its path
        try:
            principal = await principal_of(request)
            call = Call(request, principal, request.app.state.store, request.app.state.settings)
            if ep.access == "operator":
                call.require_operator(ep.summary[:1].lower() + ep.summary[1:])
            if "team_id" in request.path_params:
                await call.team()
                found = True
            with tracing.incoming(request.headers):  # tasks it creates join the caller's trace
                return render(await ep.handler(call), ep.status)
        except Exception as exc:
            if found and call is not None and await _deleted_meanwhile(ep, call, exc):
                exc = call.deleted()
            return error_response(exc)

    return run


async def _deleted_meanwhile(ep: Endpoint, call: Call, exc: Exception) -> bool:
    """Whether the request failed because the team it had found was deleted meanwhile (its
    DELETE landed while the request was served). A failed DELETE keeps its own error."""
    return (
        ep.method != "DELETE"
        and isinstance(exc, _DELETION_ERRORS)
        and await call.client.is_deleted(call.team_id)
    )


def routes(endpoints: Sequence[Endpoint]) -> list[Route]:
    """One Starlette route per path, dispatching on the method."""
    by_path: dict[str, dict[str, Endpoint]] = {}
    for ep in endpoints:
        by_path.setdefault(ep.path, {})[ep.method] = ep
    out = []
    for path, methods in by_path.items():
        handlers = {m: _endpoint(ep) for m, ep in methods.items()}

        async def dispatch(request: Request, handlers: dict[str, Any] = handlers) -> Response:
            method = "GET" if request.method == "HEAD" else request.method
            handler: Callable[[Request], Awaitable[Response]] = handlers[method]
            return await handler(request)

        out.append(Route(path, dispatch, methods=list(methods)))
    return out
