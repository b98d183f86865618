"""Human in the loop across processes: pause on a guarded tool, approve from a second invocation.

    python examples/hitl_approval.py start      # the agent asks to run `drop_table`, then stops
    python examples/hitl_approval.py approve    # a new process confirms; the tool runs once
    python examples/hitl_approval.py reject     # ... or refuse it

The paused reply lives in the store (default: a file store in the system temp directory; ``--store
URL`` picks another), so the approval can come from any process, hours later. ScriptedModel plays the
agent (no LLM, no key): it answers from the conversation alone.
"""

from __future__ import annotations

import argparse
import tempfile
from contextlib import aclosing
from pathlib import Path

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.events import ConfirmResult, UserConfirmResultEvent
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel
from agentscope_teams.tools import tool

DEFAULT_STORE = "file://" + str(Path(tempfile.gettempdir()) / "agentscope-teams-hitl-demo")
CTX = RuntimeContext(session_id="hitl-demo", user_id="alice")


@tool(requires_confirmation=True)
def drop_table(table: str) -> str:
    """Drop a database table (destructive: a human must approve).

    Args:
        table: The table to drop.
    """
    return f"table {table!r} dropped"


def brain(request: ModelRequest) -> ModelResponse | str:
    """Ask to drop the table; then report what the tool said (or that it was refused)."""
    for msg in reversed(request.messages):
        for result in msg.tool_results():
            return f"Outcome: {result.output}"
    return ScriptedModel.tool_call(
        "drop_table", {"table": "staging_events"}, text="Cleaning up: dropping the staging table."
    )


def agent(store_url: str) -> HarnessAgent:
    workspace = Path(tempfile.gettempdir()) / "agentscope-teams-hitl-demo-ws"
    return HarnessAgent(
        "janitor",
        ScriptedModel(brain, name="scripted"),
        workspace=workspace,
        store=store_url,
        tools=[drop_table],
        builtin_tools=False,
    )


async def start(store_url: str) -> None:
    async with agent(store_url) as janitor:
        await janitor.delete_session(CTX)  # start the demo from scratch
        # aclosing: leaving the loop early (an error, a break) stops the reply cleanly
        async with aclosing(janitor.stream("Clean up the staging data.", CTX)) as events:
            async for event in events:
                if event.type == "require_user_confirm":
                    calls = ", ".join(f"{c.name}({c.input})" for c in event.tool_calls)
                    print(f"paused: the agent wants to run {calls}")
                elif event.type == "reply_end":
                    print(f"janitor: {event.msg.get_text_content()}")
    flag = "" if store_url == DEFAULT_STORE else f" --store {store_url}"
    print(f"approve with:  python examples/hitl_approval.py approve{flag}")


async def decide(store_url: str, confirmed: bool) -> None:
    async with agent(store_url) as janitor:
        state = await janitor.get_agent_state(CTX)
        if not state.awaiting_confirmation:
            raise SystemExit("nothing is waiting for approval: run `start` first")
        answers = [
            ConfirmResult(tool_call_id=call_id, confirmed=confirmed)
            for call_id in state.awaiting_confirmation
        ]
        decision = UserConfirmResultEvent(reply_id=state.reply_id, results=answers)
        print("approved" if confirmed else "rejected", "in a new process")
        reply = await janitor.call(decision, CTX)
        print(f"janitor: {reply.get_text_content()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["start", "approve", "reject"])
    parser.add_argument("--store", default=DEFAULT_STORE, help=f"store URL ({DEFAULT_STORE})")
    args = parser.parse_args()
    if args.step == "start":
        anyio.run(start, args.store)
    else:
        anyio.run(decide, args.store, args.step == "approve")


if __name__ == "__main__":
    main()
