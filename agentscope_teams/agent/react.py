"""``ReActAgent``: reason (model call), act (tool calls), observe, until the model answers.

One implementation: :meth:`ReActAgent.reply_stream` is the loop; :meth:`ReActAgent.reply` drains it.
The agent holds no per-session state; everything lives in the :class:`AgentState` passed in, so one
instance serves concurrent sessions. Cancelling a reply closes every unfinished tool call with an
"interrupted" result before the cancellation propagates, so the state can be saved and resumed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import tracing, usage
from ..errors import ConfigurationError, ModelResponseError
from ..events import (
    AgentEvent,
    ConfirmResult,
    ExceedMaxItersEvent,
    HintEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    ReplyEndEvent,
    ReplyInput,
    ReplyStartEvent,
    RequireUserConfirmEvent,
    TextDeltaEvent,
    ToolDeferredEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from ..hooks import Hooks, McpServers
from ..hooks.background import next_call_wake, next_turn_context
from ..message import AssistantMsg, Msg, TextBlock, ToolResultBlock, ToolUseBlock, UserMsg, new_id
from ..model.base import (
    FINAL_RESULT_TOOL,
    ChatModel,
    ModelRequest,
    ModelResponse,
    TextDelta,
    ToolSchema,
    Usage,
)
from ..state import AgentState
from ..tools import PermissionEngine, ToolEnv, Toolkit
from . import compression as comp
from . import deferral, hitl
from .acting import StepRunner
from .config import ReActConfig
from .output import OutputType
from .output_run import OutputRun, OutputState, Verdict, model_mode
from .pricing import price_unpriced

log = logging.getLogger(__name__)

Injector = Callable[[AgentState], Awaitable[list[Msg]]]
Checkpoint = Callable[[AgentState], Awaitable[None]]

#: Hook events that run with a tool call: a step with any of them is saved before its tools run.
TOOL_HOOK_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest")

MAX_ITERS_HINT = (
    "You have reached the maximum number of reasoning steps. Do not call tools; give your final "
    "answer now with what you have."
)


@dataclass(slots=True)
class ReplyOptions:
    """Per-reply wiring supplied by the caller (HarnessAgent): tools, env, hooks."""

    toolkit: Toolkit | None = None
    env: ToolEnv | None = None
    injectors: Sequence[Injector] = ()
    checkpoint: Checkpoint | None = None
    archiver: comp.Archiver | None = None
    system_suffix: str = ""
    #: The structured output the reply must return (None: a text reply); see :mod:`.output_run`.
    output: OutputType | None = None
    #: The hooks to run (None: none); see :mod:`agentscope_teams.hooks`.
    hooks: Hooks | None = None
    #: Fields every hook event of this reply carries (``agent_id``, ``agent_type`` in a subagent).
    hook_fields: Mapping[str, object] = field(default_factory=dict)
    #: The MCP servers the agent's ``mcp_tool`` hooks call (its extensions'; None: none).
    hook_servers: McpServers | None = None
    #: The event fired when the reply would end with a text answer ("Stop"; None: no event, as
    #: in a subagent, whose SubagentStop its runner fires).
    stop_event: str | None = "Stop"
    extra: dict[str, object] = field(default_factory=dict)


class ReActAgent:
    """A stateless ReAct loop over a :class:`ChatModel` and a :class:`Toolkit`."""

    def __init__(
        self,
        name: str,
        model: ChatModel,
        system_prompt: str = "",
        toolkit: Toolkit | None = None,
        config: ReActConfig | None = None,
        permissions: PermissionEngine | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.system_prompt = system_prompt
        self.toolkit = toolkit if toolkit is not None else Toolkit()
        self.config = config or ReActConfig()
        self.permissions = permissions or PermissionEngine()

    async def reply(
        self, input: ReplyInput, state: AgentState, options: ReplyOptions | None = None
    ) -> Msg:
        """Run one reply and return its final message (or the pause notice), once the usage of
        its model calls is settled (:func:`~agentscope_teams.usage.governor.settled`; a
        :meth:`reply_stream` leaves that to its caller)."""
        final: Msg | None = None
        try:
            async for event in self.reply_stream(input, state, options):
                if isinstance(event, ReplyEndEvent):
                    final = event.msg
        finally:
            await usage.settled()
        if final is None:  # pragma: no cover - the loop always ends with ReplyEndEvent
            raise RuntimeError("reply ended without a final message")
        return final

    def reply_stream(
        self, input: ReplyInput, state: AgentState, options: ReplyOptions | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Run one reply, yielding its events; the last event is always ``ReplyEndEvent``.

        Input that does not fit the state (a confirmation for another reply, a bad type) raises
        before anything changes. Nothing runs before the first event is asked for.
        """
        return self._new_reply(state, options or ReplyOptions()).run(input)

    def _new_reply(self, state: AgentState, options: ReplyOptions) -> _Reply:
        """The steps of one reply (a benchmark swaps in a variant without tracing hooks)."""
        return _Reply(self, state, options)


