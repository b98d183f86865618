"""A spec file of a project the operator has not trusted (a cloned repository's
``.claude/agents/x.md``) cannot let its agent do more than its parent: its ``permissionMode`` above
the parent's and the allow rules of its ``tools:`` are withheld (named in the trust notice) until
the project is trusted, as its hooks and MCP servers are; a stricter mode still applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SubagentSpec
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents.spawn import spec_permissions
from agentscope_teams.teams.member.builder import member_engine
from agentscope_teams.teams.rules.models import Member
from agentscope_teams.tools import PermissionEngine, tool
from agentscope_teams.trust import TrustStore

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s", user_id="u")


@pytest.fixture(autouse=True)
def private_trust_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test remembers trusted projects in a folder of its own, never the user's."""
    folder = tmp_path / "user-config"
    monkeypatch.setenv("AGENTSCOPE_TEAMS_CONFIG_DIR", str(folder))
    return folder


def _cloned_spec(tmp_path: Path, front: str) -> SubagentSpec:
    """A spec file in ``<clone>/.claude/agents``, as a cloned repository brings it."""
    agents = tmp_path / "clone" / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    path = agents / "worker.md"
    path.write_text(
        f"---\nname: worker\ndescription: Does it.\n{front}workspace: shared\n---\nGo.\n"
    )
    return SubagentSpec.from_file(path)


@tool(requires_confirmation=True)
async def deploy(target: str) -> str:
    """Deploy (asks the user in default mode).

    Args:
        target: Where to.
    """
    return f"deployed to {target}"


def _results(requests: list[ModelRequest]) -> str:
    """The output of every tool result the models were shown, one per line."""
    blocks = [b for r in requests for m in r.messages for b in m.content if not isinstance(b, str)]
    return "\n".join(b.output for b in blocks if isinstance(b, ToolResultBlock))


def _ran_echo(requests: list[ModelRequest]) -> bool:
    """Whether some tool result holds the line the child's ``echo hi-from-child`` prints."""
    return any(line.strip() == "hi-from-child" for line in _results(requests).splitlines())


async def _run(tmp_path: Path, spec: SubagentSpec, calls: list[Any], **options: Any) -> Any:
    script = [
        ScriptedModel.tool_call("agent_spawn", {"agent": "worker", "task": "work"}),
        *calls,
        "finished",
        "done",
    ]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script),
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        workspace_scope="shared",
        **options,
    )
    async with lead:
        await lead.call("go", CTX)
    return lead


async def test_an_untrusted_specs_bypass_mode_is_withheld_and_its_call_asks(
    tmp_path: Path,
) -> None:
    spec = _cloned_spec(tmp_path, "permissionMode: bypassPermissions\n")
    deploying = [ScriptedModel.tool_call("deploy", {"target": "prod"})]
    lead = await _run(tmp_path, spec, deploying, tools=[deploy])
    out = _results(lead.model.requests)
    assert "deployed to prod" not in out  # it did not run
    assert "cannot ask the user" in out  # it asked, and a subagent has nobody to ask
    notice = lead.trust.notice()
    assert "permissionMode 'bypassPermissions'" in notice and str(spec.source) in notice
    assert "--trust-project" in notice and "agentscope-teams trust add" in notice

    # the control: the same spec of a trusted project runs the call without asking
    for trusted in ({"trust_project": True}, {}):
        if not trusted:  # remembered by `agentscope-teams trust add`
            TrustStore().trust(tmp_path / "clone")
        lead = await _run(tmp_path, spec, deploying, tools=[deploy], **trusted)
        assert "deployed to prod" in _results(lead.model.requests)
        assert lead.trust.notice() == ""


async def test_an_untrusted_specs_tools_rule_no_longer_allows_echo_silently(
    tmp_path: Path,
) -> None:
    spec = _cloned_spec(tmp_path, "tools: Bash(echo:*)\n")
    echo = [ScriptedModel.tool_call("Bash", {"command": "echo hi-from-child"})]
    lead = await _run(tmp_path, spec, echo, sandbox=UnsafeHostSandbox())
    out = _results(lead.model.requests)
    assert not _ran_echo(lead.model.requests) and "cannot ask the user" in out
    assert "tools: allow rule 'Bash(echo:*)'" in lead.trust.notice()
    child = next(r for r in lead.model.requests if r.system_prompt.startswith("Go."))
    assert "bash" in {t.name for t in child.tools}  # still offered: its calls ask

    # the control: trusted, the rule allows the call and it runs without asking
    lead = await _run(tmp_path, spec, echo, sandbox=UnsafeHostSandbox(), trust_project=True)
    assert _ran_echo(lead.model.requests)


def test_only_a_mode_above_the_parents_is_withheld_and_a_stricter_one_applies(
    tmp_path: Path,
) -> None:
    parent = PermissionEngine(mode="accept_edits")
    for mode, expected in (
        ("bypassPermissions", "accept_edits"),  # above the parent's: withheld
        ("default", "accept_edits"),  # the acceptEdits parent takes precedence (Claude Code)
        ("dontAsk", "dont_ask"),  # stricter and never asks: applies
        ("plan", "plan"),
    ):
        spec = _cloned_spec(tmp_path, f"permissionMode: {mode}\n")
        engine = spec_permissions(spec, parent)  # trust: the user's remembered decisions
        assert engine is not None and engine.mode == expected, mode
    under_plan = spec_permissions(
        _cloned_spec(tmp_path, "permissionMode: dontAsk\n"), PermissionEngine(mode="plan")
    )
    assert under_plan is not None and under_plan.mode == "plan"  # dontAsk may write: above plan
    in_code = SubagentSpec(name="w", description="d", permissionMode="bypassPermissions")
    assert spec_permissions(in_code, parent).mode == "bypass"  # type: ignore[union-attr]


def test_a_team_member_of_an_untrusted_spec_keeps_the_leads_mode(tmp_path: Path) -> None:
    spec = _cloned_spec(tmp_path, "permissionMode: bypassPermissions\ntools: Bash(echo:*)\n")
    engine = member_engine(spec, None, Member(name="m", spec="worker"))
    assert engine.mode == "default"
    assert not [r for r in engine.rules if r.behavior == "allow"]
    TrustStore().trust(spec.source)  # type: ignore[arg-type]
    trusted = member_engine(spec, None, Member(name="m", spec="worker"))
    assert trusted.mode == "bypass" and [r for r in trusted.rules if r.behavior == "allow"]
