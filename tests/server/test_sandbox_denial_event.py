"""A sandbox denial is one event: a member's shell command that the kernel refuses inside a real
bubblewrap sandbox (a write outside the workspace) and one the permission engine refuses (a deny
rule) each move ``agentscope_teams_sandbox_denials_total`` once, read back from the server's
``/metrics``, and each is listed once in the team's errors, with the same reason."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import anyio
import httpx
import pytest

from agentscope_teams import HarnessAgent, PermissionEngine, RuntimeContext, ScriptedModel
from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.state import PermissionRule
from agentscope_teams.store import store_from_url

from ..sandbox.conftest import require_bwrap
from .harness import Served
from .test_api import Api, make_team
from .test_metrics import scrape, value

DENIALS = "agentscope_teams_sandbox_denials_total"


async def _member_call(store_url: str, org: str, session: str, ws: Path, target: Path) -> None:
    """w2 writes ``target`` (outside its workspace) in bubblewrap, then tries a denied ``rm``."""
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("bash", {"command": f"echo owned > {target}"}, id="c1"),
            ScriptedModel.tool_call("bash", {"command": "rm -rf build"}, id="c2"),
            "gave up",
        ]
    )
    deny_rm = PermissionRule(tool="bash", behavior="deny", pattern="rm:*")
    ctx = RuntimeContext(session_id=session, user_id="alice", org_id=org)
    async with store_from_url(store_url) as store:
        agent = HarnessAgent(
            "w2", model, store=store, workspace=ws, sandbox="bubblewrap",
            permissions=PermissionEngine([deny_rm], mode="bypassPermissions"),
        )  # fmt: skip
        async with agent:
            await agent.call("break out", ctx)


def test_each_sandbox_denial_is_counted_and_listed_once(
    served: Served, http: httpx.Client, org: str, tmp_path: Path
) -> None:
    require_bwrap()
    target = Path("/usr") / f"agentscope-denial-{uuid.uuid4().hex[:8]}"
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    members = {m["name"]: m["session_id"] for m in op.ok("GET", f"/api/teams/{team_id}")["members"]}
    before = scrape(http)

    anyio.run(_member_call, served.store_url, org, members["w2"], tmp_path / "w2", target)

    assert not target.exists()  # the sandbox held
    after = scrape(http)
    moved = {
        reason: value(after, DENIALS, reason=reason) - value(before, DENIALS, reason=reason)
        for reason in ("permission", "filesystem", "network", "operation")
    }
    assert moved == {"permission": 1, "filesystem": 1, "network": 0, "operation": 0}
    errors = op.ok("GET", f"/api/teams/{team_id}/errors")
    found = [e for e in errors if e["kind"] == "sandbox_denial"]
    denials = sorted(((e["who"], e["what"], e["reason"], e["cause"]) for e in found), key=str)
    assert denials == [("w2", "bash", "filesystem", None), ("w2", "bash", "permission", "rule")]
    assert [e["kind"] for e in errors].count("permission_denied") == 0  # not listed twice
    assert any("Read-only file system" in e["detail"] for e in errors)


def test_the_write_works_without_the_sandbox_and_is_no_denial(tmp_path: Path) -> None:
    """The control: on the host, the write the sandbox refused succeeds."""
    target = Path("/usr") / f"agentscope-denial-{uuid.uuid4().hex[:8]}"
    if not os.access(target.parent, os.W_OK):
        pytest.skip("/usr is not writable by this user: the host itself refuses the write")
    try:
        result = anyio.run(
            UnsafeHostSandbox().run, f"echo owned > {target} && echo WROTE", tmp_path
        )
        assert "WROTE" in result.output and target.exists()
    finally:
        target.unlink(missing_ok=True)
