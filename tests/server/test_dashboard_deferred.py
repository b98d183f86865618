"""A session whose tool call a PreToolUse hook deferred, as the control plane shows it: the session
list (``GET /api/sessions``: ``deferred``, each call's tool, input and the hook's reason) and the
session's JSON (its state's ``deferred_tool_calls`` and ``deferred_reasons``), and the dashboard
(a badge in the list; in the conversation, the call as deferred with its reason, not as running).
Once the session is resumed and the hook allows, the call ran and nothing is shown deferred. A real
agent with a real command hook writes the session; real Chromium reads it."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import store_from_url

from .harness import Served
from .test_api import Api
from .test_dashboard import Tab, tab  # noqa: F401  (the chromium fixture)
from .test_dashboard_views import HOSTILE, in_thread

#: A PreToolUse hook answering the decision in the file ``decision`` next to it, with the text of
#: the file ``reason`` as its reason.
HOOK = """\
import json, pathlib, sys
here = pathlib.Path(__file__).parent
json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                  "permissionDecision": (here / "decision").read_text().strip(),
                  "permissionDecisionReason": (here / "reason").read_text()}}))
"""


def _agent(folder: Path, store: object) -> HarnessAgent:
    hook = folder / "decide.py"
    hook.write_text(f"#!{sys.executable}\n{HOOK}")
    hook.chmod(0o755)
    command = {"type": "command", "command": str(hook)}
    model = ScriptedModel(
        [ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"}), "written"]
    )
    return HarnessAgent(
        "lead",
        model,
        "sys",
        store=store,  # type: ignore[arg-type]
        workspace=folder / "ws",
        workspace_scope="shared",
        hooks={"PreToolUse": [{"matcher": "Write", "hooks": [command]}]},
    )


def test_a_deferred_call_is_shown_with_its_reason_until_the_session_resumes(
    tab: Tab,  # noqa: F811
    served: Served,
    http: httpx.Client,
    org: str,
    tmp_path: Path,
) -> None:
    page = tab.page
    (tmp_path / "decision").write_text("defer")
    reason = f"needs a sign-off {HOSTILE}"
    (tmp_path / "reason").write_text(reason)
    ctx = RuntimeContext(session_id="s-deferred", user_id="alice", org_id=org)

    async def call(resume: bool) -> str:
        async with store_from_url(served.store_url) as store, _agent(tmp_path, store) as agent:
            return (await agent.call(None if resume else "write it", ctx)).get_text_content()

    in_thread(lambda: call(False))
    op = Api(http, served.tokens["alice"])
    listed = {s["session_id"]: s for s in op.ok("GET", "/api/sessions")}
    [deferred] = listed["s-deferred"]["deferred"]
    assert deferred["name"] == "write_file" and deferred["reason"] == reason
    assert deferred["input"] == {"path": "a.txt", "content": "x"}
    state = op.ok("GET", "/api/sessions/lead/s-deferred")["state"]
    assert state["deferred_tool_calls"] == [deferred["id"]]
    assert state["deferred_reasons"] == {deferred["id"]: reason}

    page.goto(f"{served.base_url}/?token={served.tokens['alice']}#sessions")
    row = page.locator('#sessions-body tr[data-session="s-deferred"]')
    row.wait_for()
    assert "deferred: write_file" in row.locator(".badge.deferred").inner_text()
    row.click()
    shown = page.locator(f'[data-deferred="{deferred["id"]}"]')
    shown.wait_for()
    text = shown.inner_text()
    assert text.startswith("Deferred by a PreToolUse hook: write_file")
    assert f"Reason: {reason}" in text and "a.txt" in text
    assert page.locator("[data-running]").count() == 0  # not shown as running
    assert "(deferred by a hook)" in page.inner_text(f'[data-tool-call="{deferred["id"]}"]')
    assert page.locator("img").count() == 0 and page.evaluate("window.__pwned") is None

    (tmp_path / "decision").write_text("allow")
    assert in_thread(lambda: call(True)) == "written"
    assert (tmp_path / "ws" / "a.txt").read_text() == "x"
    listed = {s["session_id"]: s for s in op.ok("GET", "/api/sessions")}
    assert listed["s-deferred"]["deferred"] == []
    page.reload()
    page.locator(f'[data-tool-result="{deferred["id"]}"]').wait_for()
    assert page.locator("[data-deferred]").count() == 0
    assert tab.errors == []
