"""The SDK's ``AgentExecutor`` over one of our agents: an A2A task is one call.

* ``contextId`` is the session id, under the caller's (org, user) from its credentials;
* a reply that pauses for confirmation or for ``ask_user_question`` puts the task in
  ``input-required``; the status message names the paused calls (a ``DataPart`` under
  ``agentscope_teams``), and the next message on the task answers them, in whichever process
  receives it (the pause is in the session, the task in the store);
* a reply a PreToolUse hook deferred puts the task in ``input-required`` too, and the next message
  on it resumes the deferred calls (:mod:`.deferred`);
* stream events become status updates (tool calls, results, hints: a ``DataPart`` with the event)
  and artifact updates (text deltas append to the answer artifact, replaced by the whole answer
  at the end); structured output is a ``DataPart`` of the answer;
* a cancelled task cancels the call: the SDK cancels :meth:`execute` in the process running it;
  a cancel recorded by another process reaches the task's event stream, where
  :func:`_follow_cancel` sees it and stops the call (:func:`_watch_cancel`, reading the task
  every ``cancel_poll`` seconds, is the fallback). A store error in either is logged and they
  look again: a store that is away for a while does not end the call (nor leave its task
  ``working`` forever, as failing it while the store is away did).
"""

from __future__ import annotations

import json
import logging
from contextlib import aclosing
from typing import Any

import anyio
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.cluster import TaskEventStream, TaskVersion
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, Task, TaskState, TaskStatus, TaskStatusUpdateEvent

from ..compose import HarnessAgent
from ..context import RuntimeContext
from ..errors import AgentScopeTeamsError, public_message
from ..events import (
    ConfirmResult,
    HintEvent,
    ReplyEndEvent,
    ReplyInput,
    RequireUserConfirmEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    UserConfirmResultEvent,
)
from ..message import ToolUseBlock
from .auth import caller_of
from .deferred import DEFERRED_STATUS, deferred_message, is_deferred, resume_input

log = logging.getLogger(__name__)

#: The key of our data in DataParts and metadata.
DATA_KEY = "agentscope_teams"
_YES = {"y", "yes", "ok", "approve", "approved", "confirm", "confirmed", "allow", "accept"}
_RESULT_CHARS = 2000
#: How long the cancel follower waits before following a task's event stream again after a
#: store error.
_RETRY_SECONDS = 1.0


class AgentTaskExecutor(AgentExecutor):
    """Runs ``agent`` for each A2A task (``output_type`` as for ``HarnessAgent.call``)."""

    def __init__(
        self,
        agent: HarnessAgent,
        tasks: TaskStore,
        *,
        output_type: Any = None,
        cancel_poll: float = 1.0,
        events: TaskEventStream | None = None,
    ) -> None:
        self.agent, self.tasks, self.output_type = agent, tasks, output_type
        self.cancel_poll, self.events = cancel_poll, events

    async def execute(self, context: RequestContext, event_queue: Any) -> None:
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        task = context.current_task
        if task is None and context.message is not None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        try:
            who = caller_of(context.call_context)
            run_ctx = RuntimeContext(
                session_id=context.context_id, user_id=who.user_id, org_id=who.org_id
            )
            reply_input = _input_of(context, task)
        except (AgentScopeTeamsError, ValueError) as exc:
            await updater.failed(_agent_message(updater, _failure(exc)))
            return
        await updater.start_work()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_cancel, self, context, tg.cancel_scope)
            if self.events is not None:
                tg.start_soon(_follow_cancel, self.events, context, tg.cancel_scope)
            await _run(self, updater, reply_input, run_ctx)
            tg.cancel_scope.cancel()

    async def cancel(self, context: RequestContext, event_queue: Any) -> None:
        """The SDK has cancelled :meth:`execute` (which stops the reply); record it."""
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(_agent_message(updater, "cancelled by the caller"))


