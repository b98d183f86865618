"""MCP tools over streamable HTTP: a server written with the SDK, on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.store import InMemoryStore

from .helpers import HERE, results_seen

TOKEN = "s3cret-token-value"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "http_server.py"), str(port), TOKEN])
    try:
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise RuntimeError("the test MCP server exited")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def config(url: str, header: str = "Bearer ${NOTES_TOKEN}") -> dict[str, object]:
    server = {"type": "http", "url": url, "headers": {"Authorization": header}}
    return {"notes": {**server, "trustAnnotations": True}}


async def test_http_tools_with_an_expanded_secret_header(
    http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", TOKEN)
    model = ScriptedModel(
        [
            ScriptedModel.tool_calls(
                [
                    ("mcp__notes__add_note", {"title": "plan", "body": "ship it"}),
                    ("mcp__notes__read_note", {"title": "plan"}),
                ]
            ),
            "done",
        ]
    )
    agent = HarnessAgent("lead", model, store=InMemoryStore(), mcp_servers=config(http_url))
    assert TOKEN not in repr(agent.mcp.servers["notes"].config)
    try:
        await agent.call("note it", RuntimeContext(session_id="s1", user_id="alice"))
    finally:
        await agent.aclose()
    stored, read = results_seen(model)
    assert not stored.is_error and "stored 'plan'" in stored.output
    assert not read.is_error and read.output == "ship it"


async def test_a_refused_connection_is_named_without_the_secret(http_url: str) -> None:
    model = ScriptedModel(["no tools"])
    agent = HarnessAgent(
        "lead", model, store=InMemoryStore(), mcp_servers=config(http_url, "Bearer wrong-token")
    )
    try:
        await agent.call("go", RuntimeContext(session_id="s1", user_id="alice"))
    finally:
        await agent.aclose()
    prompt = model.requests[0].system_prompt
    assert "MCP server 'notes' could not start" in prompt
    assert "wrong-token" not in prompt and "mcp__notes__add_note" not in [
        t.name for t in model.requests[0].tools
    ]


async def test_an_unreachable_url_is_named_without_its_query_or_user_info() -> None:
    port = free_port()  # nothing listens there
    url = f"http://user:hunter22@127.0.0.1:{port}/mcp?api_key=topsecret99"
    model = ScriptedModel(["no tools"])
    agent = HarnessAgent(
        "lead", model, store=InMemoryStore(), mcp_servers={"api": {"type": "http", "url": url}}
    )
    try:
        await agent.call("go", RuntimeContext(session_id="s1", user_id="alice"))
    finally:
        await agent.aclose()
    prompt = model.requests[0].system_prompt
    assert "MCP server 'api' could not start" in prompt
    assert "topsecret99" not in prompt and "hunter22" not in prompt
