"""A reply a PreToolUse hook deferred (``permissionDecision: "defer"``), as an MCP tool result.

It is not an answer. The result's text says which calls were deferred (tool, input, the hook's
``permissionDecisionReason``) and how to go on; ``_meta.agentscope_teams`` has ``session_id``,
``status: "tool_deferred"``, ``deferred`` (each call's ``id``, ``name``, ``input``, ``reason``)
and ``input_not_added``. A tool without an output schema also returns ``{"deferred": [...],
"session_id"}`` as structured content, with ``isError`` false; for a tool with an output schema
it is a tool error (``isError`` true) with the same text and ``_meta``: the rule of every result
that is not an answer, :func:`.results.not_an_answer`.

**Resume**: call the tool again on the same session (the same ``session_id``; or none, in the
same MCP session). ``message: ""`` runs the deferred calls' PreToolUse hooks again and adds no
message (``agent.call(None, ...)``); an empty message on a session with nothing deferred is a tool
error saying so. A non-empty message resumes too and is added after the calls' results, or not
added when they are deferred again (``input_not_added`` true: send it again).
"""

from __future__ import annotations

from typing import Any

from ..agent.deferral import INPUT_NOT_ADDED, TOOL_DEFERRED, calls_in
from ..message import Msg
from .results import not_an_answer


def nothing_to_resume(session_id: str) -> str:
    """The tool error of an empty message on a session with no deferred call."""
    return (
        f"argument 'message' is empty, which resumes tool calls a hook deferred, and session "
        f"{session_id!r} has none; send a message"
    )


def deferred_result(msg: Msg, session_id: str, *, schema: bool) -> Any:
    """The result of a reply a hook deferred (``msg``: its final message): not an answer
    (``schema``: the tool declares an output schema)."""
    calls = calls_in(msg)
    listed = [c.model_dump(mode="json") for c in calls]
    lines = [f"Deferred: a PreToolUse hook deferred {c.summary()}; it did not run." for c in calls]
    lines.append(
        f"Call this tool again with session_id {session_id!r} to run its hook again: message "
        '"" adds nothing, a message is added after the call\'s result.'
    )
    dropped = bool(msg.metadata.get(INPUT_NOT_ADDED))
    if dropped:
        lines.append("Your message was not added: send it again once the call is decided.")
    text = "\n".join(lines)
    return not_an_answer(
        text,
        session_id,
        schema=schema,
        status=TOOL_DEFERRED,
        structured={"deferred": listed, "session_id": session_id},
        deferred=listed,
        input_not_added=dropped,
    )
