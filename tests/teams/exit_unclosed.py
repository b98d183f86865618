"""Scripts that never close what they opened: the interpreter must still exit quietly.

Run as ``python tests/teams/exit_unclosed.py MODE STORE_URL ORG WORKSPACE``. Each mode calls a
``HarnessAgent`` and exits without ``aclose`` / ``async with`` / ``close_sync``:

- ``call``: one plain reply;
- ``team``: the lead forms a team (``createTeam``, ``spawnMember``, ``assignTask``) and returns while
  its member is still inside a model call;
- ``metering``: ``team`` inside ``metering()``, the CLI's usage meter;
- ``twice``: two ``anyio.run`` in a row with one agent (a script's second event loop);
- ``sync``: ``team`` through ``call_sync`` (the agent's own loop thread).

It prints the lead's reply; tests/teams/test_exit_unclosed.py reads stderr for what a leak prints
("Task was destroyed but it is pending!", "Event loop is closed", a traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SubagentSpec
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.tracing.usage import metering

MEMBER_PROMPT = "You check the project."


async def _turn(request: ModelRequest) -> str:
    """The lead answers at once; the member is still thinking when the process exits."""
    if request.system_prompt.startswith(MEMBER_PROMPT):
        await anyio.sleep(60)
        return "checked"
    return "done"


def _lead(mode: str, url: str, workspace: Path) -> HarnessAgent:
    checker = SubagentSpec(name="checker", description="Checks", system_prompt=MEMBER_PROMPT)
    if mode in ("call", "twice"):
        return HarnessAgent("lead", ScriptedModel(["one", "two"]), store=url, workspace=workspace)
    form = [
        ("createTeam", {"name": "crew", "description": "check the project"}),
        ("spawnMember", {"name": "c1", "spec": "checker"}),
        ("assignTask", {"title": "check", "description": "look around", "assignee": "c1"}),
    ]
    model = ScriptedModel([ScriptedModel.tool_calls(form), _turn, _turn, _turn])
    return HarnessAgent("lead", model, specs=[checker], store=url, workspace=workspace)


def main(mode: str, url: str, org: str, workspace: Path) -> None:
    lead = _lead(mode, url, workspace)
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)

    async def call() -> None:
        reply = await lead.call("go", ctx)
        await anyio.sleep(0.3)  # the member's call has started
        print(reply.get_text_content(), flush=True)

    async def metered() -> None:
        with metering():
            await call()

    if mode == "sync":
        print(lead.call_sync("go", ctx).get_text_content(), flush=True)
        return
    anyio.run(metered if mode == "metering" else call)
    if mode == "twice":
        anyio.run(call)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
