"""The ``permissions`` of a project's ``.claude/settings.json`` and ``settings.local.json``, which
Claude Code applies to every session in the project: ``deny`` and ``ask`` rules only narrow what
the agents do, so they apply whatever the trust; ``allow`` rules grant, so they apply only to a
trusted project (otherwise they are withheld and named, as its hooks are). Subagents inherit them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.events import ToolResultEvent
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools.permissions import format_rule

from ..cli.conftest import Cli

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


def _project(root: Path, settings: dict[str, Any], local: dict[str, Any] | None = None) -> Path:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads files.\ntools: Read\n---\nRead what you are told.\n"
    )
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    if local is not None:
        (root / ".claude" / "settings.local.json").write_text(json.dumps(local))
    (root / ".env").write_text("TOKEN=secret\n")
    (root / "notes.txt").write_text("hello\n")
    return agents


def _rules(agent: HarnessAgent) -> list[str]:
    return [f"{r.behavior} {format_rule(r)}" for r in agent.view.permissions.rules]


def test_deny_and_ask_apply_untrusted_allow_waits_for_trust(tmp_path: Path) -> None:
    settings = {"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]}}
    agents = _project(tmp_path, settings, {"permissions": {"ask": ["WebFetch"]}})
    untrusted = HarnessAgent(
        "lead", ScriptedModel(["x"]), specs=agents, store=InMemoryStore(), trust_project=False
    )
    assert _rules(untrusted) == ["deny Read(./.env)", "ask WebFetch"]
    assert [w.name for w in untrusted.trust.withheld] == ["allow Bash(npm test:*)"]
    assert untrusted.loop.permissions is untrusted.view.permissions
    trusted = HarnessAgent(
        "lead", ScriptedModel(["x"]), specs=agents, store=InMemoryStore(), trust_project=True
    )
    assert _rules(trusted) == ["deny Read(./.env)", "ask WebFetch", "allow Bash(npm test:*)"]


async def test_a_denied_read_is_refused_to_the_lead_and_to_its_subagents(tmp_path: Path) -> None:
    agents = _project(tmp_path, {"permissions": {"deny": ["Read(./.env)"]}})
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("read_file", {"path": ".env"}),
            ScriptedModel.tool_call("agent_spawn", {"agent": "reader", "task": "read .env"}),
            ScriptedModel.tool_call("read_file", {"path": ".env"}),
            "could not",
            ScriptedModel.tool_call("read_file", {"path": "notes.txt"}),
            "done",
        ]
    )
    lead = HarnessAgent(
        "lead", model, specs=agents, store=InMemoryStore(), workspace=tmp_path,
        workspace_scope="shared", trust_project=False,
    )  # fmt: skip
    async with lead:
        events = [e async for e in lead.stream("go", CTX)]
    results = [e.result for e in events if isinstance(e, ToolResultEvent)]
    lead_read, spawned, notes = results[0], results[1], results[-1]
    assert lead_read.is_error and "denied by rule deny Read(./.env)" in lead_read.output
    assert "secret" not in spawned.output
    child_results = [m for m in model.requests[3].messages if "denied by rule" in str(m)]
    assert child_results, "the subagent's read of .env was not refused by the project's rule"
    assert not notes.is_error and "hello" in notes.output


def test_a_bad_rule_names_the_file_and_the_entry(tmp_path: Path) -> None:
    agents = _project(tmp_path, {"permissions": {"deny": ["Read(./.env)", 7]}})
    with pytest.raises(ConfigurationError) as info:
        HarnessAgent("lead", ScriptedModel(["x"]), specs=agents, store=InMemoryStore())
    message = str(info.value)
    assert "settings.json" in message and "permissions.deny[1]" in message


def test_specs_check_names_the_allow_rules_not_enabled(cli: Cli) -> None:
    settings = {"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]}}
    agents = _project(cli.tmp_path / "clone", settings)
    checked = cli.run("specs", "check", "--json", str(agents))
    assert checked.returncode == 0, checked.stderr
    lines = [json.loads(line) for line in checked.stdout.splitlines()]
    off = [(x["feature"], x["name"]) for x in lines if x["kind"] == "not_enabled"]
    assert off == [("permission rule", "allow Bash(npm test:*)")]
    script = cli.tmp_path / "script.yaml"
    script.write_text("lead:\n  - hi\n")
    args = ["run", "--specs", str(agents), "--model", f"scripted:{script}", "hello"]
    done = cli.run(*args, "--store", cli.url)
    assert done.returncode == 0, done.stderr
    assert "permission rule 'allow Bash(npm test:*)'" in " ".join(done.stderr.split())
