"""Who may call an A2A app: a request with no credentials is anonymous only when the operator
allows it; a request with credentials that are wrong (an unknown token) or malformed (not
``Bearer TOKEN``) is refused with 401 saying which, even where anonymous callers are let in, the
Agent Card included; a known token acts as its caller."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

pytest.importorskip("a2a")

from agentscope_teams import HarnessAgent
from agentscope_teams.a2a_server import Caller, ExposedAgent, StaticTokens, a2a_app
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore

from ..backends import unique_namespace

ALICE = "alice-a2a-token-0123456789"
CARD = "/lead/.well-known/agent-card.json"


def _body() -> dict[str, object]:
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


@pytest.fixture(params=[{"anonymous": True}, {"public_card": True}, {}])
async def http(request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app knowing alice's token, anonymous callers allowed (or the card only, or
    nothing)."""
    store = InMemoryStore()
    agent = HarnessAgent("lead", ScriptedModel(lambda r: "hello"), "lead", store=store)
    tokens = StaticTokens({ALICE: Caller("alice", unique_namespace())})
    app = a2a_app([ExposedAgent(agent)], store, verifier=tokens, **request.param)
    transport = httpx.ASGITransport(app=app)
    async with agent, httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        client.headers["A2A-Version"] = "1.0"
        yield client
    await app.aclose()


@pytest.mark.parametrize(
    ("authorization", "says"),
    [
        ("Bearer not-a-known-token", "not known"),
        ("Basic YWxpY2U6c2VjcmV0", "Bearer"),
        ("Bearer", "Bearer"),
        (ALICE, "Bearer"),  # the token without its scheme
    ],
)
async def test_wrong_or_malformed_credentials_are_refused(
    http: httpx.AsyncClient, authorization: str, says: str
) -> None:
    headers = {"Authorization": authorization}
    for answer in (
        await http.post("/lead/", json=_body(), headers=headers),
        await http.get(CARD, headers=headers),
    ):
        assert answer.status_code == 401, (authorization, answer.text)
        assert answer.headers["www-authenticate"].startswith("Bearer")
        error = answer.json()["error"]
        assert says in error and "Authorization: Bearer" in error, error  # what to send


async def test_no_credentials_are_anonymous_only_where_allowed(
    http: httpx.AsyncClient, request: pytest.FixtureRequest
) -> None:
    mode = request.node.callspec.params["http"]
    called, card = await http.post("/lead/", json=_body()), await http.get(CARD)
    assert card.status_code == (200 if mode else 401)  # anonymous or public_card
    if mode.get("anonymous"):  # the task runs as the anonymous caller
        assert called.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    else:
        assert called.status_code == 401
        assert "no credentials" in called.json()["error"], called.text
    known = await http.post("/lead/", json=_body(), headers={"Authorization": f"Bearer {ALICE}"})
    assert known.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_verifier_that_cannot_reach_its_store_is_503_without_the_store_location() -> None:
    """``serve --a2a`` checks operator tokens in the store: while it is away, a caller is told the
    credentials could not be checked (and to retry), not a bare 500; the store's URL stays in the
    server's log."""
    from agentscope_teams.errors import StoreUnavailableError

    async def verifier(token: str) -> Caller | None:
        raise StoreUnavailableError(
            "cannot reach redis://10.1.2.3:6379/0: connection refused",
            public="the store cannot be reached",
        )

    store = InMemoryStore()
    agent = HarnessAgent("lead", ScriptedModel(lambda r: "hello"), "lead", store=store)
    app = a2a_app([ExposedAgent(agent)], store, verifier=verifier)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        answer = await http.post(
            "/lead/", json=_body(), headers={"Authorization": f"Bearer {ALICE}"}
        )
    await app.aclose()
    assert answer.status_code == 503, answer.text
    assert "retry-after" in answer.headers
    error = answer.json()["error"]
    assert "cannot be reached" in error and "retry" in error.lower(), error
    assert "10.1.2.3" not in error and "redis://" not in error, error
