"""The control plane's cost per request, in CPU microseconds: run it on two checkouts to compare
the framework under the API (``docs/architecture.md``, "The control plane on FastAPI")::

    cd /tmp && PYTHONPATH=/path/to/checkout python /path/to/bench/server_framework.py

In-process (httpx's ASGI transport, no sockets), over an in-memory store, so what is timed is the
server's own work: routing, authentication, body checks and validation, the handler, the JSON
answer. Operations: get a team, create a task (a validated body), list 50 tasks (a 50-item answer).
Timed in CPU seconds of this process; the median of ``ROUNDS`` rounds of ``N`` requests each.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx

from agentscope_teams.server import create_app, issue_operator_token
from agentscope_teams.store import InMemoryStore

N = 100
ROUNDS = 5


async def main() -> None:
    store = InMemoryStore()
    token = await issue_operator_token(store, "acme", "alice")
    app = create_app(store, metrics=False)
    headers = {"Authorization": f"Bearer {token}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://x", headers=headers) as c:
        team = (await c.post("/api/teams", json={"name": "bench"})).json()["team"]
        t = f"/api/teams/{team['id']}"
        listed = f"/api/teams/{team['id']}/tasks"
        for i in range(50):
            assert (await c.post(listed, json={"title": f"task {i}"})).status_code == 201

        async def get_team() -> Any:
            return await c.get(t)

        other = (await c.post("/api/teams", json={"name": "writes"})).json()["team"]
        written = f"/api/teams/{other['id']}/tasks"

        async def create_task() -> Any:  # in another team: the listed one keeps its 50 tasks
            return await c.post(written, json={"title": "one more", "description": "x" * 200})

        async def list_all() -> Any:
            return await c.get(listed)

        async def whoami() -> Any:
            return await c.get("/api/whoami")

        ops: dict[str, Callable[[], Awaitable[Any]]] = {
            "GET whoami": whoami,
            "GET team": get_team,
            "GET tasks (50)": list_all,
            "POST task": create_task,
        }
        for name, op in ops.items():
            print(f"{name:22} {await per_request(op):8.1f} us CPU / request")


async def per_request(op: Callable[[], Awaitable[Any]]) -> float:
    await op()  # warm up
    rounds = []
    for _ in range(ROUNDS):
        start = time.process_time()
        for _ in range(N):
            await op()
        rounds.append((time.process_time() - start) / N * 1e6)
    return statistics.median(rounds)


if __name__ == "__main__":
    anyio.run(main)
