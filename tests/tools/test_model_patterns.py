"""Regular expressions a model writes (``grep_files``'s pattern, ``bash_output``'s filter) run with
a time bound: a catastrophically backtracking one becomes a tool error naming the pattern and where
it ran, and the event loop (every other session of the process) keeps running meanwhile."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.message import ToolResultBlock, ToolUseBlock
from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.tools import (
    ToolEnv,
    Toolkit,
    end_call,
    filesystem_tools,
    patterns,
    shell_tools,
)

CATASTROPHIC = "(a|aa)+$"  # against a's then a non-a: exponential backtracking in re and regex
LINE = "a" * 200 + "!"  # 2**100-ish paths: no machine finishes it


def call(name: str, **arguments: Any) -> ToolUseBlock:
    return ToolUseBlock(id=uuid.uuid4().hex[:8], name=name, input=arguments)


async def while_ticking(tool_call: Awaitable[ToolResultBlock]) -> tuple[ToolResultBlock, int]:
    """``tool_call``'s result and how often another coroutine of the loop ran meanwhile."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        block = await tool_call
        seen = ticks
        tg.cancel_scope.cancel()
    return block, seen


@pytest.fixture(autouse=True)
def short_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "PATTERN_SECONDS", 0.5)


async def test_grep_files_stops_a_catastrophic_pattern_without_freezing_the_loop(
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ok.txt").write_text("aaa!\n")
    (tmp_path / "src" / "slow.txt").write_text(f"first\n{LINE}\n")
    kit, env = Toolkit(filesystem_tools()), ToolEnv(workspace=tmp_path)
    found = await kit.execute(call("grep_files", pattern="(a|aa)+!$", path="src/ok.txt"), env=env)
    assert found.output == "src/ok.txt:1: aaa!"  # an ordinary pattern, re syntax, still works
    block, ticks = await while_ticking(
        kit.execute(call("grep_files", pattern=CATASTROPHIC, path="src/slow.txt"), env=env)
    )
    assert block.is_error, block.output
    assert f"the pattern {CATASTROPHIC!r} took longer than 0.5 s on src/slow.txt" in block.output
    assert "simplify it" in block.output
    assert ticks > 0  # the event loop ran other coroutines while the pattern ran


async def test_bash_output_filter_stops_a_catastrophic_pattern_without_freezing_the_loop(
    tmp_path: Path,
) -> None:
    kit, env = Toolkit(shell_tools(UnsafeHostSandbox())), ToolEnv(workspace=tmp_path)
    script = (
        f"echo {LINE}; while [ ! -f go ]; do sleep 0.05; done; echo later; touch said; sleep 30"
    )
    started = await kit.execute(call("bash", command=script, run_in_background=True), env=env)
    assert not started.is_error, started.output
    try:
        for _ in range(500):
            block, ticks = await while_ticking(
                kit.execute(call("bash_output", bash_id="bash_1", filter=CATASTROPHIC), env=env)
            )
            if block.is_error:
                break
            await anyio.sleep(0.02)
        assert block.is_error, block.output
        assert "took longer than 0.5 s on the output of bash_1" in block.output
        assert ticks > 0
        assert "the 1 line(s) of this read are not shown" in block.output
        (tmp_path / "go").write_text("")
        for _ in range(500):
            if (tmp_path / "said").exists():
                break
            await anyio.sleep(0.02)
        bad = await kit.execute(call("bash_output", bash_id="bash_1", filter="("), env=env)
        assert bad.is_error and "invalid filter regular expression '('" in bad.output
        after = await kit.execute(call("bash_output", bash_id="bash_1"), env=env)
        assert "later" in after.output  # the filter that did not compile lost no output
    finally:
        await end_call(env)
