"""The A2A app: one Agent Card and one JSON-RPC endpoint per exposed agent, behind bearer auth.

:func:`a2a_app` returns an ASGI app (Starlette) serving each :class:`ExposedAgent` under
``/<name>/``: its card at ``/<name>/.well-known/agent-card.json``, JSON-RPC at ``/<name>/``. The
card's interface URL is the operator's: ``public_url`` (where clients reach the app) when given,
else the address of the socket the request came in on and the path the app is mounted at; never
the request's ``Host`` header, which any client sets (a card naming the client's choice of host
would send other clients there). The SDK's
request handler does the protocol (send, streaming send, get, list, cancel, resubscribe, push
configs) in its cluster mode: the task records, their events and push configs live in our store
(:mod:`.stores`, :mod:`.cluster`), so any process sharing it serves any task.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import BasePushNotificationSender
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, TransportProtocol
from google.protobuf.json_format import MessageToDict

from .._version import __version__
from ..compose import HarnessAgent
from ..errors import ConfigurationError
from ..store.base import BaseStore, signals_of
from ..subagents.extension import SubagentExtension
from .auth import CallerContextBuilder, Verifier, guarded
from .backfill import backfill_ttls
from .cluster import StoreTaskEventStream, VersionedTasks
from .executor import AgentTaskExecutor
from .handler import PublicErrorsHandler
from .lifetimes import INPUT_TIMEOUT_SECONDS, TASK_RETENTION_SECONDS, Lifetimes
from .stores import StorePushConfigStore, StoreTaskStore

_DESCRIPTION_CHARS = 1000
#: How long a process keeps the in-memory runner of a task paused for input.
RELEASE_PAUSED_SECONDS = 60.0
#: The largest request body accepted (the SDK reads and parses any body whole); a larger one is
#: answered "Payload too large" before it is read.
MAX_BODY_BYTES = 10 * 1024 * 1024


@dataclass
class ExposedAgent:
    """One agent published over A2A: ``description`` defaults to its system prompt;
    ``output_type`` (as for ``HarnessAgent.call``) makes every answer carry a ``DataPart``."""

    agent: HarnessAgent
    description: str = ""
    output_type: Any = None

    @property
    def name(self) -> str:
        return self.agent.name


def agent_card(exposed: ExposedAgent, url: str, *, auth: bool = True) -> AgentCard:
    """The Agent Card of ``exposed`` served at ``url``: a skill for the agent itself and one per
    subagent spec it can spawn (their descriptions), the bearer scheme when ``auth``."""
    agent = exposed.agent
    description = (exposed.description or agent.system_prompt or agent.name)[:_DESCRIPTION_CHARS]
    skills = [AgentSkill(id=agent.name, name=agent.name, description=description, tags=["lead"])]
    for ext in agent.extensions:
        if isinstance(ext, SubagentExtension):
            skills += [
                AgentSkill(id=name, name=name, description=spec.description, tags=["subagent"])
                for name, spec in sorted(ext.specs.items())
            ]
    output_modes = ["text/plain", *(["application/json"] if exposed.output_type else [])]
    card = AgentCard(
        name=agent.name,
        description=description,
        version=__version__,
        supported_interfaces=[
            AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=output_modes,
        skills=skills,
    )
    if auth:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    return card


def check_public_url(url: str, name: str = "public_url") -> str:
    """``url`` without its trailing ``/`` when it is an http(s) URL with a host and no query or
    fragment; else a :class:`ConfigurationError` naming ``name`` (the parameter or flag) and what
    to give."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigurationError(
            f"{name} {url!r} is not an http(s) URL clients can reach the server at; give the "
            "scheme and host (and any path), no query or fragment, e.g. https://agents.example.com"
        )
    return url.rstrip("/")


def _bound_url(scope: Any) -> str:
    """The URL of the app a request reached, from the socket it came in on (the ASGI ``server``:
    the bound address, not the ``Host`` header) and the path the app is mounted at."""
    scheme = "https" if scope.get("scheme") == "https" else "http"
    server = scope.get("server")
    if server and server[1] is not None:
        host, port = str(server[0]), int(server[1])
        host = f"[{host}]" if ":" in host else host
        default = (scheme == "http" and port == 80) or (scheme == "https" and port == 443)
        where = host if default else f"{host}:{port}"
    else:  # a Unix socket: no address a client could use; the operator should set public_url
        where = "localhost"
    return f"{scheme}://{where}{scope.get('root_path', '')}"