async def _run(
    executor: AgentTaskExecutor, updater: TaskUpdater, reply_input: ReplyInput, ctx: RuntimeContext
) -> None:
    """Stream the reply into the task; the task ends only once the stream has ended (the session
    is saved by then: a next message on the context, in any process, sees this turn)."""
    answer_id = f"answer-{updater.task_id}"
    streamed = False
    end: ReplyEndEvent | RequireUserConfirmEvent | None = None
    try:
        stream = executor.agent.stream(reply_input, ctx, output_type=executor.output_type)
        async with aclosing(stream) as events:
            async for event in events:
                if isinstance(event, TextDeltaEvent) and event.text:
                    await updater.add_artifact(
                        [new_text_part(event.text)],
                        artifact_id=answer_id,
                        name="answer",
                        append=streamed,
                        last_chunk=False,
                    )
                    streamed = True
                elif isinstance(event, ToolCallEvent | ToolResultEvent | HintEvent):
                    data = _event_data(event)
                    message = updater.new_agent_message([new_data_part({DATA_KEY: data})])
                    await updater.update_status(TaskState.TASK_STATE_WORKING, message)
                elif isinstance(event, RequireUserConfirmEvent):
                    end = event  # the paused reply still ends (ReplyEndEvent): the pause counts
                elif isinstance(event, ReplyEndEvent) and end is None:
                    end = event
    except (AgentScopeTeamsError, ValueError) as exc:
        await updater.failed(_agent_message(updater, _failure(exc)))
        return
    except Exception as exc:  # a bug: the task fails saying so; its text stays in the log
        log.exception("A2A task %s: the agent failed", updater.task_id)
        text = f"the agent failed ({type(exc).__name__}, an internal error); see the server's log"
        await updater.failed(_agent_message(updater, text))
        return
    if isinstance(end, RequireUserConfirmEvent):
        await updater.requires_input(_pause_message(updater, end))
    elif isinstance(end, ReplyEndEvent) and is_deferred(end.msg):
        await updater.requires_input(deferred_message(updater, end.msg, ctx.session_id))
    elif isinstance(end, ReplyEndEvent):
        parts = _answer_parts(end, structured=executor.output_type is not None)
        await updater.add_artifact(
            parts, artifact_id=answer_id, name="answer", append=False, last_chunk=True
        )
        await updater.complete(updater.new_agent_message(parts))
    else:
        await updater.failed(_agent_message(updater, "the agent ended without a reply"))


async def _watch_cancel(
    executor: AgentTaskExecutor, context: RequestContext, scope: anyio.CancelScope
) -> None:
    """Stop the call when another process recorded the task as cancelled."""
    assert context.task_id is not None
    while True:
        await anyio.sleep(executor.cancel_poll)
        try:
            task = await executor.tasks.get(context.task_id, context.call_context)
        except AgentScopeTeamsError as exc:  # the store is away: the call goes on; look again
            log.warning(
                "A2A task %s: cannot read it to look for a cancel: %s", context.task_id, exc
            )
            continue
        if task is not None and task.status.state == TaskState.TASK_STATE_CANCELED:
            scope.cancel()
            return


async def _follow_cancel(
    events: TaskEventStream, context: RequestContext, scope: anyio.CancelScope
) -> None:
    """Stop the call as soon as a cancel recorded by another process reaches the task's event
    stream (:func:`_watch_cancel` is the fallback, should the event be lost)."""
    assert context.task_id is not None
    while True:
        try:
            async with aclosing(
                events.subscribe(context.task_id, after=TaskVersion.MISSING)
            ) as stream:
                async for versioned in stream:
                    event = versioned.event
                    if (
                        isinstance(event, TaskStatusUpdateEvent)
                        and event.status.state == TaskState.TASK_STATE_CANCELED
                    ):
                        scope.cancel()
                        return
            return  # the stream ended
        except AgentScopeTeamsError as exc:  # the store is away: the call goes on; follow again
            log.warning("A2A task %s: its event stream failed: %s", context.task_id, exc)
            await anyio.sleep(_RETRY_SECONDS)


def _failure(exc: Exception) -> str:
    """What a failed task tells its caller: the error in its public form (a store error names no
    URL, host or database; the server's log has the full message)."""
    log.warning("A2A task failed: %s: %s", type(exc).__name__, exc)
    return f"{type(exc).__name__}: {public_message(exc)}"


