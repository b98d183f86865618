"""``a2a.headers`` (API keys) go only to the origin of ``a2a.url``: an Agent Card naming an endpoint
on another host or port gets the requests without them, and a warning names both origins."""

from __future__ import annotations

import logging

import anyio
import httpx
import pytest

from .conftest import KEY
from .helpers import processes

pytest.importorskip("a2a")


def test_headers_stay_on_the_configured_origin_when_the_card_names_another(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from agentscope_teams import RuntimeContext
    from agentscope_teams.a2a import RemoteA2AModel, RemoteAgentConfig
    from agentscope_teams.store.memory import InMemoryStore

    with processes(["tests.a2a.elsewhere_server", "agent"]) as (agent_port,):
        card_argv = ["tests.a2a.elsewhere_server", "card", str(agent_port)]
        with processes(card_argv) as (card_port,):
            card, agent = f"http://127.0.0.1:{card_port}", f"http://127.0.0.1:{agent_port}"
            config = RemoteAgentConfig(url=card, headers={"X-Api-Key": KEY}, retries=0, poll=0.1)
            model = RemoteA2AModel("elsewhere", config, InMemoryStore())
            ctx = RuntimeContext(session_id="child-1", user_id="alice")
            with caplog.at_level(logging.WARNING, logger="agentscope_teams.a2a.remote"):
                reply = anyio.run(model.ask, ctx, "hi")
            card_saw = httpx.get(f"{card}/seen").json()
            agent_saw = httpx.get(f"{agent}/seen").json()
    assert reply.text == "remote says: hi"  # the agent still answers (it asks for no key)
    assert card_saw and set(card_saw) == {KEY}  # the configured origin got the key
    assert agent_saw and set(agent_saw) == {""}  # the card's other origin never did
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(card in w and agent in w and "a2a.headers" in w for w in warned), warned
