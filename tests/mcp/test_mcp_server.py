"""Our agents as MCP tools: a real MCP client (the official SDK) against ``agentscope-teams
mcp-serve`` started as a subprocess with a scripted model, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ..cli.conftest import CLI, REPO, Cli, one_error_line
from .test_http import free_port

ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210"


def specs_and_script(tmp_path: Path, *turns: str) -> tuple[Path, Path]:
    specs = tmp_path / "specs"
    specs.mkdir()
    script = tmp_path / "script.yaml"
    script.write_text(json.dumps({"lead": list(turns)}))
    return specs, script


def conversation(cli: Cli, session: str, user: str) -> list[str]:
    """The texts of ``session`` of ``user`` as ``sessions show --json`` prints them."""
    shown = cli("sessions", "show", session, "--agent", "lead", "--user", user, "--json")
    assert shown.returncode == 0, shown.stderr
    return [line for line in shown.stdout.splitlines() if line.strip()]


def texts(result: Any) -> str:
    return "".join(block.text for block in result.content)


def test_stdio_tool_answers_and_the_session_continues(cli: Cli, tmp_path: Path) -> None:
    specs, script = specs_and_script(tmp_path, "first answer", "second answer")
    args = ["--store", cli.url, "mcp-serve", "--specs", str(specs)]
    args += ["--model", f"scripted:{script}", "--user", "alice"]
    params = StdioServerParameters(command=str(CLI), args=args, env=cli.env(), cwd=str(REPO))

    async def client() -> tuple[list[Any], Any, Any]:
        async with mcp.Client(stdio_client(params), cache=None) as c:
            tools = (await c.list_tools()).tools
            first = await c.call_tool("lead", {"message": "remember the word pelican"})
            second = await c.call_tool("lead", {"message": "which word did I say?"})
            bad = await c.call_tool("lead", {})
            return tools, first, (second, bad)

    tools, first, (second, bad) = anyio.run(client)
    assert [t.name for t in tools] == ["lead"]
    assert tools[0].input_schema["required"] == ["message"]
    assert not first.is_error and texts(first) == "first answer"
    assert not second.is_error and texts(second) == "second answer"
    assert bad.is_error and "message" in texts(bad)
    session = first.meta["agentscope_teams"]["session_id"]
    assert second.meta["agentscope_teams"]["session_id"] == session  # one per MCP session
    shown = "\n".join(conversation(cli, session, "alice"))
    for said in ("pelican", "which word", "first answer", "second answer"):
        assert said in shown  # both turns are in the one stored conversation


@pytest.fixture
def http_server(cli: Cli, tmp_path: Path) -> Iterator[str]:
    specs, script = specs_and_script(
        tmp_path, "answer one", "answer two", "answer three", "answer four", "answer five"
    )
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(json.dumps({ALICE: {"user": "alice"}, BOB: {"user": "bob", "org": "acme"}}))
    port = free_port()
    args = ["--store", cli.url, "mcp-serve", "--specs", str(specs), "--model", f"scripted:{script}"]
    args += ["--transport", "http", "--port", str(port), "--tokens", str(tokens)]
    proc = subprocess.Popen([str(CLI), *args], env=cli.env(), cwd=REPO)
    try:
        for _ in range(400):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise RuntimeError("mcp-serve exited")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def call(url: str, token: str, arguments: dict[str, str]) -> Any:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        mcp.Client(streamable_http_client(url, http_client=http), cache=None) as c,
    ):
        return await c.call_tool("lead", arguments)


def test_http_tokens_map_to_users_and_sessions_do_not_cross(cli: Cli, http_server: str) -> None:
    async def client() -> list[Any]:
        return [
            await call(http_server, ALICE, {"message": "alice's secret is 41", "session_id": "s"}),
            await call(http_server, BOB, {"message": "what did alice say?", "session_id": "s"}),
            await call(http_server, BOB, {"message": "and now?", "session_id": "s"}),
        ]

    alice, bob, bob_again = anyio.run(client)
    assert [texts(r) for r in (alice, bob, bob_again)] == [
        "answer one",
        "answer two",
        "answer three",
    ]
    alice_sees = "\n".join(conversation(cli, "s", "alice"))
    shown = cli(
        "sessions", "show", "s", "--agent", "lead", "--user", "bob", "--org", "acme", "--json"
    )
    bob_sees = shown.stdout
    assert "alice's secret is 41" in alice_sees and "what did alice say" not in alice_sees
    # the same session id string under bob's identity is bob's own conversation, both his turns
    assert "what did alice say" in bob_sees and "and now?" in bob_sees
    assert "alice's secret" not in bob_sees and "answer one" not in bob_sees


def test_http_default_session_continues_within_a_connection(cli: Cli, http_server: str) -> None:
    async def client() -> list[Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {ALICE}"})
        async with (
            http,
            mcp.Client(streamable_http_client(http_server, http_client=http), cache=None) as c,
        ):
            return [await c.call_tool("lead", {"message": f"turn {n}"}) for n in (1, 2)]

    first, second = anyio.run(client)
    session = first.meta["agentscope_teams"]["session_id"]
    assert second.meta["agentscope_teams"]["session_id"] == session
    shown = "\n".join(conversation(cli, session, "alice"))
    assert "turn 1" in shown and "turn 2" in shown


def test_http_arguments_outside_the_input_schema_are_tool_errors_naming_them(
    http_server: str,
) -> None:
    """The tool declares ``additionalProperties: false``: a misspelt ``session_id`` is not a
    call in the default session, and a message of the wrong type is not coerced."""

    async def client() -> list[Any]:
        return [
            await call(http_server, ALICE, {"message": "hi", "sesion_id": "mine"}),
            await call(http_server, ALICE, {"message": ["hi"]}),  # type: ignore[dict-item]
            await call(http_server, ALICE, {"message": "hi", "session_id": "mine"}),
        ]

    misspelt, wrong_type, ok = anyio.run(client)
    assert misspelt.is_error and "'sesion_id'" in texts(misspelt)
    assert "session_id" in texts(misspelt)  # says which arguments the tool takes
    assert wrong_type.is_error and "'message'" in texts(wrong_type)
    assert "string" in texts(wrong_type)
    assert not ok.is_error and texts(ok) == "answer one"  # the refused calls ran no model


def test_http_callers_do_not_share_a_workspace(cli: Cli, tmp_path: Path) -> None:
    """Over HTTP the tool serves several identities: a file one caller's agent writes is not
    there for another caller's agent (it was: every caller worked in the server's directory)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    write = {"name": "write_file", "input": {"path": "notes.txt", "content": "alice's 41"}}
    read = {"name": "read_file", "input": {"path": "notes.txt"}}
    script = tmp_path / "script.json"
    turns = [{"tool_calls": [write]}, "written", {"tool_calls": [read]}, "read"]
    script.write_text(json.dumps({"lead": turns}))
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(json.dumps({ALICE: {"user": "alice"}, BOB: {"user": "bob", "org": "acme"}}))
    served = tmp_path / "served"
    served.mkdir()
    port = free_port()
    args = ["--store", cli.url, "mcp-serve", "--specs", str(specs), "--model", f"scripted:{script}"]
    args += ["--transport", "http", "--port", str(port), "--tokens", str(tokens)]
    env = cli.env(PYTHONPATH=str(REPO))
    proc = subprocess.Popen([str(CLI), *args], env=env, cwd=served)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(400):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)

        async def client() -> list[Any]:
            return [
                await call(url, ALICE, {"message": "note it", "session_id": "s"}),
                await call(url, BOB, {"message": "what is in notes.txt?", "session_id": "s"}),
            ]

        wrote, read_back = anyio.run(client)
    finally:
        proc.terminate()
        proc.wait(10)
    assert (texts(wrote), texts(read_back)) == ("written", "read")
    assert "alice's 41" in "\n".join(conversation(cli, "s", "alice"))  # control: it was written
    shown = cli("sessions", "show", "s", "--agent", "lead", "--user", "bob", "--org", "acme")
    assert shown.returncode == 0 and "read_file" in shown.stdout
    assert "alice's 41" not in shown.stdout  # bob's agent did not read alice's file
    assert not (served / "notes.txt").exists()


def test_http_refuses_missing_and_unknown_tokens(http_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer not-a-known-token"}):
        answer = httpx.post(http_server, json=body, headers={**headers, **auth})
        assert answer.status_code == 401
    # control: a known token gets past the gate (the SDK then answers, not 401)
    known = httpx.post(
        http_server, json=body, headers={**headers, "Authorization": f"Bearer {ALICE}"}
    )
    assert known.status_code != 401


def test_http_without_tokens_and_a_bad_token_file_are_one_error_line(
    cli: Cli, tmp_path: Path
) -> None:
    specs, script = specs_and_script(tmp_path, "unused")
    base = ["mcp-serve", "--specs", str(specs), "--model", f"scripted:{script}"]
    no_tokens = cli(*base, "--transport", "http")
    assert no_tokens.returncode == 1 and "--tokens" in one_error_line(no_tokens)
    bad = tmp_path / "tokens.yaml"
    bad.write_text(json.dumps({"t0k3n": {"org": "acme"}}))
    userless = cli(*base, "--transport", "http", "--tokens", str(bad))
    assert userless.returncode == 1 and str(bad) in one_error_line(userless)
