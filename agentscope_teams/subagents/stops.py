"""SubagentStart / SubagentStop: one pair per run, with the run id as ``agent_id``.

SubagentStart fires when a run is registered; SubagentStop when it ends, whatever the end:
completed, failed, cancelled, or lost (a process that died mid-run: the next reader that finds the
run ended emits it). Which process emits it is decided by :meth:`RunBook.claim_stop`, a
compare-and-set on the run record, so it is emitted once (claimed before it is emitted: a process
dying in between loses that one event rather than repeating it). Each also goes out as an
OpenTelemetry span event (``agentscope_teams.subagent.spawn`` / ``...stop``).
"""

from __future__ import annotations

import logging
from typing import Any

from .. import tracing
from ..hooks import HookOutcome, Hooks, McpServers
from ..hooks.prompt import AgentRunner
from ..model.base import ChatModel
from .runs import RunBook, RunRecord

log = logging.getLogger(__name__)


def _payload(book: RunBook, rec: RunRecord, cwd: str) -> dict[str, Any]:
    return {
        "session_id": book.scope[2],
        "cwd": cwd,
        "agent_id": rec.run_id,
        "agent_type": rec.spec,
    }


async def subagent_start(hooks: Hooks | None, book: RunBook, rec: RunRecord, cwd: str) -> None:
    """Fire SubagentStart for a run just registered (its answer is informational)."""
    if hooks:
        await hooks.fire("SubagentStart", _payload(book, rec, cwd))


async def subagent_stop(
    hooks: Hooks | None,
    book: RunBook,
    rec: RunRecord,
    cwd: str,
    *,
    final: bool = True,
    stop_hook_active: bool = False,
    last_message: str | None = None,
    model: ChatModel | None = None,
    agent_runner: AgentRunner | None = None,
    servers: McpServers | None = None,
) -> HookOutcome | None:
    """Emit the run's SubagentStop if this caller claims it (None if another did or will);
    ``model`` (the child's) judges its prompt and agent hooks that name none, ``agent_runner``
    runs agent hooks' verifiers, ``servers`` (the child's MCP servers) serve mcp_tool hooks.

    With ``final=False`` the run is still active (its last answer, before it is recorded): a
    hook that blocks gets the claim undone, and the caller runs another turn with the reason.
    """
    claimed = await book.claim_stop(rec.run_id, final=final)
    if claimed is None:
        return None
    tracing.event(
        tracing.names.SUBAGENT_STOP,
        {tracing.names.RUN_ID: rec.run_id, tracing.names.SPEC: rec.spec, "status": claimed.status},
    )
    if not hooks:
        return HookOutcome()
    payload = {
        **_payload(book, claimed, cwd),
        "stop_hook_active": stop_hook_active,
        "status": str(claimed.status if final else "completed"),
    }
    if last_message is not None:
        payload["last_assistant_message"] = last_message
    try:
        outcome = await hooks.fire(
            "SubagentStop", payload, model=model, agent_runner=agent_runner, servers=servers
        )
    except Exception as exc:  # never lose the run's end for a hook's failure
        log.warning("SubagentStop hooks of run %s failed: %s", rec.run_id, exc)
        return HookOutcome()
    if outcome.blocked and not outcome.stop and not final:  # the run goes on: stops again later
        await book.unclaim_stop(rec.run_id)
    return outcome