def _agent_message(updater: TaskUpdater, text: str) -> Message:
    return updater.new_agent_message([new_text_part(text)])


def _event_data(event: ToolCallEvent | ToolResultEvent | HintEvent) -> dict[str, Any]:
    data: dict[str, Any] = event.model_dump(mode="json")
    if isinstance(event, ToolResultEvent):
        output = json.dumps(data["result"].get("output"), ensure_ascii=False)
        if len(output) > _RESULT_CHARS:
            data["result"]["output"] = output[:_RESULT_CHARS] + "... (cut)"
    return data


def _answer_parts(event: ReplyEndEvent, *, structured: bool) -> list[Part]:
    text = event.msg.get_text_content()
    parts = [new_text_part(text)] if text else []
    if structured and event.msg.metadata.get("output") is not None:
        parts.append(new_data_part(event.msg.metadata["output"]))
    return parts or [new_text_part("")]


def _pause_message(updater: TaskUpdater, event: RequireUserConfirmEvent) -> Message:
    lines = []
    for call in event.tool_calls:
        questions = call.input.get("questions") if call.name == "ask_user_question" else None
        if isinstance(questions, list):
            lines += [str(q.get("question", "")) for q in questions if isinstance(q, dict)]
        else:
            lines.append(f"May I run {call.name} {json.dumps(call.input, ensure_ascii=False)}?")
    text = "\n".join(lines) + "\n(answer in the next message on this task; yes/no to confirm)"
    data = {
        "status": "awaiting_confirmation",
        "reply_id": event.reply_id,
        "tool_calls": [c.model_dump(mode="json") for c in event.tool_calls],
    }
    return updater.new_agent_message([new_text_part(text), new_data_part({DATA_KEY: data})])


def _pause_of(task: Task) -> dict[str, Any] | None:
    for data in get_data_parts(list(task.status.message.parts)):
        if isinstance(data, dict) and isinstance(data.get(DATA_KEY), dict):
            pause: dict[str, Any] = data[DATA_KEY]
            if pause.get("status") in ("awaiting_confirmation", DEFERRED_STATUS):
                return pause
    return None


def _input_of(context: RequestContext, task: Task | None) -> ReplyInput:
    """The reply input of a message: an answer to the task's pause (a confirmation, or the
    resume of deferred calls), else the text to send."""
    message = context.message
    parts = list(message.parts) if message is not None else []
    text = "\n".join(get_text_parts(parts)).strip()
    data = [d for d in get_data_parts(parts) if d is not None]
    pause = _pause_of(task) if task is not None else None
    if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED and pause:
        if pause["status"] == DEFERRED_STATUS:
            return resume_input(text, data)
        return _answer(pause, text, data)
    if data:
        text = "\n".join([text, *(json.dumps(d, ensure_ascii=False) for d in data)]).strip()
    if not text:
        raise ValueError("the message has no text or data for the agent; send a text part")
    return text


def _answer(pause: dict[str, Any], text: str, data: list[Any]) -> UserConfirmResultEvent:
    """``{"results": [ConfirmResult, ...]}`` as data, else the text answers every paused call:
    the answer to the questions of ``ask_user_question``, yes/no for a confirmation."""
    given = next((d for d in data if isinstance(d, dict) and "results" in d), None)
    if given is not None:
        results = [ConfirmResult.model_validate(r) for r in given["results"]]
        return UserConfirmResultEvent(reply_id=pause["reply_id"], results=results)
    calls = [ToolUseBlock.model_validate(c) for c in pause["tool_calls"]]
    yes = text.lower().rstrip(".!") in _YES
    out = []
    for call in calls:
        questions = call.input.get("questions") if call.name == "ask_user_question" else None
        if isinstance(questions, list):
            answers = {str(q.get("question")): text for q in questions if isinstance(q, dict)}
            out.append(ConfirmResult(tool_call_id=call.id, confirmed=bool(text), answers=answers))
        else:
            out.append(ConfirmResult(tool_call_id=call.id, confirmed=yes))
    return UserConfirmResultEvent(reply_id=pause["reply_id"], results=out)
