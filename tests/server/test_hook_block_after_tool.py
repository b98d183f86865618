"""A PostToolUse hook that blocks after the tool ran (Claude Code's exit code 2) is listed in the
team's errors as its own kind, ``hook_block_after_tool``, naming the hook and the tool; a
PostToolUse hook that only adds context is not an error."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from agentscope_teams import HarnessAgent, PermissionEngine, RuntimeContext, ScriptedModel
from agentscope_teams.store import store_from_url

from ..hooks.helpers import script
from .harness import Served
from .test_api import Api, make_team


def _hooks(folder: Path) -> dict[str, list[dict[str, object]]]:
    """A blocking PostToolUse hook on Write, a context-only one on Glob."""
    lint = script(folder, "lint.sh", "cat > /dev/null\necho 'a.txt fails the linter' >&2\nexit 2\n")
    note = script(folder, "note.sh", 'cat > /dev/null\necho \'{"additionalContext": "seen"}\'\n')
    return {
        "PostToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": lint}]},
            {"matcher": "Glob", "hooks": [{"type": "command", "command": note}]},
        ]
    }


async def _w1(store_url: str, org: str, session: str, ws: Path, folder: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"}, id="c1"),
            ScriptedModel.tool_call("glob_files", {"pattern": "*.txt"}, id="c2"),
            "done",
        ]
    )
    ctx = RuntimeContext(session_id=session, user_id="alice", org_id=org)
    async with store_from_url(store_url) as store:
        agent = HarnessAgent(
            "w1", model, store=store, workspace=ws, workspace_scope="shared", hooks=_hooks(folder),
            permissions=PermissionEngine(mode="bypassPermissions"),
        )  # fmt: skip
        async with agent:
            await agent.call("write it", ctx)


def test_a_post_tool_use_block_is_listed_with_its_hook_and_tool(
    served: Served, http: httpx.Client, org: str, tmp_path: Path
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    members = {m["name"]: m["session_id"] for m in op.ok("GET", f"/api/teams/{team_id}")["members"]}
    ws = tmp_path / "w1"
    anyio.run(_w1, served.store_url, org, members["w1"], ws, tmp_path)

    assert (ws / "a.txt").read_text() == "x"  # the tool ran: the hook could only block after
    errors = op.ok("GET", f"/api/teams/{team_id}/errors")
    assert [e["kind"] for e in errors] == ["hook_block_after_tool"]  # the Glob note is no error
    [entry] = errors
    assert (entry["who"], entry["what"]) == ("w1", "write_file")
    assert entry["hook"].startswith("PostToolUse[Write] ") and entry["hook"].endswith("lint.sh")
    assert entry["detail"] == "a.txt fails the linter"
    assert entry["session_id"] == members["w1"]
