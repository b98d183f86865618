"""Members run by an ``agentscope-teams worker`` process get the MCP tools their spec selects, from
the project ``.mcp.json`` of ``--specs`` or from ``--mcp-config``; the worker stops the servers when
it stops. The worker and the MCP server are real processes, the member's model is scripted
(:mod:`tests.mcp.worker_model`)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope_teams.cli.app import build_parser
from agentscope_teams.cli.worker_cmd import mcp_config_path
from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, TaskStatus, member_session_id
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record

from ..backends import REDIS_URL
from ..cli.conftest import Cli
from ..teams.helpers import eventually
from .helpers import ECHO

ROOT = Path(__file__).resolve().parents[2]
ECHOER = """---
name: echoer
description: Echoes what it is given.
tools: mcp__echo__echo
---
You echo.
"""
ECHOED = re.compile(r"echo: from (t-\d+) \(pid (\d+), token -\)")


def spec_project(tmp_path: Path) -> Path:
    """A spec directory with the echoer spec and a .mcp.json naming the echo server."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "echoer.md").write_text(ECHOER)
    (specs / ".mcp.json").write_text(json.dumps({"mcpServers": {"echo": ECHO}}))
    return specs


def command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")


def running(pid: int) -> bool:
    """Whether ``pid`` runs (an exited process nobody reaped yet is a zombie: not running)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


@pytest.fixture
def worker(tmp_path: Path, ctx: RuntimeContext) -> Iterator[subprocess.Popen[bytes]]:
    """A worker serving the spec project's members (killed at the end if still running)."""
    assert ctx.org_id is not None
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", REDIS_URL]
    cmd += ["--specs", str(spec_project(tmp_path)), "--org", ctx.org_id, "--poll", "0.05"]
    cmd += ["--workspace", str(tmp_path), "--model", "python:tests.mcp.worker_model:member_model"]
    cmd += ["--trust-project"]  # the project's .mcp.json starts servers only once trusted
    with (tmp_path / "worker.log").open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


async def assign_echo_task(store: BaseStore, ctx: RuntimeContext) -> tuple[str, str]:
    """A lead elsewhere forms a team run by workers and gives its echoer a task: (team, task)."""
    lead = LocalTeamClient(store, ctx)
    team = await lead.create_team("echoes")
    await lead.spawn_member(team.id, "echoer", "echoer", member_session_id(team.id, "echoer"))
    record = TeamRuntimeRecord(
        team_id=team.id, org_id=ctx.org_id, user_id=ctx.user_id, lead="lead", mode="workers"
    )
    await put_record(store, ctx, record)
    task = await lead.assign_task(team.id, "echo something", assignee="echoer")
    return team.id, task.id


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_worker_member_calls_the_mcp_tool_of_its_spec_and_the_server_stops_with_it(
    tmp_path: Path, redis: BaseStore, ctx: RuntimeContext, worker: subprocess.Popen[bytes]
) -> None:
    team_id, task_id = await assign_echo_task(redis, ctx)
    client = LocalTeamClient(redis, ctx)
    log = tmp_path / "worker.log"

    async def completed() -> bool:
        assert worker.poll() is None, log.read_text(errors="replace")
        task = await client.get_task(team_id, task_id)
        return task.status is TaskStatus.COMPLETED

    await eventually(completed, within=60)  # a guard, not a latency assertion
    result = (await client.get_task(team_id, task_id)).result or ""
    found = ECHOED.fullmatch(result)  # the real server's answer, as the member's tool saw it
    assert found and found.group(1) == task_id, result
    server = int(found.group(2))
    assert server != worker.pid and running(server)
    assert "echo_server.py" in command_line(server)
    assert f"MCP servers ['echo'] of {tmp_path / 'specs' / '.mcp.json'}" in log.read_text()

    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, log.read_text(errors="replace")
    assert not running(server), "the MCP server outlived its worker"
    await client.delete_team(team_id)


def test_mcp_config_comes_from_the_option_else_from_the_spec_project(tmp_path: Path) -> None:
    specs = spec_project(tmp_path)
    other = tmp_path / "elsewhere.json"
    parse = build_parser().parse_args
    assert mcp_config_path(parse(["worker", "--specs", str(specs)])) == specs / ".mcp.json"
    given = parse(["worker", "--specs", str(specs), "--mcp-config", str(other)])
    assert mcp_config_path(given) == other
    assert mcp_config_path(parse(["worker", "--specs", str(tmp_path)])) is None


def test_a_bad_mcp_config_is_one_error_line_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"echo": {"args": ["server.py"]}}}')
    cli = Cli(tmp_path)
    done = cli("worker", "--specs", str(spec_project(tmp_path)), "--mcp-config", str(bad))
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {bad}") and "mcpServers.echo.command" in line, line
    assert "Traceback" not in done.stderr


def test_servers_without_the_mcp_package_are_refused_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from agentscope_teams.cli.worker_cmd import handle
    from agentscope_teams.errors import MissingDependencyError

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else found(name, *a)
    )
    specs = spec_project(tmp_path)
    argv = ["worker", "--store", "memory://", "--specs", str(specs), "--trust-project"]
    args = build_parser().parse_args(argv)
    with pytest.raises(
        MissingDependencyError, match=r"for the members, .*pip install 'agentscope-teams\[mcp\]'"
    ):
        handle(args)


@pytest.mark.parametrize("flag", [[], ["--trust-project"]], ids=["untrusted", "trusted-control"])
def test_a_worker_enables_the_project_servers_only_when_trusted(
    tmp_path: Path, flag: list[str]
) -> None:
    from agentscope_teams.cli.trust_cmd import project_trust, untrusted_note
    from agentscope_teams.cli.worker_cmd import toolset

    specs = spec_project(tmp_path)
    args = build_parser().parse_args(
        ["worker", "--store", "memory://", "--specs", str(specs), *flag]
    )
    trust = project_trust(args, args.specs)
    note = untrusted_note(args.specs, [], trust)
    if flag:
        assert list(toolset(args, trust).servers) == ["echo"] and note == ""
    else:
        assert toolset(args, trust).servers == {}
        assert f"MCP server 'echo' of {specs / '.mcp.json'}" in note and "--trust-project" in note
    given = build_parser().parse_args(  # --mcp-config is the operator's: enabled either way
        ["worker", "--store", "memory://", "--specs", str(specs), "--mcp-config", str(specs)]
    )
    assert list(toolset(given, project_trust(given, given.specs)).servers) == ["echo"]
