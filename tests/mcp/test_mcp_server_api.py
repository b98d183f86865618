"""McpAgentServer in process (the SDK's in-memory transport): structured output, a HITL pause,
a failing agent as a tool error."""

from __future__ import annotations

from pathlib import Path

import mcp

from agentscope_teams import HarnessAgent, ScriptedModel
from agentscope_teams.errors import ModelError, StoreUnavailableError
from agentscope_teams.mcp_server import AgentTool, McpAgentServer
from agentscope_teams.mcp_server.server import Identity
from agentscope_teams.model import ModelRequest, ModelResponse
from agentscope_teams.store.base import Entry, Key
from agentscope_teams.store.memory import InMemoryStore

from ..agent.output_helpers import Report, make_agent

REPORT = {"findings": [{"file": "a.py", "line": 3, "message": "bad"}], "summary": "1 finding"}


async def test_structured_output_is_declared_and_returned(tmp_path: Path) -> None:
    model = ScriptedModel([ScriptedModel.final_result(REPORT)])
    async with make_agent("memory://", tmp_path, model) as agent:
        server = McpAgentServer([AgentTool(agent, output_type=Report)])
        async with mcp.Client(server.server, cache=None) as client:
            tool = (await client.list_tools()).tools[0]
            result = await client.call_tool("lead", {"message": "review a.py"})
    assert tool.output_schema is not None and "findings" in tool.output_schema["properties"]
    assert not result.is_error
    assert result.structured_content == REPORT


async def test_a_pause_for_confirmation_is_a_result_naming_the_reply(tmp_path: Path) -> None:
    model = ScriptedModel([ScriptedModel.tool_call("deploy", {"target": "prod"})])
    async with make_agent("memory://", tmp_path, model) as agent:
        server = McpAgentServer([AgentTool(agent)])
        async with mcp.Client(server.server, cache=None) as client:
            result = await client.call_tool("lead", {"message": "deploy", "session_id": "d1"})
    assert not result.is_error
    meta = result.meta["agentscope_teams"]
    assert meta["status"] == "awaiting_confirmation" and meta["tool_calls"] == ["deploy"]
    assert meta["session_id"] == "d1"
    assert meta["reply_id"] in result.content[0].text and "deploy" in result.content[0].text


async def test_a_failing_agent_is_a_tool_error_and_the_server_goes_on(tmp_path: Path) -> None:
    answers = iter([ModelError("provider down"), ScriptedModel.text("back")])

    def flaky(request: ModelRequest) -> ModelResponse:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async with make_agent("memory://", tmp_path, ScriptedModel(flaky)) as agent:
        server = McpAgentServer([AgentTool(agent)])
        async with mcp.Client(server.server, cache=None) as client:
            failed = await client.call_tool("lead", {"message": "hi", "session_id": "f1"})
            unknown = await client.call_tool("nobody", {"message": "hi"})
            ok = await client.call_tool("lead", {"message": "again", "session_id": "f2"})
    assert failed.is_error and "provider down" in failed.content[0].text
    assert unknown.is_error and "lead" in unknown.content[0].text
    assert not ok.is_error and ok.content[0].text == "back"


class _UnreachableStore(InMemoryStore):
    """A memory store whose reads fail, once ``down``, as an unreachable SQL store's do: the
    message names where the store is, the public form does not."""

    down = False

    async def get(self, key: Key) -> Entry | None:
        if self.down:
            raise StoreUnavailableError(
                "cannot reach postgresql://teams@10.1.2.3:5432/tenants_db: connection refused",
                public="the PostgreSQL store cannot be reached; the server's log names the cause",
            )
        return await super().get(key)


async def test_a_store_failure_is_a_tool_error_without_the_store_location(tmp_path: Path) -> None:
    store = _UnreachableStore()
    agent = HarnessAgent(
        "lead",
        ScriptedModel([ScriptedModel.text("hi")]),
        store=store,
        workspace=tmp_path,
        builtin_tools=False,
    )
    async with agent:
        server = McpAgentServer([AgentTool(agent)])
        store.down = True
        async with mcp.Client(server.server, cache=None) as client:
            failed = await client.call_tool("lead", {"message": "hi", "session_id": "s1"})
    text = failed.content[0].text
    assert failed.is_error and "cannot be reached" in text
    assert "10.1.2.3" not in text and "tenants_db" not in text and "teams@" not in text


async def test_a_session_id_that_is_not_a_string_is_a_tool_error(tmp_path: Path) -> None:
    """Not a call in the default session: the caller named another one, in the wrong type."""
    model = ScriptedModel([ScriptedModel.text("one"), ScriptedModel.text("two")])
    async with make_agent("memory://", tmp_path, model) as agent:
        server = McpAgentServer([AgentTool(agent)])
        async with mcp.Client(server.server, cache=None) as client:
            bad = await client.call_tool("lead", {"message": "hi", "session_id": 5})
            ok = await client.call_tool("lead", {"message": "hi", "session_id": "5"})
    assert bad.is_error and "session_id" in bad.content[0].text
    assert not ok.is_error and ok.content[0].text == "one"  # the bad call ran no model


async def test_an_mcp_session_answers_only_the_token_that_opened_it(tmp_path: Path) -> None:
    """Another caller naming a session's Mcp-Session-Id is answered as if it did not exist (404),
    so it can neither use nor end (DELETE) it; the session's own caller still can."""
    import httpx

    from agentscope_teams.mcp_server import TokenTable

    tokens = TokenTable(
        {"tok-alice": Identity("alice", "acme"), "tok-bob": Identity("bob", "acme")}
    )
    model = ScriptedModel([ScriptedModel.text("hi")])
    async with make_agent("memory://", tmp_path, model) as agent:
        server = McpAgentServer([AgentTool(agent)], tokens=tokens)
        app = server.http_app()
        accept = {"Accept": "application/json, text/event-stream"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        transport = httpx.ASGITransport(app=app)
        async with (
            server.running(),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http,
        ):
            opened = await http.post(
                "/mcp", json=init, headers={**accept, "Authorization": "Bearer tok-alice"}
            )
            session = opened.headers["mcp-session-id"]

            def as_(token: str) -> dict[str, str]:
                return {**accept, "Authorization": f"Bearer {token}", "Mcp-Session-Id": session}

            bob_ping = await http.post("/mcp", json=ping, headers=as_("tok-bob"))
            bob_end = await http.delete("/mcp", headers=as_("tok-bob"))
            alice_ping = await http.post("/mcp", json=ping, headers=as_("tok-alice"))
    assert opened.status_code == 200
    assert (bob_ping.status_code, bob_end.status_code) == (404, 404)
    assert alice_ping.status_code == 200
