"""The MCP tool results of an agent tool: its answer, and the results that are not one.

A reply can end without an answer: it pauses for a confirmation, a PreToolUse hook defers a call
(:mod:`.deferred`), a hook stops it (``continue: false``, a refused prompt). Each is a result
whose text says what happened and whose ``_meta.agentscope_teams`` has ``status`` and the
``session_id``. **The one rule** (:func:`not_an_answer`): a tool that declares an output schema
(``AgentTool(output_type=...)`` of an object type) must return structured content matching it in
every result that is not an error (MCP clients check it; the SDK's raises "has an output schema
but did not return structured content"), and a reply without an answer has none, so for such a
tool every non-answer is a tool error (``isError`` true) with the same text and ``_meta``. A tool
without an output schema returns it as a plain result (``isError`` false), with
``structuredContent`` when there is some to give. Failures are always tool errors (:func:`error`).
"""

from __future__ import annotations

import json
from typing import Any

from ..agent.react import STOPPED_BY_HOOK
from ..events import RequireUserConfirmEvent
from ..message import OUTPUT_KEY, Msg

#: ``status`` of a reply waiting for the user's confirmation of tool calls.
AWAITING_CONFIRMATION = "awaiting_confirmation"
#: ``status`` of a reply a hook stopped before an answer (``continue: false``, a refused prompt).
STOPPED = "stopped_by_hook"
#: ``status`` of a typed tool's reply that ended with no structured answer for another reason.
NO_ANSWER = "no_answer"


def result_meta(session_id: str, **more: Any) -> dict[str, Any]:
    """The ``_meta`` of a tool result: ``{"agentscope_teams": {"session_id", ...more}}``."""
    return {"agentscope_teams": {"session_id": session_id, **more}}


def not_an_answer(
    text: str,
    session_id: str,
    *,
    schema: bool,
    status: str,
    structured: dict[str, Any] | None = None,
    **meta: Any,
) -> Any:
    """A result that is not the agent's answer: a tool error when the tool declares an output
    ``schema`` (no content can match it), else a plain result with ``structured`` content."""
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=None if schema else structured,
        is_error=schema,
        meta=result_meta(session_id, status=status, **meta),
    )


def error(text: str) -> Any:
    """A failed call: a tool error with a one-line reason."""
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def paused(event: RequireUserConfirmEvent, session_id: str, *, schema: bool) -> Any:
    """A reply waiting for the confirmation of tool calls; it stays stored for whoever can
    confirm it through agentscope-teams (MCP has no way to)."""
    names = [c.name for c in event.tool_calls]
    text = (
        f"The call awaits confirmation of tool call(s) {', '.join(names)} (reply id "
        f"{event.reply_id}, session {session_id}); it stays paused until someone with this "
        "identity confirms or rejects it through agentscope-teams."
    )
    return not_an_answer(
        text,
        session_id,
        schema=schema,
        status=AWAITING_CONFIRMATION,
        reply_id=event.reply_id,
        tool_calls=names,
    )


def final(msg: Msg, session_id: str, *, typed: bool, schema: bool) -> Any:
    """The result of a reply's final message that is not a deferral: the answer (``typed``: with
    its validated output as structured content), or a stop that is not one."""
    text = msg.get_text_content()
    if msg.metadata.get(STOPPED_BY_HOOK):
        return not_an_answer(
            f"Stopped by a hook: {text}", session_id, schema=schema, status=STOPPED
        )
    if schema and OUTPUT_KEY not in msg.metadata:
        text = f"The reply ended without a structured answer: {text}"
        return not_an_answer(text, session_id, schema=schema, status=NO_ANSWER)
    return _answer(msg, session_id, structured=typed)


def _answer(msg: Msg, session_id: str, *, structured: bool) -> Any:
    import mcp_types as types

    data = msg.metadata.get(OUTPUT_KEY) if structured else None
    text = msg.get_text_content()
    if structured and not text:
        text = json.dumps(data, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=data if isinstance(data, dict) else None,
        meta=result_meta(session_id),
    )
