"""The errors panel in real Chromium says what kind each error is: a member crash, a model error,
a hook block, a permission denial, a sandbox denial (with its reason), a budget stop (with the
budget and how far over it went) and a hook's block after the tool ran (with the hook). Real
agents produce each one in the members' sessions: their failed calls are kept in the session
(``agent/failures.py``) and their refused tool calls carry their kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from agentscope_teams import HarnessAgent, PermissionEngine, RuntimeContext, ScriptedModel
from agentscope_teams.errors import BudgetExceededError, ModelServerError
from agentscope_teams.sandbox import find_bwrap
from agentscope_teams.state import PermissionRule
from agentscope_teams.store import store_from_url

from .harness import Served
from .test_api import Api, make_team
from .test_dashboard import Tab, tab  # noqa: F401  (the chromium fixture)
from .test_dashboard_views import in_thread


def _no_deploys(payload: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "block", "reason": "no deploys on Fridays"}


def _listing_leaks(payload: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "block", "reason": "the listing names a secret"}


async def _fail(agent: HarnessAgent, ctx: RuntimeContext, error: type[Exception]) -> None:
    with pytest.raises(error):
        await agent.call("go on", ctx)


async def _w1(store_url: str, org: str, session: str, workspace: Path) -> None:
    """A model error, a budget stop, a hook block and a hook block after a tool ran in w1's
    session."""
    model = ScriptedModel(
        [
            ModelServerError("the provider answered 500 Internal Server Error", status_code=500),
            BudgetExceededError(
                "budget team:crew is spent", budget="team:crew", unit="tokens", limit=1000,
                used=1250,
            ),
            ScriptedModel.tool_call("write_file", {"file_path": "deploy.txt", "content": "go"}),
            ScriptedModel.tool_call("glob_files", {"pattern": "*"}),
            "not deploying",
        ]
    )  # fmt: skip
    ctx = RuntimeContext(session_id=session, user_id="alice", org_id=org)
    async with store_from_url(store_url) as store:
        agent = HarnessAgent(
            "w1", model, store=store, workspace=workspace,
            hooks={"PreToolUse": [("Write", _no_deploys)], "PostToolUse": [_listing_leaks]},
            permissions=PermissionEngine(mode="bypassPermissions"),
        )  # fmt: skip
        async with agent:
            await _fail(agent, ctx, ModelServerError)
            await _fail(agent, ctx, BudgetExceededError)
            await agent.call("deploy", ctx)


async def _w2(store_url: str, org: str, session: str, workspace: Path) -> None:
    """A sandbox denial, a permission denial and a crash in w2's session."""
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("bash", {"command": "echo owned > /etc/owned"}),
            ScriptedModel.tool_call("read_file", {"file_path": "secrets.env"}),
            "gave up",
            RuntimeError("the member's tool process died"),
        ]
    )
    ctx = RuntimeContext(session_id=session, user_id="alice", org_id=org)
    deny = PermissionRule(tool="read_file", behavior="deny")
    async with store_from_url(store_url) as store:
        agent = HarnessAgent(
            "w2", model, store=store, workspace=workspace, sandbox="bubblewrap",
            permissions=PermissionEngine([deny], mode="bypassPermissions"),
        )  # fmt: skip
        async with agent:
            await agent.call("break out", ctx)
            await _fail(agent, ctx, RuntimeError)


def test_the_errors_panel_names_each_kind(
    tab: Tab,  # noqa: F811
    served: Served,
    http: httpx.Client,
    org: str,
    tmp_path: Path,
) -> None:
    if find_bwrap() is None:
        pytest.skip("bubblewrap is not installed: no sandbox to deny anything")
    page = tab.page
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    members = {m["name"]: m["session_id"] for m in op.ok("GET", f"/api/teams/{team_id}")["members"]}
    in_thread(lambda: _w1(served.store_url, org, members["w1"], tmp_path / "w1"))
    in_thread(lambda: _w2(served.store_url, org, members["w2"], tmp_path / "w2"))

    page.goto(f"{served.base_url}/?token={served.tokens['alice']}")
    page.click(f'[data-team-id="{team_id}"]')
    page.locator('#errors li[data-kind="member_crash"]').wait_for()
    seen = {
        kind: page.inner_text(f'#errors li[data-kind="{kind}"]')
        for kind in (
            "model_error", "budget_stop", "hook_block", "permission_denied", "sandbox_denial",
            "member_crash", "hook_block_after_tool",
        )
    }  # fmt: skip
    assert seen["model_error"].startswith("MODEL ERROR")
    assert "w1" in seen["model_error"] and "500 Internal Server Error" in seen["model_error"]
    assert seen["budget_stop"].startswith("BUDGET STOP")
    assert "team:crew: 1,250 tokens used of 1,000 tokens, over by 250 tokens" in seen["budget_stop"]
    assert (
        seen["hook_block"].startswith("HOOK BLOCK")
        and "no deploys on Fridays" in seen["hook_block"]
    )
    assert seen["permission_denied"].startswith("PERMISSION DENIED")
    assert "read_file" in seen["permission_denied"]
    assert seen["sandbox_denial"].startswith("SANDBOX DENIAL") and "w2" in seen["sandbox_denial"]
    assert "Read-only file system" in seen["sandbox_denial"]
    assert seen["member_crash"].startswith("MEMBER CRASH")
    assert "the member's tool process died" in seen["member_crash"]
    after = seen["hook_block_after_tool"]
    assert after.startswith("HOOK BLOCK AFTER TOOL") and "glob_files" in after
    assert "hook: PostToolUse _listing_leaks" in after and "the listing names a secret" in after
    assert "refused: filesystem" in seen["sandbox_denial"]
    assert page.locator("#errors li").count() == 7
    assert page.inner_text("#error-count") == "7"
    assert tab.errors == []
