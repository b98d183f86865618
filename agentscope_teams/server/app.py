"""``create_app(store)``: the control plane as one ASGI application (Starlette).

Routes: the JSON API under ``/api`` (:mod:`.api`, :mod:`.mail_api`, :mod:`.read_api`), the team
event stream (:mod:`.events`), ``/openapi.json``, the health checks ``/healthz`` (the process answers)
and ``/readyz`` (the store answers a read; 503 with the reason if not), ``/metrics`` (Prometheus
text, :mod:`agentscope_teams.tracing.metrics`; no token needed: no label holds tenant data) and the
dashboard (``/`` and ``/static/*``, plain files from ``dashboard/``; no build step). The store belongs to the caller:
the app never closes it. Authentication and scopes: :mod:`.auth`.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..store.base import BaseStore
from ..store.health import store_unready
from ..teams.rules.limits import config_lease
from ..tracing import metrics as process_metrics
from . import api, events, mail_api, read_api, review_api
from .openapi import openapi_document
from .routing import Endpoint, Settings, routes

DASHBOARD = Path(__file__).with_name("dashboard")
ENDPOINTS: list[Endpoint] = [
    *api.ENDPOINTS,
    *mail_api.ENDPOINTS,
    *read_api.ENDPOINTS,
    *review_api.ENDPOINTS,
]
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


class SecurityHeaders:
    """Adds headers that keep the dashboard (and a token in its URL) to itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", _CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(
    store: BaseStore,
    *,
    task_lease: float = 60.0,
    max_body_bytes: int = 1024 * 1024,
    poll_interval: float = 0.5,
    heartbeat_seconds: float = 15.0,
    resume_seconds: float = 600.0,
    trace_url: str | None = None,
    metrics: bool = True,
) -> Starlette:
    """The control-plane app over ``store`` (which the caller opens and closes).

    ``task_lease``: default task lease of claims; ``max_body_bytes``: request bodies over it get
    413; ``poll_interval``: how often event streams read the store; ``heartbeat_seconds``: how
    often an idle event stream sends a comment; ``resume_seconds``: how long after an event a
    stream can at least be resumed from its id (:mod:`.stream_log`); ``trace_url``: the trace page of an OTLP UI with a
    ``{trace_id}`` placeholder (e.g. ``http://localhost:16686/trace/{trace_id}``), for the
    dashboard's links from a team and its tasks to their traces; ``metrics``: serve ``/metrics``
    (turns this process's metrics on).
    """
    document = openapi_document(ENDPOINTS)
    if metrics:
        process_metrics.enable()

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        reason = await store_unready(store)
        if reason is not None:
            return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def metrics_text(request: Request) -> Response:
        return Response(process_metrics.render(), media_type=process_metrics.CONTENT_TYPE)

    async def dashboard_config(request: Request) -> Response:
        return JSONResponse({"trace_url": trace_url})

    async def index(request: Request) -> Response:
        return FileResponse(DASHBOARD / "index.html", headers={"Cache-Control": "no-store"})

    app = Starlette(
        routes=[
            *routes(ENDPOINTS),
            *events.ROUTES,
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            *([Route("/metrics", metrics_text, methods=["GET"])] if metrics else []),
            Route("/dashboard/config", dashboard_config, methods=["GET"]),
            Route("/", index, methods=["GET"]),
            Mount("/static", StaticFiles(directory=DASHBOARD), name="static"),
        ],
        middleware=[Middleware(SecurityHeaders)],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.store = store
    app.state.closing = False
    app.state.settings = Settings(
        task_lease=config_lease(task_lease),
        max_body_bytes=max_body_bytes,
        poll_interval=poll_interval,
        heartbeat_seconds=heartbeat_seconds,
        resume_seconds=resume_seconds,
    )
    return app


def request_shutdown(app: Starlette) -> None:
    """Make open event streams end (within one poll interval) so the server can stop quickly."""
    app.state.closing = True


async def _http_error(request: Request, exc: Exception) -> Response:
    """Routing errors (unknown path, wrong method) in the API's error format."""
    assert isinstance(exc, HTTPException)
    kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
    body = {
        "error": {"type": kind, "message": f"{request.method} {request.url.path}: {exc.detail}"}
    }
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
