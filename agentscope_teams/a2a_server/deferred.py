"""A reply a PreToolUse hook deferred (``permissionDecision: "defer"``), over A2A.

* The task goes to ``input-required`` (not ``completed``: the reply has no answer yet). Its status
  message has a text part naming each deferred call (tool, input, the hook's reason) and saying how
  to go on, and a ``DataPart`` ``{"agentscope_teams": {"status": "tool_deferred", "session_id",
  "reply_id", "tool_calls": [{"id", "name", "input", "reason"}], "input_not_added"}}``.
* **Resume**: the next message on that task (in any process) calls the agent again on the session,
  which runs the calls' PreToolUse hooks again. A message with no text and no data resumes with no
  new message (``agent.call(None, ...)``); otherwise its text (and data, as JSON) is the new message,
  added after the calls' results, or not added when they are deferred again (then
  ``input_not_added`` is true: send it again). A deferred-again call leaves the task
  ``input-required`` once more; the answer completes it.
* The waiting task is subject to the input time-out as any ``input-required`` task
  (:mod:`.lifetimes`): cancelled when no message came in time. The session keeps the calls: a
  message on the same ``contextId`` in a new task resumes them too.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message

from ..agent.deferral import INPUT_NOT_ADDED, STOP_REASON, TOOL_DEFERRED, calls_in
from ..events import ReplyInput
from ..message import Msg

#: The ``status`` of the data of a task whose reply a hook deferred.
DEFERRED_STATUS = TOOL_DEFERRED


def is_deferred(msg: Msg) -> bool:
    """Whether ``msg``, a reply's final message, says a hook deferred its calls."""
    return msg.metadata.get(STOP_REASON) == TOOL_DEFERRED


def deferred_message(updater: TaskUpdater, msg: Msg, session_id: str) -> Message:
    """The status message of a task whose reply ended with deferred calls (``msg``: its final
    message, whose metadata lists them)."""
    calls = calls_in(msg)
    dropped = bool(msg.metadata.get(INPUT_NOT_ADDED))
    lines = [f"A PreToolUse hook deferred {c.summary()}; it did not run." for c in calls]
    lines.append(
        "Send a message on this task to run its hook again and go on: an empty message adds "
        "nothing; text is added after the call's result (not if the call is deferred again)."
    )
    if dropped:
        lines.append("Your last message was not added: send it again once the call is decided.")
    data: dict[str, Any] = {
        "status": DEFERRED_STATUS,
        "session_id": session_id,
        "reply_id": msg.metadata.get("reply_id", ""),
        "tool_calls": [c.model_dump(mode="json") for c in calls],
        "input_not_added": dropped,
    }
    return updater.new_agent_message(
        [new_text_part("\n".join(lines)), new_data_part({"agentscope_teams": data})]
    )


def resume_input(text: str, data: list[Any]) -> ReplyInput:
    """The reply input of a message answering a deferral: None (resume only) when it carries
    nothing, else its text and data as one message."""
    text = "\n".join([text, *(json.dumps(d, ensure_ascii=False) for d in data)]).strip()
    return text or None
