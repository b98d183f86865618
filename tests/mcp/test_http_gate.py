"""The bearer gate of the MCP server's HTTP transport with anonymous callers allowed: only a request
without credentials is anonymous; a wrong token or a malformed header is 401, never the anonymous
user; a store that cannot check the token is 503 with ``Retry-After``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agentscope_teams.errors import StoreUnavailableError
from agentscope_teams.mcp_server.server import SCOPE_KEY, Identity, _Guarded

KNOWN = "known-token-0123456789"


async def _verifier(token: str) -> Identity | None:
    if token == "store-down":
        raise StoreUnavailableError(  # as a backend raises it: with its public form
            "redis://10.0.0.5:6379 is unavailable", public="the redis store cannot be reached"
        )
    return Identity("alice", "acme") if token == KNOWN else None


async def _app(scope: Any, receive: Any, send: Any) -> None:
    """Answers with the identity the gate put in the scope."""
    who = scope[SCOPE_KEY]
    body = f"{who.org_id}/{who.user_id}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


async def _post(headers: dict[str, str]) -> httpx.Response:
    gate = _Guarded(_app, _verifier, anonymous=True)
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://mcp") as client:
        return await client.post("/mcp", json={}, headers=headers)


@pytest.mark.anyio
async def test_only_a_request_without_credentials_is_anonymous() -> None:
    anonymous = await _post({})
    known = await _post({"Authorization": f"Bearer {KNOWN}"})
    assert (anonymous.status_code, anonymous.text) == (200, "None/None")
    assert (known.status_code, known.text) == (200, "acme/alice")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("Bearer not-a-known-token", "not known"),
        ("Basic YWxpY2U6cHc=", "not 'Bearer TOKEN'"),
        ("Bearer", "not 'Bearer TOKEN'"),
    ],
)
async def test_wrong_credentials_are_401_not_the_anonymous_user(header: str, said: str) -> None:
    answer = await _post({"Authorization": header})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert said in answer.json()["error"]


@pytest.mark.anyio
async def test_a_store_that_cannot_check_the_token_is_503_without_its_address() -> None:
    answer = await _post({"Authorization": "Bearer store-down"})
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "5"
    assert "10.0.0.5" not in answer.text and "could not be checked" in answer.text
