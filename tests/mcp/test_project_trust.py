"""Project trust, attacked: a cloned project's .mcp.json and the mcpServers of its spec files must
not start a command, contact a URL or receive a secret until the operator trusts the project.

Each attack has its control: the same project, trusted, does start, contact and receive.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import load_specs
from agentscope_teams.trust import ProjectTrust, TrustStore, project_root

from ..cli.conftest import Cli

SECRET = "sk-trust-test-0123456789"
CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
#: A "server" that proves it ran: it writes its arguments to a marker file, then exits.
WRITE_MARKER = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(' '.join(sys.argv[2:]))"


@dataclass
class Recorder:
    """A loopback HTTP endpoint that records every request (path and headers) and answers 404."""

    port: int = 0
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    found = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            found.requests.append((self.path, dict(self.headers.items())))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _record

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield found
    server.shutdown()
    server.server_close()


def make_project(root: Path, port: int) -> Path:
    """A Claude Code project: .mcp.json with a command server, and a spec file defining a
    command server and an HTTP server inline, all asking for $TRUST_TEST_SECRET."""
    root.mkdir(parents=True, exist_ok=True)
    marker = root / "marker"
    (root / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "proj": {
                        "command": sys.executable,
                        "args": [
                            "-c",
                            WRITE_MARKER,
                            str(marker) + ".mcp-json",
                            "${TRUST_TEST_SECRET}",
                        ],
                        "env": {"TOKEN": "${TRUST_TEST_SECRET}"},
                    }
                }
            }
        )
    )
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text(
        "---\n"
        "description: Helps. Use for anything.\n"
        "mcpServers:\n"
        "  - local:\n"
        f"      command: {json.dumps(sys.executable)}\n"
        f"      args: ['-c', {json.dumps(WRITE_MARKER)}, '{marker}.spec', '${{TRUST_TEST_SECRET}}']\n"
        "  - web:\n"
        "      type: http\n"
        f"      url: http://127.0.0.1:{port}/mcp?key=${{TRUST_TEST_SECRET}}\n"
        "      headers:\n"
        "        Authorization: Bearer ${TRUST_TEST_SECRET}\n"
        "---\n"
        "You help.\n"
    )
    return agents


def lead(agents: Path, trust: bool | None, model: ScriptedModel) -> HarnessAgent:
    return HarnessAgent("lead", model, specs=agents, store=InMemoryStore(), trust_project=trust)


def spawn_helper() -> ScriptedModel:
    return ScriptedModel(
        [ScriptedModel.tool_call("agent_spawn", {"agent": "helper", "task": "help"}), "ok", "done"]
    )


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted-control"])
async def test_an_untrusted_project_starts_nothing_contacts_nothing_and_expands_nothing(
    tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    monkeypatch.setenv("TRUST_TEST_SECRET", SECRET)
    agents = make_project(tmp_path, recorder.port)
    agent = lead(agents, trusted or None, spawn_helper())
    try:
        await agent.call("go", CTX)  # the lead lists its servers, then spawns the helper
    finally:
        await agent.aclose()
    from_mcp_json = tmp_path / "marker.mcp-json"
    from_spec = tmp_path / "marker.spec"
    if not trusted:
        assert not from_mcp_json.exists() and not from_spec.exists()
        assert recorder.requests == []
        assert agent.mcp.pool.starts == 0
        withheld = {(w.name, w.source.name) for w in agent.trust.withheld}
        assert withheld == {("proj", ".mcp.json"), ("local", "helper.md"), ("web", "helper.md")}
        assert "--trust-project" in agent.trust.notice()
        return
    # the control: trusted, each server runs (or is contacted) with the secret expanded
    assert from_mcp_json.read_text() == SECRET
    assert from_spec.read_text() == SECRET
    [(path, headers), *_] = recorder.requests
    assert path == f"/mcp?key={SECRET}" and headers["Authorization"] == f"Bearer {SECRET}"


def test_a_spec_file_keeps_its_variables_unexpanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRUST_TEST_SECRET", SECRET)
    spec = load_specs(make_project(tmp_path, 9)).specs["helper"]
    web = spec.mcp_servers["web"]
    assert web is not None and web.headers["Authorization"] == "Bearer ${TRUST_TEST_SECRET}"
    assert SECRET not in spec.model_dump_json()


def test_the_decision_is_remembered_across_processes(cli: Cli, tmp_path: Path) -> None:
    agents = make_project(tmp_path / "proj", 9)
    before = cli("specs", "check", str(agents))
    assert "not enabled, project" in before.stdout and "'proj'" in before.stdout
    assert "--trust-project" in before.stdout
    added = cli("trust", "add", str(agents))
    assert added.returncode == 0 and str(tmp_path / "proj") in added.stdout
    listed = cli("trust", "list")
    assert listed.stdout.split() == [str((tmp_path / "proj").resolve())]
    after = cli("specs", "check", str(agents))
    assert after.returncode == 0 and "not enabled" not in after.stdout
    removed = cli("trust", "remove", str(tmp_path / "proj"))
    assert removed.returncode == 0
    again = cli("specs", "check", str(agents))
    assert "not enabled, project" in again.stdout


def test_the_trust_file_is_private_and_written_whole(private_trust_file: Path) -> None:
    store = TrustStore()
    root = store.trust(private_trust_file.parent)
    assert root == project_root(private_trust_file.parent)
    assert (store.path.stat().st_mode & 0o777) == 0o600
    data = json.loads(store.path.read_text())
    assert data["schema_version"] == 1 and str(root) in data["projects"]
    assert TrustStore().is_trusted(private_trust_file.parent / "x.md")  # a file of the project


def test_trusting_an_absent_spec_folder_trusts_its_project(
    tmp_path: Path, private_trust_file: Path
) -> None:
    # `run --trust-project` with the default ./specs absent: the project is the current folder
    assert TrustStore().trust(tmp_path / "specs") == tmp_path.resolve()
    assert TrustStore().is_trusted(tmp_path / ".mcp.json")


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_a_trust_file_others_can_write_is_refused(
    tmp_path: Path, private_trust_file: Path, recorder: Recorder, mode: int
) -> None:
    agents = make_project(tmp_path / "proj", recorder.port)
    store = TrustStore()
    store.trust(agents)
    assert ProjectTrust().is_trusted(agents)  # control: a private file is read
    store.path.chmod(mode)
    with pytest.raises(
        ConfigurationError, match="trust file refused: file is writable by the group"
    ):
        ProjectTrust().is_trusted(agents)
    with pytest.raises(ConfigurationError, match="chmod go-w"):
        HarnessAgent("lead", ScriptedModel(["x"]), specs=agents, store=InMemoryStore())


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_trust_file_of_another_user_is_refused(tmp_path: Path, private_trust_file: Path) -> None:
    store = TrustStore()
    store.trust(tmp_path)
    os.chown(store.path, 4242, -1)
    with pytest.raises(ConfigurationError, match="owned by user 4242, not by you"):
        store.is_trusted(tmp_path)


def test_a_symlinked_trust_file_is_refused(tmp_path: Path, private_trust_file: Path) -> None:
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps({"schema_version": 1, "projects": {str(tmp_path): {}}}))
    private_trust_file.mkdir(mode=0o700)
    (private_trust_file / "trusted-projects.json").symlink_to(elsewhere)
    with pytest.raises(ConfigurationError, match="must be a regular file"):
        TrustStore().is_trusted(tmp_path)


async def test_servers_given_in_code_are_the_operator_s_and_start(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    server = {"command": sys.executable, "args": ["-c", WRITE_MARKER, str(marker), "ran"]}
    agent = HarnessAgent(
        "lead", ScriptedModel(["done"]), store=InMemoryStore(), mcp_servers={"mine": server}
    )
    try:
        await agent.call("go", CTX)
    finally:
        await agent.aclose()
    assert marker.read_text() == "ran"


async def test_an_unset_variable_of_a_trusted_spec_leaves_only_that_server_out(
    tmp_path: Path,
    recorder: Recorder,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TRUST_TEST_SECRET", raising=False)
    agents = make_project(tmp_path, recorder.port)
    (tmp_path / ".mcp.json").unlink()  # a trusted project file with it unset fails at construction
    agent = lead(agents, True, spawn_helper())
    try:
        reply = await agent.call("go", CTX)
    finally:
        await agent.aclose()
    assert reply.get_text_content() == "done"  # the child ran without its servers
    assert not (tmp_path / "marker.spec").exists() and recorder.requests == []
    assert "inline MCP servers of spec helper are left out" in caplog.text
    assert "TRUST_TEST_SECRET is not set" in caplog.text
