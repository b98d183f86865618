"""Human-in-the-loop: checking confirmations and closing tool calls that will never run."""

from __future__ import annotations

from ..errors import HITLError
from ..events import ConfirmResult, UserConfirmResultEvent, UserInterruptEvent
from ..message import Msg, ToolResultBlock, ToolUseBlock
from ..state import AgentState
from ..tools.plan import answers_text

INTERRUPTED_BY_USER = "interrupted by user: the tool call was not run"
NEW_MESSAGE_INTERRUPT = "interrupted by user: a new message arrived before this call was confirmed"
CANCELLED = "interrupted: the reply was cancelled before this tool call finished"
RECOVERED = (
    "the tool call did not complete: the process stopped before its result was saved; "
    "check the effect and retry if needed"
)
REJECTED = "the user rejected this tool call"
DECLINED = "the user declined to answer; go on with your best judgement and say what you assumed"


def answered(call: ToolUseBlock, answer: ConfirmResult) -> ToolResultBlock:
    """The result of a question for the user (a tool that ``asks_user``): the user's answers."""
    if not answer.confirmed or answer.answers is None:
        return ToolResultBlock(tool_use_id=call.id, name=call.name, output=DECLINED, is_error=True)
    return ToolResultBlock(
        tool_use_id=call.id,
        name=call.name,
        output=answers_text(answer.answers),
        data={"answers": dict(answer.answers)},
    )


def tool_results_msg(results: list[ToolResultBlock]) -> Msg:
    """The message carrying tool results back into the context."""
    return Msg(role="user", name="tool", content=list(results))


def close_pending(state: AgentState, reason: str) -> list[ToolResultBlock]:
    """Give every tool call without a result an error result ``reason``; clears the pause (and
    a deferral)."""
    pending = state.awaiting_tool_calls()
    state.awaiting_confirmation.clear()
    state.end_deferral()
    if not pending:
        return []
    results = [
        ToolResultBlock(tool_use_id=c.id, name=c.name, output=reason, is_error=True)
        for c in pending
    ]
    state.context.append(tool_results_msg(results))
    return results


def check_interrupt(state: AgentState, event: UserInterruptEvent) -> None:
    """An interrupt must name the paused reply (any reply_id is fine when nothing is pending)."""
    if state.has_awaiting_tool_calls() and event.reply_id != state.reply_id:
        raise HITLError(
            f"UserInterruptEvent.reply_id {event.reply_id!r} does not match the paused reply "
            f"{state.reply_id!r}; use agent state's reply_id"
        )


def check_confirmation(
    state: AgentState, event: UserConfirmResultEvent
) -> list[tuple[ToolUseBlock, ConfirmResult]]:
    """Match each paused tool call with the user's answer; raise ``HITLError`` on any mismatch."""
    if state.deferred_tool_calls:
        raise HITLError(
            f"tool call(s) {state.deferred_tool_calls} of session {state.session_id!r} were "
            "deferred by a PreToolUse hook, not asked of the user: resume with no message "
            "(agent.call(None, ctx)) and the hook decides them again",
            tool_call_id=state.deferred_tool_calls[0],
        )
    if not state.awaiting_confirmation:
        raise HITLError(
            f"no reply is waiting for confirmation in session {state.session_id!r}; "
            "send a new message instead"
        )
    if event.reply_id != state.reply_id:
        raise HITLError(
            f"UserConfirmResultEvent.reply_id {event.reply_id!r} does not match the paused reply "
            f"{state.reply_id!r}; confirm with the reply_id of the RequireUserConfirmEvent"
        )
    pending = {c.id: c for c in state.awaiting_tool_calls() if c.id in state.awaiting_confirmation}
    answers = _one_answer_per_call(event)
    unknown = sorted(set(answers) - set(pending))
    if unknown:
        raise HITLError(
            f"tool call ids {unknown} are not waiting for confirmation in reply "
            f"{state.reply_id!r}; answer only the calls of the RequireUserConfirmEvent",
            tool_call_id=unknown[0],
        )
    missing = [cid for cid in pending if cid not in answers]
    if missing:
        raise HITLError(
            f"no decision given for paused tool calls {missing}; answer every one",
            tool_call_id=missing[0],
        )
    return [(call, _checked(call, answers[cid])) for cid, call in pending.items()]


def _one_answer_per_call(event: UserConfirmResultEvent) -> dict[str, ConfirmResult]:
    """The answers by tool call id; two answers for one call are refused, even if they agree."""
    answers: dict[str, ConfirmResult] = {}
    for answer in event.results:
        cid = answer.tool_call_id
        if cid in answers:
            raise HITLError(
                f"tool call {cid!r} is answered more than once in one UserConfirmResultEvent; "
                "give exactly one decision per paused call",
                tool_call_id=cid,
            )
        answers[cid] = answer
    return answers


def _checked(call: ToolUseBlock, answer: ConfirmResult) -> ConfirmResult:
    """``answer`` if it decides ``call`` as proposed; raises ``HITLError`` otherwise."""
    if (answer.name is not None and answer.name != call.name) or (
        answer.input is not None and answer.input != call.input
    ):
        raise HITLError(
            f"the confirmation for tool call {call.id!r} changes its name or input; a confirmation "
            "can only accept or reject the call as the agent proposed it",
            tool_call_id=call.id,
        )
    if answer.remember and not answer.confirmed:
        raise HITLError(
            f"the answer for tool call {call.id!r} rejects it with remember=True; remember stores "
            "an allow rule, so it applies only to confirmed calls: set remember=False",
            tool_call_id=call.id,
        )
    return answer
