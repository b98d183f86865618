"""The control plane tells the dashboard where traces are shown (``AGENTSCOPE_TEAMS_TRACE_URL``)."""

from __future__ import annotations

import httpx
import pytest

from agentscope_teams.server import create_app
from agentscope_teams.store.memory import InMemoryStore

pytestmark = pytest.mark.anyio


async def config(**options: str | None) -> object:
    app = create_app(InMemoryStore(), **options)  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://dash") as client:
        response = await client.get("/dashboard/config")
    assert response.status_code == 200
    return response.json()


async def test_the_dashboard_learns_the_trace_url_template() -> None:
    assert await config() == {"trace_url": None}
    url = "http://localhost:16686/trace/{trace_id}"
    assert await config(trace_url=url) == {"trace_url": url}
