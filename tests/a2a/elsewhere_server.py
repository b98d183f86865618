"""Two servers for the Agent Card origin test, each recording the ``X-Api-Key`` of every request
it gets (``""`` when none came); ``GET /seen`` returns the list.

``python -m tests.a2a.elsewhere_server agent PORT``: remote_server's agent, asking for no key.
``python -m tests.a2a.elsewhere_server card AGENT_PORT PORT``: only an Agent Card, naming the agent
on ``AGENT_PORT`` (another origin) as its endpoint.
"""

from __future__ import annotations

import sys

import uvicorn
from a2a.server.routes import create_agent_card_routes
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .remote_server import agent_card, open_app


def recording(inner: Starlette) -> Starlette:
    seen: list[str] = []

    async def show(request: Request) -> JSONResponse:
        return JSONResponse(seen)

    shown = Starlette(routes=[Route("/seen", show)])

    async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if scope["type"] == "http" and scope["path"] == "/seen":
            await shown(scope, receive, send)  # type: ignore[arg-type]
            return
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            seen.append(headers.get(b"x-api-key", b"").decode())
        await inner(scope, receive, send)  # type: ignore[arg-type]

    return app  # type: ignore[return-value]


if __name__ == "__main__":
    port = int(sys.argv[-1])
    if sys.argv[1] == "agent":
        served = open_app(port)
    else:
        card = agent_card(f"http://127.0.0.1:{int(sys.argv[2])}/")
        served = Starlette(routes=create_agent_card_routes(card))
    uvicorn.run(recording(served), host="127.0.0.1", port=port, log_level="warning")
