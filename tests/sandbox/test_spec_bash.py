"""A spec that lists ``Bash`` gets it in a bubblewrap sandbox by default (``sandbox="auto"``), in
every permission mode; where bubblewrap cannot run, building the agent fails naming the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SubagentSpec
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.sandbox import BubblewrapSandbox, bubblewrap
from agentscope_teams.store import InMemoryStore

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s", user_id="u")
PROBE = (
    "echo hi > f.txt && cat f.txt; "
    "echo key=${OPENAI_API_KEY:-none}; "
    "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 6379), timeout=2)' "
    "2>/dev/null && echo redis=reached || echo redis=refused; "
    "touch /etc/pwned 2>/dev/null && echo etc=written || echo etc=refused"
)


def _spec(tmp_path: Path) -> SubagentSpec:
    path = tmp_path / "runner.md"
    path.write_text(
        "---\nname: runner\ndescription: Runs commands.\ntools: Bash\n"
        "permissionMode: bypassPermissions\nworkspace: shared\n---\nRun it.\n"
    )
    return SubagentSpec.from_file(path)


async def test_a_spec_listing_bash_runs_it_sandboxed_even_in_bypass(
    tmp_path: Path, bwrap: BubblewrapSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    script = [
        ScriptedModel.tool_call("agent_spawn", {"agent": "runner", "task": "probe"}),
        ScriptedModel.tool_call("Bash", {"command": PROBE}),
        "probed",
        "done",
    ]
    model = ScriptedModel(script)
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=[_spec(tmp_path)], store=InMemoryStore(),
        workspace=tmp_path / "ws", workspace_scope="shared",
        trust_project=True,  # its permissionMode applies: the project is the operator's
    )  # fmt: skip
    assert isinstance(lead.sandbox, BubblewrapSandbox)
    async with lead:
        await lead.call("go", CTX)
    out = str(model.requests[2].messages[-1].content)
    assert "hi" in out and (tmp_path / "ws" / "f.txt").read_text() == "hi\n"
    assert "key=none" in out and "sk-secret-value" not in out
    assert "redis=refused" in out and "etc=refused" in out
    assert not Path("/etc/pwned").exists()  # noqa: ASYNC240 (one stat, in a test)


def test_without_bubblewrap_a_spec_listing_bash_is_refused_naming_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bubblewrap, "find_bwrap", lambda: None)
    with pytest.raises(ConfigurationError, match="bubblewrap") as caught:
        HarnessAgent("lead", ScriptedModel([]), specs=[_spec(tmp_path)], store=InMemoryStore())
    assert "runner" in str(caught.value) and "sandbox=None" in str(caught.value)
    plain = HarnessAgent(
        "lead", ScriptedModel([]), specs=[_spec(tmp_path)], store=InMemoryStore(), sandbox=None
    )
    assert plain.sandbox is None and "bash" not in plain.view.toolkit
