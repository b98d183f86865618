"""The ``bash``, ``bash_output`` and ``kill_shell`` tools: results as data, timeouts, background
shells (new output per read, kill, scoped to the call that started them, stopped at its end)."""

from __future__ import annotations

import uuid
from pathlib import Path

from agentscope_teams.message import ToolUseBlock
from agentscope_teams.sandbox import BubblewrapSandbox
from agentscope_teams.tools import (
    ShellOutput,
    ShellResult,
    ShellStarted,
    ToolEnv,
    Toolkit,
    end_call,
    output_of,
    shell_tools,
)

from .conftest import processes_with


def call(name: str, **arguments: object) -> ToolUseBlock:
    return ToolUseBlock(id=uuid.uuid4().hex[:8], name=name, input=arguments)


async def test_bash_returns_the_exit_code_and_output_as_data(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    kit, env = Toolkit(shell_tools(bwrap)), ToolEnv(workspace=workspace)
    block = await kit.execute(call("bash", command="echo out; echo err >&2; exit 3"), env=env)
    assert not block.is_error
    result = output_of(block, ShellResult)
    assert result is not None
    assert (result.command, result.exit_code, result.sandbox) == (
        "echo out; echo err >&2; exit 3", 3, "bubblewrap"
    )  # fmt: skip
    assert block.output == "out\nerr\n[exit code 3]"


async def test_bash_timeout_is_in_milliseconds(bwrap: BubblewrapSandbox, workspace: Path) -> None:
    kit, env = Toolkit(shell_tools(bwrap)), ToolEnv(workspace=workspace)
    block = await kit.execute(call("bash", command="sleep 100", timeout=500), env=env)
    result = output_of(block, ShellResult)
    assert result is not None and result.timed_out and result.timeout_ms == 500
    assert "[timed out after 500 ms" in block.output
    too_long = await kit.execute(call("bash", command="true", timeout=600_001), env=env)
    assert too_long.is_error and "timeout" in too_long.output


async def test_background_shells_stream_new_output_and_stop_at_the_end_of_the_call(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    kit, env = Toolkit(shell_tools(bwrap)), ToolEnv(workspace=workspace)
    marker = f"{800000 + uuid.uuid4().int % 99999}"
    script = f"echo one; while [ ! -f go ]; do sleep 0.05; done; echo two; sleep {marker}"
    started = await kit.execute(call("bash", command=script, run_in_background=True), env=env)
    shell = output_of(started, ShellStarted)
    assert shell is not None and shell.shell_id.startswith("bash_")
    first = await _read_until(kit, env, shell.shell_id, "one")
    assert first.running
    (workspace / "go").write_text("")
    second = await _read_until(kit, env, shell.shell_id, "two")
    assert "one" not in second.output  # only what is new since the last read
    assert processes_with(marker) != []
    await end_call(env)  # what SessionAgent does when the call ends
    assert processes_with(marker) == []
    gone = await kit.execute(call("bash_output", bash_id=shell.shell_id), env=env)
    assert gone.is_error and "no background shell" in gone.output


async def _read_until(kit: Toolkit, env: ToolEnv, shell_id: str, text: str) -> ShellOutput:
    seen = ""
    for _ in range(400):
        block = await kit.execute(call("bash_output", bash_id=shell_id), env=env)
        chunk = output_of(block, ShellOutput)
        assert chunk is not None, block.output
        seen += chunk.output
        if text in seen:
            return chunk.model_copy(update={"output": seen})
        await _tick()
    raise AssertionError(f"{text!r} never appeared: {seen!r}")


async def _tick() -> None:
    import anyio

    await anyio.sleep(0.02)


async def test_kill_shell_stops_it_and_a_filter_keeps_matching_lines(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    kit, env = Toolkit(shell_tools(bwrap)), ToolEnv(workspace=workspace)
    marker = f"{700000 + uuid.uuid4().int % 99999}"
    script = f"printf 'keep 1\\ndrop\\nkeep 2\\n'; sleep {marker}"
    started = output_of(
        await kit.execute(call("bash", command=script, run_in_background=True), env=env),
        ShellStarted,
    )
    assert started is not None
    await _read_until_filtered(kit, env, started.shell_id)
    killed = await kit.execute(call("kill_shell", shell_id=started.shell_id), env=env)
    result = output_of(killed, ShellOutput)
    assert result is not None and result.killed and not result.running
    assert processes_with(marker) == []
    await end_call(env)


async def _read_until_filtered(kit: Toolkit, env: ToolEnv, shell_id: str) -> None:
    kept = ""  # each read returns what is new, and the script's lines may arrive in parts
    for _ in range(400):
        block = await kit.execute(call("bash_output", bash_id=shell_id, filter="^keep"), env=env)
        assert "drop" not in block.output
        read = output_of(block, ShellOutput)
        assert read is not None and read.filtered
        kept += read.output
        if "keep 2" in kept:
            assert kept == "keep 1\nkeep 2\n"
            return
        await _tick()
    raise AssertionError("no output")


async def test_a_background_shell_is_invisible_to_another_call(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    kit = Toolkit(shell_tools(bwrap))
    mine, other = ToolEnv(workspace=workspace), ToolEnv(workspace=workspace)
    started = output_of(
        await kit.execute(call("bash", command="sleep 30", run_in_background=True), env=mine),
        ShellStarted,
    )
    assert started is not None
    stolen = await kit.execute(call("kill_shell", shell_id=started.shell_id), env=other)
    assert stolen.is_error and "no background shell" in stolen.output
    read = await kit.execute(call("bash_output", bash_id=started.shell_id), env=mine)
    assert not read.is_error  # control: its own call reads it
    await end_call(mine)


async def test_an_unknown_id_after_a_restart_is_a_tool_error(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    kit, env = Toolkit(shell_tools(bwrap)), ToolEnv(workspace=workspace)
    block = await kit.execute(call("bash_output", bash_id="bash_7"), env=env)
    assert block.is_error
    assert "no background shell 'bash_7'" in block.output and "restarts" in block.output
