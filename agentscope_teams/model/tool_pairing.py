"""Pairing tool calls with their results, shared by the request formats of every provider.

Both chat completions and the Messages API want each tool result right after the assistant turn
that made the call, whatever message of the conversation recorded it: :func:`results_by_call`
gathers the results of known calls, :func:`split_steps` cuts an assistant message that interleaves
calls and results into one turn per step, and a call left without a result is answered with
:data:`MISSING_RESULT`.
"""

from __future__ import annotations

from ..message import Block, Msg, ToolResultBlock

MISSING_RESULT = "error: no result was recorded for this tool call (it was interrupted)"


def results_by_call(messages: list[Msg]) -> tuple[set[str], dict[str, list[ToolResultBlock]]]:
    """The ids of the assistant's tool calls, and the results recorded for each of them."""
    called = {u.id for m in messages if m.role == "assistant" for u in m.tool_uses()}
    results: dict[str, list[ToolResultBlock]] = {}
    for msg in messages:
        for r in msg.tool_results():
            if r.tool_use_id in called:
                results.setdefault(r.tool_use_id, []).append(r)
    return called, results


def split_steps(blocks: list[Block]) -> list[list[Block]]:
    """Split an assistant message where content follows a tool result; results are dropped."""
    steps: list[list[Block]] = [[]]
    after_result = False
    for block in blocks:
        if isinstance(block, ToolResultBlock):
            after_result = True
            continue
        if after_result and steps[-1]:
            steps.append([])
        after_result = False
        steps[-1].append(block)
    return [s for s in steps if s]
