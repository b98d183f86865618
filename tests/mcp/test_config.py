"""MCP configuration: Claude Code's .mcp.json format, ${VAR} expansion, clear errors, no secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.mcp import HttpServer, StdioServer, load_mcp_json, parse_servers
from agentscope_teams.store import InMemoryStore

ENV = {"TOKEN": "tok-123", "EMPTY": ""}


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(data))
    return path


def test_claude_code_format_with_expansion_and_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "mcpServers": {
                "git": {"command": "uvx", "args": ["mcp-server-git", "-r", "${REPO:-/srv/repo}"]},
                "api": {
                    "type": "http",
                    "url": "https://${HOST:-mcp.example.com}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                },
                "tool": {"command": "x", "env": {"MODE": "${EMPTY:-fallback}", "T": "${TOKEN}"}},
            }
        },
    )
    servers = load_mcp_json(path, environ=ENV)
    git, api, tool = servers["git"], servers["api"], servers["tool"]
    assert isinstance(git, StdioServer) and git.args == ("mcp-server-git", "-r", "/srv/repo")
    assert isinstance(api, HttpServer) and api.url == "https://mcp.example.com/mcp"
    assert api.headers == {"Authorization": "Bearer tok-123"}
    assert isinstance(tool, StdioServer) and tool.env == {"MODE": "fallback", "T": "tok-123"}
    assert load_mcp_json(tmp_path, environ=ENV) == servers  # a directory holding .mcp.json


def test_secrets_never_show_in_reprs() -> None:
    servers = parse_servers(
        {
            "api": {
                "type": "http",
                "url": "https://user:pw@mcp.example.com/mcp?key=${TOKEN}",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
            },
            "tool": {"command": "x", "args": ["--key", "${TOKEN}"], "env": {"KEY": "${TOKEN}"}},
        },
        "test",
        ENV,
    )
    for server in servers.values():
        for text in (repr(server), str(server), f"{server}"):
            assert "tok-123" not in text and "pw" not in text
    assert "Authorization" in repr(servers["api"]) and "KEY" in repr(servers["tool"])


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (
            {"command": "x", "env": {"K": "${NOPE}"}},
            "mcpServers.s.env.K: environment variable NOPE is not set",
        ),
        ({"type": "sse", "url": "http://x"}, "mcpServers.s.type: the deprecated SSE transport"),
        ({"type": "ws", "url": "http://x"}, "mcpServers.s.type: unknown transport 'ws'"),
        ({"type": "http"}, "mcpServers.s.url: Field required"),
        ({"command": "x", "cmd": "y"}, "mcpServers.s.cmd: unknown key"),
        ({"args": ["a"]}, "mcpServers.s.command: Field required"),
        ({"command": "x", "disabledTools": ["rm"]}, "mcpServers.s.disabledTools: not supported"),
        ({"command": "x", "disabled": "yes"}, "mcpServers.s.disabled: must be true or false"),
        ("npx thing", "mcpServers.s: a server must be a mapping"),
    ],
)
def test_bad_config_names_file_server_and_field(
    tmp_path: Path, server: object, expected: str
) -> None:
    path = write(tmp_path, {"mcpServers": {"s": server}})
    with pytest.raises(ConfigurationError) as err:
        load_mcp_json(path, environ={})
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value)


def test_bad_files_and_names(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"a": }')
    with pytest.raises(ConfigurationError, match=r"\.mcp\.json:1: invalid JSON"):
        load_mcp_json(tmp_path)
    with pytest.raises(ConfigurationError, match="cannot read the MCP configuration"):
        load_mcp_json(tmp_path / "missing.json")
    with pytest.raises(ConfigurationError, match="invalid server name 'a b'"):
        parse_servers({"a b": {"command": "x"}}, "cfg")
    with pytest.raises(ConfigurationError, match="unknown top-level keys"):
        parse_servers({"mcpServers": {}, "servers": {}}, "cfg")


def test_harness_agent_rejects_a_bad_mcp_servers_argument() -> None:
    with pytest.raises(ConfigurationError, match="mcp_servers must be"):
        HarnessAgent("a", "offline", store=InMemoryStore(), mcp_servers=42)


def test_a_missing_variable_fails_at_construction_not_at_first_use(tmp_path: Path) -> None:
    path = write(tmp_path, {"mcpServers": {"api": {"type": "http", "url": "${MCP_URL_UNSET}"}}})
    with pytest.raises(ConfigurationError, match="MCP_URL_UNSET is not set"):
        HarnessAgent("a", "offline", store=InMemoryStore(), mcp_servers=path)


async def test_no_server_starts_until_a_call() -> None:
    agent = HarnessAgent(
        "a", "offline", store=InMemoryStore(), mcp_servers={"x": {"command": "/nonexistent"}}
    )
    await agent.aclose()
    assert agent.mcp.pool.starts == 0


def test_other_clients_keys_load_as_those_clients_read_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # a .mcp.json written for Claude Desktop or Cline: a note, auto-approval lists, a server
    # switched off; the first three change nothing here, the switched-off server is left out
    path = write(
        tmp_path,
        {
            "mcpServers": {
                "fs": {
                    "command": "npx",
                    "args": ["fs"],
                    "description": "files",
                    "autoApprove": ["read"],
                    "alwaysAllow": ["list"],
                    "disabled": False,
                },
                "old": {"command": "old-server", "disabled": True},
            }
        },
    )
    with caplog.at_level("WARNING"):
        servers = load_mcp_json(path)
    assert list(servers) == ["fs"]
    assert servers["fs"] == StdioServer(command="npx", args=("fs",))
    assert "mcpServers.fs: description, autoApprove, alwaysAllow ignored" in caplog.text
