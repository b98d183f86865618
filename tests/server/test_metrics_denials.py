"""Hook and sandbox denials and a member's wake-up latency in the process's metrics: a prompt and a
tool call blocked by hooks, a shell command refused by a deny rule, an assigned task claimed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.tools import PermissionEngine
from agentscope_teams.tools.permissions import parse_rule
from agentscope_teams.tracing import metrics, task_wakeup

pytestmark = pytest.mark.anyio
CTX = RuntimeContext(session_id="s-denials", user_id="alice", org_id="acme")


def _block(event: str, word: str) -> dict[str, Any]:
    """A Python hook of ``event`` that blocks anything mentioning ``word``."""

    def hook(payload: dict[str, Any]) -> dict[str, Any] | None:
        text = str(payload.get("prompt", "")) + str(payload.get("tool_input", ""))
        return {"decision": "block", "reason": f"no {word}"} if word in text else None

    return {event: hook}


@pytest.fixture
def m(monkeypatch: pytest.MonkeyPatch) -> metrics.Metrics:
    found = metrics.Metrics()
    monkeypatch.setattr(metrics, "METRICS", found)
    return found


async def test_hooks_and_the_permission_engine_count_what_they_refuse(
    tmp_path: Path, m: metrics.Metrics
) -> None:
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("bash", {"command": "rm -rf build"}, id="c1"),
            ScriptedModel.tool_call("glob_files", {"pattern": "*.secret"}, id="c2"),
            ScriptedModel.text("done"),
        ]
    )
    agent = HarnessAgent(
        "a", model, store=InMemoryStore(), workspace=tmp_path, sandbox="unsafe-host",
        permissions=PermissionEngine([parse_rule("Bash(rm:*)", "deny")], mode="bypass"),
        hooks={**_block("UserPromptSubmit", "password"), **_block("PreToolUse", "secret")},
    )  # fmt: skip
    assert "no password" in (await agent.call("the password is 42", CTX)).get_text_content()
    assert (await agent.call("clean up", CTX)).get_text_content() == "done"
    assert m.hook_denials.get("UserPromptSubmit") == 1
    assert m.hook_denials.get("PreToolUse") == 1
    assert m.sandbox_denials.get("permission") == 1
    assert m.tool_denials.get("bash", "permission") == 1
    text = m.render()  # every known label value is exported, at 0 when nothing happened
    assert 'agentscope_teams_sandbox_denials_total{reason="network"} 0' in text
    assert 'agentscope_teams_hook_denials_total{event="Stop"} 0' in text


async def test_a_claim_of_an_assigned_task_observes_the_wakeup(m: metrics.Metrics) -> None:
    client = LocalTeamClient(InMemoryStore(), CTX)
    team = await client.create_team("wake")
    await client.spawn_member(team.id, "ann", "reviewer")
    assigned = await client.assign_task(team.id, actor=team.lead, title="a", assignee="ann")
    await client.assign_task(team.id, actor=team.lead, title="b")  # anyone's: not a wake-up
    for _ in range(2):
        task_wakeup(await client.claim_task(team.id, "ann"), "ann")
    counts, total = m.task_wakeup_seconds.values[()]
    assert sum(counts) == 1 and total[0] >= 0
    assert assigned.assignee == "ann"