class _Reply(StepRunner):
    """The per-reply working set; never shared between replies (slotted: held while in flight)."""

    __slots__ = (
        "decisions", "messages", "output", "stop_hook_active", "tokens", "unsaved_effects",
    )  # fmt: skip

    def __init__(self, agent: ReActAgent, state: AgentState, options: ReplyOptions) -> None:
        super().__init__(agent, state, options)
        self.messages: list[Msg] = []
        self.decisions: Sequence[tuple[ToolUseBlock, ConfirmResult]] = ()
        self.tokens = comp.TokenCounter()
        self.output: OutputRun | None = None
        self.stop_hook_active = False
        #: The last step ran calls with effects whose results no save has recorded yet.
        self.unsaved_effects = False

    def validate(self, input: ReplyInput) -> None:
        """Check ``input`` against the state; raises (HITLError, TypeError,
        OutputTypeMismatchError) without changing it."""
        if isinstance(input, UserInterruptEvent):
            hitl.check_interrupt(self.state, input)
        elif isinstance(input, UserConfirmResultEvent):
            self.decisions = hitl.check_confirmation(self.state, input)
            self.output = OutputRun.resume(self.opts.output, self.state, self.cfg.output_retries)
        else:
            self.messages = _as_messages(input)
            if self.state.deferred_tool_calls:  # the resume of a reply a hook deferred
                self.output = OutputRun.resume(
                    self.opts.output, self.state, self.cfg.output_retries
                )
        if self.opts.output is not None and self.toolkit.get(FINAL_RESULT_TOOL) is not None:
            raise ConfigurationError(
                f"a tool is named {FINAL_RESULT_TOOL!r}, the name structured output uses for the "
                "final answer; rename that tool to use output_type="
            )

    async def run(self, input: ReplyInput) -> AsyncIterator[AgentEvent]:
        """The reply's events: reason and act until the model answers, a hook halts it or a call
        waits (for the user, or a hook's defer). Plain steps but the model call and tool runs,
        which yield; stopped (cancelled, failed) it closes unfinished calls, unless it paused."""
        self.validate(input)
        state = self.state
        try:
            if isinstance(input, UserInterruptEvent):
                yield ReplyStartEvent(session_id=state.session_id, **self._ev())
                yield ReplyEndEvent(msg=self._interrupted(), **self._ev())
                return
            ended = False
            if isinstance(input, UserConfirmResultEvent) or state.deferred_tool_calls:
                async for ev in self._resume(input):
                    ended = isinstance(ev, ReplyEndEvent)
                    yield ev
            else:
                for ev in self._begin():
                    yield ev
                for ev in await self._prompted():
                    ended = isinstance(ev, ReplyEndEvent)
                    yield ev
            if ended:  # a UserPromptSubmit hook refused the prompt, a call is deferred again
                return
            while True:
                final = state.cur_iter >= self.cfg.max_iters
                if final:
                    yield ExceedMaxItersEvent(max_iters=self.cfg.max_iters, **self._ev())
                else:
                    for injector in self.opts.injectors:
                        for msg in await injector(state):
                            yield self._injected(msg)
                    if (compressed := await self._compress()) is not None:
                        yield compressed
                async for item in self._reason(final=final):
                    if isinstance(item, ModelResponse):
                        response = item
                    else:
                        yield item
                answer = await self._answer(response, final)
                for ev in self.hints():  # of the Stop hooks (and PreCompact)
                    yield ev
                if isinstance(answer, Msg):
                    yield ReplyEndEvent(msg=answer, **self._ev())
                    return
                if not answer:
                    continue
                effects = await self._before_tools(response)
                async for ev in self._run_tools(*await self.decide(response.tool_calls)):
                    yield ev
                self.unsaved_effects = effects  # their results are saved by the next checkpoint
                if ending := self._after_tools(response.tool_calls):
                    for ev in ending:
                        yield ev
                    return
        except BaseException:
            closed = hitl.close_pending(state, hitl.CANCELLED) if not self.paused else []
            if closed:
                log.info("reply %s stopped; closed %d tool calls", state.reply_id, len(closed))
            raise

    def _interrupted(self) -> Msg:
        """Close the calls a user's interrupt leaves pending; the reply's final message."""
        OutputState.drop(self.state)
        closed = hitl.close_pending(self.state, hitl.INTERRUPTED_BY_USER)
        return AssistantMsg(
            f"Interrupted; {len(closed)} pending tool call(s) were not run.",
            name=self.agent.name,
            metadata={"interrupted": True},
        )

    def _resumed(self) -> ReplyStartEvent:
        """Resume a paused reply with the user's answers: its start event."""
        state = self.state
        state.awaiting_confirmation.clear()
        confirmed = sum(1 for _, answer in self.decisions if answer.confirmed)
        tracing.hitl_resume(state.pause_trace, confirmed, len(self.decisions) - confirmed)
        state.pause_trace = None
        return ReplyStartEvent(session_id=state.session_id, **self._ev())

    async def _resume(self, input: ReplyInput) -> AsyncIterator[AgentEvent]:
        """Resume a paused reply: a confirmation runs the confirmed calls; otherwise the calls a
        hook deferred are decided again (their PreToolUse hooks run again) and the allowed ones
        run, and a new message comes after their results. Ends with a ``ReplyEndEvent`` if the
        reply stops again."""
        self.unsaved_effects = True  # the calls run now: the next step is saved
        if isinstance(input, UserConfirmResultEvent):
            yield self._resumed()
            async for ev in self._run_tools(*self.confirmed(self.decisions)):
                yield ev
            return
        held = deferral.held_calls(self.state)
        yield self._resumed_deferred()
        async for ev in self._run_tools(*await self.decide(held)):
            yield ev
        if ending := self._after_tools(held, dropped=bool(self.messages)):
            for ev in ending:
                yield ev
            return
        if self.messages:
            for ev in await self._prompted():
                yield ev

    def _resumed_deferred(self) -> ReplyStartEvent:
        """Resume a reply a hook deferred: its start event. Its held calls are decided again
        (by the caller); any other call left without a result is closed as recovered."""
        state = self.state
        held = set(state.deferred_tool_calls)
        state.end_deferral()
        orphans = [c for c in state.awaiting_tool_calls() if c.id not in held]
        if orphans:
            results = [
                ToolResultBlock(tool_use_id=c.id, name=c.name, output=hitl.RECOVERED, is_error=True)
                for c in orphans
            ]
            state.context.append(hitl.tool_results_msg(results))
        return ReplyStartEvent(session_id=state.session_id, **self._ev())

    def _begin(self) -> list[AgentEvent]:
        """Close what the last reply left open and start a new reply: its first events."""
        state = self.state
        closed: list[ToolResultBlock] = []
        reason = hitl.NEW_MESSAGE_INTERRUPT if state.awaiting_confirmation else hitl.RECOVERED
        if state.has_awaiting_tool_calls() and (
            state.awaiting_confirmation or self.cfg.recover_pending_tools
        ):
            closed = hitl.close_pending(state, reason)
        state.awaiting_confirmation.clear()
        state.reply_id = new_id()
        state.cur_iter = 0
        OutputState.drop(state)
        if self.opts.output is not None:
            mode = model_mode(self.agent.model)
            self.output = OutputRun.start(self.opts.output, mode, state, self.cfg.output_retries)
        events: list[AgentEvent] = [ReplyStartEvent(session_id=state.session_id, **self._ev())]
        if closed:
            text = f"closed {len(closed)} unfinished tool call(s): {reason}"
            events.append(HintEvent(text=text, **self._ev()))
        return events

    async def _prompted(self) -> list[AgentEvent]:
        """:meth:`_prompt`'s events: its hooks' notices, and the reply's end if it was refused."""
        refused = await self._prompt()
        events: list[AgentEvent] = [*self.hints()]
        if refused:
            events.append(ReplyEndEvent(msg=self._halt_msg(), **self._ev()))
        return events

    async def _prompt(self) -> bool:
        """Add the user's input to the context, unless a UserPromptSubmit hook refuses it (or
        halts the reply): whether the reply is halted."""
        state = self.state
        prompt = await self.hook(
            "UserPromptSubmit", prompt="\n".join(m.get_text_content() for m in self.messages)
        )
        if prompt.blocked:
            self.halted = f"prompt blocked by a UserPromptSubmit hook: {prompt.reason}"
        if self.halted is not None:
            return True  # the prompt is not added to the context, as Claude Code erases it
        wake = next_call_wake(state)  # asyncRewake hooks that exited 2: before the prompt
        if wake:
            state.context.append(UserMsg(wake, name="hook"))
        state.context.extend(self.messages)
        # what async hooks said since the last prompt comes with this one (Claude Code's rule)
        said = [t for t in (next_turn_context(state), prompt.additional_context) if t]
        if said:
            state.context.append(UserMsg("\n".join(said), name="hook"))
        return False

    def _halt_msg(self) -> Msg:
        """The final message of a reply a hook stopped (``continue: false``, a blocked prompt)."""
        return AssistantMsg(
            self.halted or "", name=self.agent.name, metadata={STOPPED_BY_HOOK: True}
        )

    async def _stop_hook(self, response: ModelResponse) -> bool:
        """The Stop hooks of an answer: True if one blocked it, whose reason then goes to the
        model as the next instruction (``stop_hook_active`` tells the hook it is a continuation)."""
        if self.opts.stop_event is None or not self.opts.hooks:
            return False
        text = "".join(b.text for b in response.content if isinstance(b, TextBlock))
        outcome = await self.hook(
            self.opts.stop_event,
            stop_hook_active=self.stop_hook_active,
            last_assistant_message=text,
        )
        if self.halted is not None:  # continue: false wins over a block: the user is told why
            self.notices.append(f"stopped by a {self.opts.stop_event} hook: {self.halted}")
            return False
        if not outcome.blocked:
            return False
        self._record(response, final=False)
        self.state.context.append(UserMsg(outcome.reason, name="hook"))
        self.stop_hook_active = True
        return True

    async def _before_tools(self, response: ModelResponse) -> bool:
        """Record a step that calls tools, saved first if they have effects (or the last step's
        have not been saved); whether they have."""
        self._record(response, final=False)
        effects = self._has_effects(response.tool_calls)
        if effects or self.unsaved_effects:
            await self._checkpoint()
        return effects

    def _after_tools(self, calls: list[ToolUseBlock], dropped: bool = False) -> list[AgentEvent]:
        """The reply's last events after its tools ran, if it ends: a hook answered ``continue:
        false``, deferred calls, or calls wait for the user's confirmation (``dropped``: the
        call's new message was not added, which a deferral's message says)."""
        if self.halted is not None:
            return [ReplyEndEvent(msg=self._halt_msg(), **self._ev())]
        if self.state.deferred_tool_calls:
            return self._deferred(dropped)
        return self._pause(calls) if self.paused else []

    def _deferred(self, dropped: bool) -> list[AgentEvent]:
        """Stop for the calls a PreToolUse hook deferred: the reply's last events."""
        state = self.state
        held = deferral.held_calls(state)
        msg = deferral.stopped_msg(state, self.agent.name, dropped)
        reasons = {
            c.id: state.deferred_reasons[c.id] for c in held if c.id in state.deferred_reasons
        }
        return [
            ToolDeferredEvent(
                session_id=state.session_id, tool_calls=held, reasons=reasons, **self._ev()
            ),
            ReplyEndEvent(msg=msg, **self._ev()),
        ]

    async def _answer(self, response: ModelResponse, final: bool) -> Msg | bool:
        """What a step's response does: end the reply with its final message, True: run its tool
        calls, False: ask the model again (a rejected structured answer, a Stop hook's block)."""
        verdict = await self.output.judge(response, final) if self.output is not None else None
        if verdict is not None:
            done = self._settle(response, verdict, final)
            if done is not None:
                return done
            await self._checkpoint()
            return False
        if self.output is None and (final or not response.tool_calls):
            if not final and await self._stop_hook(response):
                await self._checkpoint()
                return False
            # the turn limit ended it (final): say so to whoever reads the answer
            extra: dict[str, Any] = {TURN_LIMIT: self.cfg.max_iters} if final else {}
            if self.halted is not None:  # a Stop hook's continue: false: its reason too
                extra[HOOK_STOP_REASON] = self.halted
            return self._record(response, final=True, extra=extra)
        return True

    async def _checkpoint(self) -> None:
        if self.opts.checkpoint is not None:
            await self.opts.checkpoint(self.state)

    def _has_effects(self, calls: list[ToolUseBlock]) -> bool:
        """Whether a step's calls change what a repeat would not find as they left it: a step
        is saved before its tools run, and the next step before its own, unless every call is to
        a read-only or :attr:`~agentscope_teams.tools.Tool.idempotent` tool (or to no tool: an
        error result) and no tool hook runs; then a crash before the next save only has the model
        call them again. The next step's save (or the reply's last) records them either way."""
        hooks = self.opts.hooks
        if hooks and any(hooks.by_event.get(e) for e in TOOL_HOOK_EVENTS):
            return True
        for call in calls:
            tool = self.toolkit.get(call.name)
            if tool is not None and not (tool.read_only or tool.idempotent):
                return True
        return False

    def _pause(self, calls: list[ToolUseBlock]) -> list[AgentEvent]:
        """Wait for the user's confirmation of the calls asked about: the reply's last events."""
        asked = [c for c in calls if c.id in self.state.awaiting_confirmation]
        self.state.pause_trace = tracing.hitl_pause([c.name for c in asked])
        note = AssistantMsg(
            "Waiting for the user to confirm: " + ", ".join(c.name for c in asked),
            name=self.agent.name,
            metadata={"awaiting_confirmation": [c.id for c in asked]},
        )
        return [
            RequireUserConfirmEvent(tool_calls=asked, **self._ev()),
            ReplyEndEvent(msg=note, **self._ev()),
        ]

    def _injected(self, msg: Msg) -> HintEvent:
        """Add an injector's message to the context."""
        self.state.context.append(msg)
        return HintEvent(text=f"injected: {msg.get_text_content()[:200]}", **self._ev())

    async def _compress(self) -> HintEvent | None:
        """Compress the older context into the summary when it is over the trigger."""
        cc = self.cfg.compression
        context = self.state.context
        if not cc.enabled or self.tokens.total(context, self.state.usage) <= cc.trigger_tokens:
            return None
        split = comp.choose_split(context, cc.keep_recent_tokens)
        if split <= 0:
            return None
        removed = context[:split]
        await self.hook("PreCompact", trigger="auto", custom_instructions="")
        try:
            summary = await comp.summarize(self.agent.model, self.state.summary, removed, cc)
            if self.opts.archiver is not None:
                await self.opts.archiver(removed)
        except Exception as exc:  # compression is an optimization: never fail the reply for it
            log.warning("context compression skipped: %s", exc)
            return None
        self.state.summary = summary
        del context[:split]
        self.state.usage.forget_prompt()
        # as Claude Code: SessionStart (source "compact") puts back the context hooks give
        restored = await self.hook("SessionStart", source="compact")
        if restored.additional_context:
            context.insert(0, UserMsg(restored.additional_context, name="hook"))
        return HintEvent(text=f"compressed {split} older message(s) into the summary", **self._ev())

    def _request(self, final: bool) -> ModelRequest:
        system = self.agent.system_prompt
        if self.opts.system_suffix:
            system = f"{system}\n\n{self.opts.system_suffix}".strip()
        if self.state.summary:
            system += f"\n\n## Summary of the earlier conversation\n{self.state.summary}"
        messages = list(self.state.context)
        tools: list[ToolSchema] = []
        if final:
            hint = MAX_ITERS_HINT if self.output is None else self.output.final_hint()
            messages.append(UserMsg(hint, name="system"))
        else:
            tools = self.toolkit.schemas()
        schema = None
        if self.output is not None:
            tools, schema = self.output.shape(tools, final)
        return ModelRequest(
            system_prompt=system,
            messages=messages,
            tools=tools,
            response_schema=schema,
            effort=self.cfg.effort,
        )

    async def _reason(self, final: bool) -> AsyncIterator[AgentEvent | ModelResponse]:
        iteration = self.state.cur_iter
        yield ModelCallStartEvent(iteration=iteration, **self._ev())
        request = self._request(final)
        response: ModelResponse | None = None
        model = self.agent.model
        with tracing.chat(model, self.agent.name, request) as span:
            async with usage.model_call(model, request) as call:
                if self.cfg.stream_model:
                    async for item in model.stream(request):
                        if isinstance(item, TextDelta):
                            yield TextDeltaEvent(text=item.text, **self._ev())
                        elif isinstance(item, ModelResponse):
                            response = item
                else:
                    response = await model.generate(request)
                if response is None:
                    raise ModelResponseError(
                        f"model {model.model_name} ended its stream without a response"
                    )
                call.done(response)
            price_unpriced(model, response)  # after the budget's pricing, if any
            span.response(response)
        self.state.cur_iter += 1
        yield ModelCallEndEvent(iteration=iteration, usage=response.usage, **self._ev())
        yield response

    def _settle(self, response: ModelResponse, verdict: Verdict, final: bool) -> Msg | None:
        """Put a judged structured answer in the context: the final message if it was accepted
        (None if it was rejected and goes back to the model; raises past the retry limit);
        ``final``: it came at the turn limit, which the message says."""
        assert self.output is not None
        state = self.state
        called = bool(response.tool_calls)
        if not verdict.accepted or called:
            self._record(response, final=False)
        if verdict.results:
            state.context.append(hitl.tool_results_msg(verdict.results))
        if not verdict.accepted:
            if verdict.feedback:
                state.context.append(UserMsg(verdict.feedback, name="output-check"))
            try:
                self.output.rejected(verdict, state.reply_id)
            except Exception:
                OutputState.drop(state)
                raise
            return None
        if called:  # the answer was a tool call: the reply ends with the value as text
            text = json.dumps(verdict.data, ensure_ascii=False)
            # usage stays on the message of the model call: this one is not a call
            response = response.model_copy(
                update={"content": [TextBlock(text=text)], "usage": Usage()}
            )
        limit = {TURN_LIMIT: self.cfg.max_iters} if final else None
        msg = self._record(response, final=True, extra=limit, output=(verdict.value, verdict.data))
        OutputState.drop(state)
        return msg

    def _record(
        self,
        response: ModelResponse,
        final: bool,
        extra: dict[str, Any] | None = None,
        output: tuple[Any, Any] | None = None,
    ) -> Msg:
        """Append the response as a message (made whole first: messages are immutable), with
        ``extra`` metadata and a validated ``output`` (value, JSON data)."""
        content: list[TextBlock | ToolUseBlock] = list(response.content)
        if final:
            content = [b for b in content if isinstance(b, TextBlock)]
        metadata: dict[str, Any] = {
            "reply_id": self.state.reply_id,
            "usage": response.usage.model_dump(),
        }
        if response.cost_usd is not None:
            metadata["cost_usd"] = response.cost_usd
        if response.usage_estimated:
            metadata["usage_estimated"] = True
        msg = Msg(
            id=self.state.reply_id if final else new_id(),
            role="assistant",
            name=self.agent.name,
            content=list(content),
            metadata={**metadata, **(extra or {})},
        )
        if output is not None:
            msg = msg.with_output(*output)
        self.state.context.append(msg)
        self._count_usage(response.usage)
        return msg

    def _count_usage(self, usage: Usage) -> None:
        """Add a recorded response's reported usage to the session's ledger and the usage meter.
        A response without reported input tokens is anchored at an estimate instead, counted from
        the previous anchor (only the messages after it are estimated), so no later request of
        the session estimates its whole context again."""
        ledger, context = self.state.usage, self.state.context
        estimate = self.tokens.total(context, ledger) if usage.input_tokens <= 0 else 0
        ledger.record(usage.input_tokens, usage.output_tokens, context)
        ledger.anchor_estimate(estimate, context)
        tracing.record_usage(self.agent.name, usage.input_tokens, usage.output_tokens)


TURN_LIMIT = "turn_limit"
"""Metadata key of a final answer the turn limit forced (its value: the limit)."""

STOPPED_BY_HOOK = "stopped_by_hook"
"""Metadata key of the final message of a reply a hook stopped before the model answered (a
``continue: false``, a refused prompt): its text is the hook's reason."""

HOOK_STOP_REASON = "hook_stop_reason"
"""Metadata key of a final answer after which a Stop (or SubagentStop) hook answered
``continue: false``: its ``stopReason`` (Claude Code shows it to the user)."""


def _as_messages(input: ReplyInput) -> list[Msg]:
    if input is None:
        return []
    if isinstance(input, str):
        return [UserMsg(input)]
    if isinstance(input, Msg):
        return [input]
    if isinstance(input, list) and all(isinstance(m, Msg) for m in input):
        return list(input)
    raise TypeError(
        f"reply input must be str, Msg, list[Msg] or a HITL event, got {type(input).__name__}"
    )