def _not_served(names: list[str]) -> Any:
    """The answer to a path that is no exposed agent's: JSON naming the path and the agents."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    async def answer(request: Request, exc: Exception) -> JSONResponse:
        del exc
        root = str(request.scope.get("root_path", ""))
        for name in names:  # raised under an agent's mount: the app's own root is above it
            if root.endswith(f"/{name}"):
                root = root[: -len(name) - 1]
                break
        served = ", ".join(f"{root}/{n}/" for n in names)
        text = (
            f"no A2A agent at {request.url.path!r}; this server serves {served} (JSON-RPC at "
            "the agent's path, its Agent Card at .well-known/agent-card.json under it)"
        )
        return JSONResponse({"error": text}, status_code=404)

    return answer


def _agent_routes(
    exposed: ExposedAgent,
    store: BaseStore,
    auth: bool,
    private_push: bool,
    lifetimes: Lifetimes,
    public_url: str | None,
) -> tuple[list[Any], StoreTaskEventStream, Any]:
    import httpx
    from a2a.utils.push_url_validator import validate_push_notification_url
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    tasks = StoreTaskStore(
        store, exposed.name, retention=lifetimes.retention, input_timeout=lifetimes.input_timeout
    )
    pushes = StorePushConfigStore(store, exposed.name, tasks)
    # a push URL is where this server will POST: no loopback/private hosts unless allowed (SSRF)
    push_check = None if private_push else validate_push_notification_url
    events = StoreTaskEventStream(store, exposed.name)
    push_client = httpx.AsyncClient(timeout=10)
    executor = AgentTaskExecutor(  # a store with signals tells of a cancel at once: follow it
        exposed.agent,
        tasks,
        output_type=exposed.output_type,
        events=events if signals_of(store) is not None else None,
    )
    handler = PublicErrorsHandler(  # a store error reaches the caller without the store's URL
        agent_executor=executor,
        task_store=VersionedTasks(tasks, pushes),
        task_retention=lifetimes.retention,
        event_stream=events,
        # a paused task's runner is let go (the answer may reach any process; it is rebuilt
        # from the store where it does), by its input time-out at the latest: a runner kept
        # longer would take an answer to a task the store says has ended
        interrupted_task_timeout=RELEASE_PAUSED_SECONDS,
        agent_card=agent_card(exposed, "http://localhost/", auth=auth),
        push_config_store=pushes,
        push_sender=BasePushNotificationSender(push_client, pushes, push_url_validator=push_check),
        push_url_validator=push_check,
    )

    async def card(request: Request) -> JSONResponse:
        base = f"{public_url}/{exposed.name}" if public_url else _bound_url(request.scope)
        return JSONResponse(MessageToDict(agent_card(exposed, base + "/", auth=auth)))

    routes = [
        Route(AGENT_CARD_WELL_KNOWN_PATH, card, methods=["GET"]),
        *create_jsonrpc_routes(handler, "/", context_builder=CallerContextBuilder()),
    ]
    return routes, events, push_client


class A2AApp:
    """The ASGI app :func:`a2a_app` returns. Its event streams own tasks (the deletions of ended
    tasks' streams) and it owns the HTTP clients that send push notifications: :meth:`aclose` ends
    them; the app's own lifespan does (when it is the served app), and so must whoever mounts it
    in another app (``serve --a2a`` does). :meth:`backfill` gives the task records of an older
    release their TTL (``serve --a2a`` runs it once at start-up)."""

    def __init__(
        self,
        asgi: Any,
        streams: Sequence[StoreTaskEventStream],
        clients: Sequence[Any] = (),
        *,
        store: BaseStore | None = None,
        lifetimes: Lifetimes | None = None,
    ) -> None:
        self.asgi, self.streams, self.clients = asgi, list(streams), list(clients)
        self.store, self.lifetimes = store, lifetimes or Lifetimes()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.asgi(scope, receive, send)

    async def backfill(self) -> int:
        """:func:`~.backfill.backfill_ttls` of the app's store (0 without one)."""
        if self.store is None:
            return 0
        return await backfill_ttls(self.store, self.lifetimes)

    async def aclose(self) -> None:
        """End every task the app's event streams still own (see ``StoreTaskEventStream``) and
        close its push-notification clients."""
        for stream in self.streams:
            await stream.aclose()
        for client in self.clients:
            await client.aclose()


def a2a_app(
    agents: Sequence[ExposedAgent],
    store: BaseStore,
    *,
    verifier: Verifier | None,
    anonymous: bool = False,
    public_card: bool = False,
    private_push: bool = False,
    max_body_bytes: int = MAX_BODY_BYTES,
    task_retention: float = TASK_RETENTION_SECONDS,
    public_url: str | None = None,
    input_timeout: float = INPUT_TIMEOUT_SECONDS,
) -> A2AApp:
    """The ASGI app publishing ``agents`` over A2A (JSON-RPC), tasks kept in ``store``.

    ``verifier`` maps a bearer token to its caller; a request it does not know gets 401, unless
    the operator says ``anonymous`` (everyone may call, as the anonymous user) or ``public_card``
    (the cards only). Push-notification URLs on loopback, private or link-local hosts are refused
    unless ``private_push``. A request body over ``max_body_bytes`` is refused unread. A task that
    has ended is kept ``task_retention`` seconds (a day by default), then reading it is "task not
    found"; one waiting for input is cancelled after ``input_timeout`` seconds without it (7 days
    by default), then kept as ended ones are (:mod:`.lifetimes`). ``public_url`` is where clients
    reach this app (``https://agents.example.com/a2a`` for a mount at ``/a2a`` behind a proxy):
    each card names ``<public_url>/<name>/``; without it, the bound address and the mount path
    (never the request's Host header). Mount it anywhere (``app.mount("/a2a", a2a_app(...))``)
    and await its ``aclose()`` when the host app stops (its lifespan does, when served alone).
    """
    import contextlib

    from starlette.applications import Starlette
    from starlette.routing import Mount

    lifetimes = Lifetimes(task_retention, input_timeout)
    base = None if public_url is None else check_public_url(public_url)
    names = [a.name for a in agents]
    if not agents or len(set(names)) != len(names):
        raise ConfigurationError(f"expose one or more agents with distinct names (got {names})")
    mounts, streams, clients = [], [], []
    for exposed in agents:
        routes, stream, client = _agent_routes(
            exposed, store, not anonymous, private_push, lifetimes, base
        )
        mounts.append(Mount(f"/{exposed.name}", routes=routes))
        streams.append(stream)
        clients.append(client)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        yield
        await served.aclose()

    app = Starlette(
        routes=mounts,
        lifespan=lifespan,
        max_body_size=max_body_bytes,
        exception_handlers={404: _not_served(names)},
    )
    guarded_app = guarded(app, verifier, anonymous=anonymous, public_card=public_card)
    served = A2AApp(guarded_app, streams, clients, store=store, lifetimes=lifetimes)
    return served
