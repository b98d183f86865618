"""Attacks on the bubblewrap sandbox: each tries an escape and asserts it failed, beside a control
(the same command on the unsafe host backend, or with the boundary opened) showing it would work."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.sandbox import BubblewrapSandbox, UnsafeHostSandbox

from .conftest import exists, require_bwrap


async def test_a_command_runs_in_the_workspace_and_writes_there(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    result = await bwrap.run("pwd && echo hi > f.txt && cat f.txt", workspace)
    assert result.exit_code == 0, result.output
    assert result.output == f"{workspace}\nhi\n"
    assert (workspace / "f.txt").read_text() == "hi\n"


@pytest.mark.parametrize(
    "target",
    ["/etc/agentscope-probe", "/work/agentscope-probe", "HOST_HOME", "../agentscope-probe",
     "/usr/agentscope-probe"],
)  # fmt: skip
async def test_writes_outside_the_workspace_fail(
    bwrap: BubblewrapSandbox, unsafe: UnsafeHostSandbox, workspace: Path, target: str
) -> None:
    if target == "HOST_HOME":
        target = str(Path.home() / "agentscope-probe")
    host_path = (workspace / target).resolve() if not target.startswith("/") else Path(target)
    command = f"mkdir -p {host_path.parent} 2>/dev/null; echo x > {target} && echo WROTE"
    result = await bwrap.run(command, workspace)
    assert "WROTE" not in result.output and result.exit_code != 0
    assert not host_path.exists()
    if os.access(host_path.parent, os.W_OK):  # control: the host itself would have allowed it
        try:
            control = await unsafe.run(f"echo x > {target} && echo WROTE", workspace)
            assert "WROTE" in control.output
        finally:
            host_path.unlink(missing_ok=True)


async def test_another_sessions_workspace_is_invisible(
    bwrap: BubblewrapSandbox, unsafe: UnsafeHostSandbox, workspace: Path, other_session: Path
) -> None:
    command = f"cat {other_session}/secret.txt; ls {workspace.parent}"
    result = await bwrap.run(command, workspace)
    assert "the other session's secret" not in result.output
    assert result.output.splitlines()[-1] == workspace.name  # only its own path is there
    control = await unsafe.run(command, workspace)
    assert "the other session's secret" in control.output


async def test_host_secrets_are_not_visible(bwrap: BubblewrapSandbox, workspace: Path) -> None:
    result = await bwrap.run(
        "cat /etc/shadow; ls /root /home /run /var 2>&1; ls /etc/ssh /etc/ssl/private 2>&1 | head",
        workspace,
    )
    assert "root:" not in result.output
    assert exists("/etc/shadow")  # control: the host has it
    assert result.output.count("No such file or directory") >= 4


@pytest.mark.parametrize("link_to", ["/etc/shadow", "OTHER"])
async def test_a_symlink_in_the_workspace_does_not_escape(
    bwrap: BubblewrapSandbox,
    unsafe: UnsafeHostSandbox,
    workspace: Path,
    other_session: Path,
    link_to: str,
) -> None:
    target = other_session / "secret.txt" if link_to == "OTHER" else Path(link_to)
    (workspace / "link").symlink_to(target)
    result = await bwrap.run("cat link", workspace)
    assert result.exit_code != 0
    assert "secret" not in result.output and "root:" not in result.output
    if os.access(target, os.R_OK):  # control: the host follows the link
        control = await unsafe.run("cat link", workspace)
        assert control.exit_code == 0


def _listening_port() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server, server.getsockname()[1]


CONNECT = "exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"


async def test_no_network_by_default(bwrap: BubblewrapSandbox, workspace: Path) -> None:
    server, port = _listening_port()
    with server:
        result = await bwrap.run(CONNECT.format(port=port), workspace)
        assert "CONNECTED" not in result.output and result.exit_code != 0
        redis = await bwrap.run(CONNECT.format(port=6379), workspace)
        assert "CONNECTED" not in redis.output
        opened = require_bwrap(network="full")  # control: the same command with the host network
        control = await opened.run(CONNECT.format(port=port), workspace)
        assert "CONNECTED" in control.output


async def test_the_environment_holds_no_secrets(
    bwrap: BubblewrapSandbox,
    unsafe: UnsafeHostSandbox,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("AGENTSCOPE_TEAMS_REDIS_URL", "redis://secret@127.0.0.1:6379/0")
    assert "sk-should-not-leak" in os.environ["OPENAI_API_KEY"]  # control: the host has them
    for sandbox in (bwrap, unsafe):
        result = await sandbox.run("env", workspace)
        assert result.exit_code == 0
        assert "sk-should-not-leak" not in result.output
        assert "AGENTSCOPE_TEAMS" not in result.output and "secret@" not in result.output
        assert "PATH=/usr/local/sbin:" in result.output


async def test_capabilities_are_dropped_and_mounts_stay_read_only(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    result = await bwrap.run(
        "grep -E 'CapEff|NoNewPrivs' /proc/self/status; mount -o remount,rw /usr 2>&1; "
        "touch /usr/x 2>&1",
        workspace,
    )
    assert "CapEff:\t0000000000000000" in result.output
    assert "NoNewPrivs:\t1" in result.output
    assert not exists("/usr/x")


@pytest.mark.parametrize("where", [".", ".."])
async def test_a_workspace_holding_the_service_users_home_is_refused(
    bwrap: BubblewrapSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A workspace that is (or holds) the home of the user running the service would bind its
    ~/.ssh, cloud credentials and the default file store read-write into the sandbox."""
    home = tmp_path / "home" / "svc"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    inside = await bwrap.run("pwd; ls ../.ssh 2>&1", home / "project")
    assert inside.output.splitlines()[0] == str(home / "project")  # control: below it is fine
    assert "id_ed25519" not in inside.output
    with pytest.raises(ConfigurationError, match="home directory"):
        await bwrap.run("cat .ssh/id_ed25519", (home / where).resolve())
