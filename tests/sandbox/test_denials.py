"""Sandbox denials as events: their reasons are the metric's label set, a ``bash`` result
stored before denials were events (``sandbox_denial`` was a plain string) still loads, and a
background command the kernel refuses is one denial however often its output is read."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import get_args

import anyio
import pytest

from agentscope_teams.message import ToolResultBlock
from agentscope_teams.sandbox import BubblewrapSandbox
from agentscope_teams.sandbox.denials import DenialReason, DenialWatch, SandboxDenial, denial_in
from agentscope_teams.server.error_reads import _result_error
from agentscope_teams.tools import (
    ShellOutput,
    ShellStarted,
    ToolEnv,
    Toolkit,
    end_call,
    shell_tools,
)
from agentscope_teams.tools.output import output_of
from agentscope_teams.tools.shell import ShellResult
from agentscope_teams.tracing import metrics

from .test_shell_tools import call


@pytest.fixture
def m(monkeypatch: pytest.MonkeyPatch) -> metrics.Metrics:
    found = metrics.Metrics()
    monkeypatch.setattr(metrics, "METRICS", found)
    return found


def test_the_reasons_are_the_metrics_label_values() -> None:
    assert get_args(DenialReason) == metrics.SANDBOX_REASONS


def test_an_old_bash_result_with_a_text_denial_still_loads() -> None:
    old = {
        "command": "echo x > /etc/x", "description": None, "exit_code": 1,
        "output": "bash: /etc/x: Read-only file system\n", "omitted_bytes": 0,
        "timed_out": False, "timeout_ms": 120000, "sandbox": "bubblewrap",
        "sandbox_denial": "a write outside the workspace (the rest of the file system is read-only)",
    }  # fmt: skip
    block = ToolResultBlock(tool_use_id="c1", name="bash", output="...", data=old)
    result = output_of(block, ShellResult)
    assert result is not None and result.sandbox_denial is not None
    assert result.sandbox_denial.reason == "filesystem"
    assert SandboxDenial.model_validate("something else").reason == "operation"


def test_only_a_contained_sandboxs_failed_command_is_a_denial() -> None:
    refused = "bash: /etc/x: Read-only file system\n"
    assert denial_in(refused, contained=False, exit_code=1) is None  # the host: its own failure
    assert denial_in(refused, contained=True, exit_code=0) is None
    found = denial_in("curl: (6) Could not resolve host: x", contained=True, exit_code=6)
    assert found is not None and found.reason == "network"


def test_a_background_commands_refusal_is_found_when_cut_between_reads(
    m: metrics.Metrics,
) -> None:
    watch = DenialWatch(contained=True)
    for piece in ("bash: connect: Network is unre", "achable\n", "more\n"):
        watch.seen(piece)
    assert watch.ended(None) is None  # still running: nothing to report yet
    found = watch.ended(1)
    assert found is not None and found.reason == "network"
    assert watch.ended(1) is None  # its end read again: not a second event
    assert m.sandbox_denials.get("network") == 1
    succeeded = DenialWatch(contained=True)
    succeeded.seen("bash: /etc/x: Read-only file system\n")
    assert succeeded.ended(0) is None  # the command recovered and succeeded
    host = DenialWatch(contained=False)
    host.seen("bash: /etc/x: Read-only file system\n")
    assert host.ended(1) is None


async def test_a_background_command_the_kernel_refuses_is_one_denial(
    bwrap: BubblewrapSandbox, workspace: Path, m: metrics.Metrics
) -> None:
    """The write is refused at once, the command then runs on; every read after its end (and the
        kill_shell after them) reports the end, but only the first carries the denial, counted once and
    listed once among the errors."""
    target = Path("/usr") / f"agentscope-denial-{uuid.uuid4().hex[:8]}"
    kit, env = Toolkit(shell_tools(bwrap)), ToolEnv(workspace=workspace)
    script = f"echo owned > {target}; s=$?; while [ ! -f go ]; do sleep 0.02; done; exit $s"
    started = output_of(
        await kit.execute(call("bash", command=script, run_in_background=True), env=env),
        ShellStarted,
    )
    assert started is not None
    reads = [await _read(kit, env, started.shell_id)]
    (workspace / "go").write_text("")  # the refusal was read while it ran: found at its end
    while reads[-1].running:
        await anyio.sleep(0.02)
        reads.append(await _read(kit, env, started.shell_id))
    reads += [await _read(kit, env, started.shell_id) for _ in range(3)]
    killed = await kit.execute(call("kill_shell", shell_id=started.shell_id), env=env)
    reads.append(_shell_output(killed))
    denials = [r.sandbox_denial for r in reads if r.sandbox_denial is not None]
    assert [d.reason for d in denials] == ["filesystem"]
    assert reads[-1].exit_code == 1 and not target.exists()
    assert m.sandbox_denials.get("filesystem") == 1
    assert "[the sandbox refused a write outside the workspace" in reads[-5].render()
    await end_call(env)


async def _read(kit: Toolkit, env: ToolEnv, shell_id: str) -> ShellOutput:
    return _shell_output(await kit.execute(call("bash_output", bash_id=shell_id), env=env))


def _shell_output(block: ToolResultBlock) -> ShellOutput:
    found = output_of(block, ShellOutput)
    assert found is not None, block.output
    listed = _result_error("w", block.name or "", block)  # what the dashboard lists of it
    assert (listed is not None) == (found.sandbox_denial is not None)
    return found
