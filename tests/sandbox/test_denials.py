"""Sandbox denials as events: their reasons are the metric's label set, and a ``bash`` result
stored before denials were events (``sandbox_denial`` was a plain string) still loads."""

from __future__ import annotations

from typing import get_args

from agentscope_teams.message import ToolResultBlock
from agentscope_teams.sandbox.denials import DenialReason, SandboxDenial, denial_in
from agentscope_teams.tools.output import output_of
from agentscope_teams.tools.shell import ShellResult
from agentscope_teams.tracing import metrics


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
