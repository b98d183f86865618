"""``agentscope-teams serve --mcp``: the control plane publishes the lead agent as an MCP tool over
streamable HTTP at ``/mcp``, driven by the ``mcp`` SDK's own client against a real ``serve``
process. Callers use the control plane's operator tokens; an MCP session is one conversation."""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ..cli.conftest import CLI, REPO, Cli
from .test_http import free_port
from .test_mcp_server import texts


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """The console script over one store for the module (its tests share one server)."""
    return Cli(tmp_path_factory.mktemp("serve-mcp"))


@contextlib.contextmanager
def serving(cli: Cli, *options: str, cwd: Path = REPO) -> Iterator[tuple[int, str]]:
    """A ``serve --user alice`` process on a free port with ``options``: its port and the
    operator token it printed once it listens; stopped when the block ends."""
    port = free_port()
    args = ["--store", cli.url, "serve", "--port", str(port), "--user", "alice", *options]
    env = cli.env(PYTHONPATH=str(REPO))
    proc = subprocess.Popen([str(CLI), *args], env=env, cwd=cwd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]  # printed once it listens
        assert lines[0].startswith("agentscope-teams control plane on"), lines
        yield port, lines[3].strip()
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.fixture(scope="module")
def served(cli: Cli) -> Iterator[tuple[str, str]]:
    """A ``serve --mcp`` process: its MCP URL and the operator token it printed."""
    specs = cli.tmp_path / "specs"
    specs.mkdir()
    (specs / "helper.md").write_text("---\ndescription: A helper.\n---\nHelp.\n")
    model = "python:tests.mcp.serve_model:model"
    with serving(cli, "--mcp", "--specs", str(specs), "--model", model) as (port, token):
        yield f"http://127.0.0.1:{port}/mcp", token


async def _session(
    url: str, token: str, *messages: str, mode: str = "auto"
) -> tuple[list[str], list[Any]]:
    """Tools listed and each message's result, in one MCP client; progress messages too."""
    progress: list[Any] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        mcp.Client(streamable_http_client(url, http_client=http), cache=None, mode=mode) as c,
    ):
        tools = [t.name for t in (await c.list_tools()).tools]
        results = [
            await c.call_tool("lead", {"message": m}, progress_callback=on_progress)
            for m in messages
        ]
    return tools, [results, progress]


def test_serve_mcp_answers_and_reports_progress(served: tuple[str, str]) -> None:
    url, token = served
    tools, (results, progress) = anyio.run(_session, url, token, "list your runs", "hello")
    assert tools == ["lead"]
    listed, echoed = results
    assert not listed.is_error and texts(listed) == "listed"
    assert texts(echoed) == "echo: hello"
    assert progress == [  # per call, numbered from 1, sent while it runs
        (1, "calling agent_list"),
        (2, "agent_list returned"),
        (3, "answering"),
        (1, "answering"),
    ]


def test_serve_mcp_a_crash_is_a_tool_error_without_its_internals(served: tuple[str, str]) -> None:
    """An exception that is not a library error (a bug, an OS error) says nothing of the server
    (paths, hosts) to the caller, as the MCP SDK's own servers do; the server's log has it."""
    url, token = served
    _, ([crashed, after], _) = anyio.run(_session, url, token, "crash", "hello")
    assert crashed.is_error and "server's log" in texts(crashed)
    assert "/srv/agentscope" not in texts(crashed) and "provider.key" not in texts(crashed)
    assert not after.is_error and texts(after) == "echo: hello"  # the server goes on


def test_serve_mcp_one_conversation_per_mcp_session(cli: Cli, served: tuple[str, str]) -> None:
    url, token = served
    _, ([first, second], _) = anyio.run(
        functools.partial(_session, url, token, "hi", "recall", mode="legacy")
    )
    assert texts(second) == "you said 2 things"  # the second call continued the first's
    session = first.meta["agentscope_teams"]["session_id"]
    assert second.meta["agentscope_teams"]["session_id"] == session
    shown = cli("sessions", "show", session, "--agent", "lead", "--user", "alice", "--json")
    assert "hi" in shown.stdout and "recall" in shown.stdout  # stored as the token's user
    _, ([fresh], _) = anyio.run(functools.partial(_session, url, token, "recall", mode="legacy"))
    assert texts(fresh) == "you said 1 things"  # another MCP session, another conversation


def test_serve_mcp_refuses_requests_without_a_known_token(served: tuple[str, str]) -> None:
    url, token = served
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer not-a-known-token"}):
        refused = httpx.post(url, json=body, headers={**headers, **auth})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    known = httpx.post(url, json=body, headers={**headers, "Authorization": f"Bearer {token}"})
    assert known.status_code != 401  # control: the operator token gets past the gate


def test_serve_mcp_head_opens_no_stream(served: tuple[str, str]) -> None:
    """HEAD of /mcp is the MCP SDK's own answer (no HEAD in streamable HTTP), not a GET that
    opens the session's server-to-client stream and holds the connection."""
    url, token = served
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
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
    with httpx.Client(timeout=10) as one_connection:
        opened = one_connection.post(url, json=init, headers=headers)
        session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert one_connection.post(url, json=done, headers=session).status_code == 202
        head = one_connection.head(url, headers=session)
        assert head.status_code == 405 and head.content == b""
        after = one_connection.post(
            url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=session
        )  # the same keep-alive connection
        assert after.status_code == 200


def test_serve_mcp_callers_do_not_share_a_workspace(cli: Cli, tmp_path: Path) -> None:
    """Two identities (the operator token and a token of --mcp-tokens): a file one's agent wrote
    is not there for the other's (both worked in the server's directory)."""
    specs, served = tmp_path / "specs", tmp_path / "served"
    specs.mkdir()
    served.mkdir()
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"bob-mcp-token-0123456789": {"user": "bob", "org": "acme"}}))
    model = "python:tests.mcp.serve_model:model"
    options = ["--mcp", "--specs", str(specs), "--model", model, "--mcp-tokens", str(tokens)]
    with serving(cli, *options, cwd=served) as (port, alice):
        url = f"http://127.0.0.1:{port}/mcp"
        _, ([wrote, again], _) = anyio.run(
            _session, url, alice, "note alice's 41", "read the notes"
        )
        _, ([bob], _) = anyio.run(_session, url, "bob-mcp-token-0123456789", "read the notes")
    assert not wrote.is_error and "alice's 41" in texts(again)  # control: alice reads her file
    assert "alice's 41" not in texts(bob)
    assert not (served / "notes.txt").exists()
