"""``ReActAgent``: reason (model call), act (tool calls), observe, until the model answers.

One implementation: :meth:`ReActAgent.reply_stream` is the loop; :meth:`ReActAgent.reply` drains it.
The agent holds no per-session state; everything lives in the :class:`AgentState` passed in, so one
instance serves concurrent sessions. Cancelling a reply closes every unfinished tool call with an
"interrupted" result before the cancellation propagates, so the state can be saved and resumed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import anyio

from ..errors import ModelResponseError
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
    ToolCallEvent,
    ToolResultEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from ..message import AssistantMsg, Msg, TextBlock, ToolResultBlock, ToolUseBlock, UserMsg, new_id
from ..model.base import ChatModel, ModelRequest, ModelResponse, TextDelta, ToolSchema
from ..state import AgentState
from ..tools import PermissionEngine, ToolEnv, Toolkit, use_tool_env
from . import compression as comp
from . import hitl
from .config import ReActConfig

log = logging.getLogger(__name__)

Injector = Callable[[AgentState], Awaitable[list[Msg]]]
Checkpoint = Callable[[AgentState], Awaitable[None]]

MAX_ITERS_HINT = (
    "You have reached the maximum number of reasoning steps. Do not call tools; give your final "
    "answer now with what you have."
)


@dataclass
class ReplyOptions:
    """Per-reply wiring supplied by the caller (HarnessAgent): tools, env, hooks."""

    toolkit: Toolkit | None = None
    env: ToolEnv | None = None
    injectors: Sequence[Injector] = ()
    checkpoint: Checkpoint | None = None
    archiver: comp.Archiver | None = None
    system_suffix: str = ""
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
        self.toolkit = toolkit or Toolkit()
        self.config = config or ReActConfig()
        self.permissions = permissions or PermissionEngine()

    async def reply(
        self, input: ReplyInput, state: AgentState, options: ReplyOptions | None = None
    ) -> Msg:
        """Run one reply and return its final message (or the pause notice)."""
        final: Msg | None = None
        async for event in self.reply_stream(input, state, options):
            if isinstance(event, ReplyEndEvent):
                final = event.msg
        if final is None:  # pragma: no cover - the loop always ends with ReplyEndEvent
            raise RuntimeError("reply ended without a final message")
        return final

    async def reply_stream(
        self, input: ReplyInput, state: AgentState, options: ReplyOptions | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Run one reply, yielding its events; the last event is always ``ReplyEndEvent``."""
        run = _Reply(self, state, options or ReplyOptions())
        try:
            async for event in run.start(input):
                yield event
        except BaseException:
            hitl_closed = hitl.close_pending(state, hitl.CANCELLED) if not run.paused else []
            if hitl_closed:
                log.info("reply %s stopped; closed %d tool calls", state.reply_id, len(hitl_closed))
            raise


class _Reply:
    """The per-reply working set; never shared between replies."""

    def __init__(self, agent: ReActAgent, state: AgentState, options: ReplyOptions) -> None:
        self.agent = agent
        self.state = state
        self.opts = options
        self.toolkit = options.toolkit or agent.toolkit
        self.cfg = agent.config
        self.paused = False

    def _ev(self) -> dict[str, str]:
        return {"reply_id": self.state.reply_id, "agent": self.agent.name}

    async def start(self, input: ReplyInput) -> AsyncIterator[AgentEvent]:
        state = self.state
        if isinstance(input, UserInterruptEvent):
            hitl.check_interrupt(state, input)
            closed = hitl.close_pending(state, hitl.INTERRUPTED_BY_USER)
            note = AssistantMsg(
                f"Interrupted; {len(closed)} pending tool call(s) were not run.",
                name=self.agent.name,
                metadata={"interrupted": True},
            )
            yield ReplyEndEvent(msg=note, **self._ev())
            return
        if isinstance(input, UserConfirmResultEvent):
            decisions = hitl.check_confirmation(state, input)
            state.awaiting_confirmation.clear()
            yield ReplyStartEvent(session_id=state.session_id, **self._ev())
            async for ev in self._resume(decisions):
                yield ev
        else:
            async for ev in self._begin(input):
                yield ev
        async for ev in self._loop():
            yield ev

    async def _begin(self, input: ReplyInput) -> AsyncIterator[AgentEvent]:
        state = self.state
        if state.has_awaiting_tool_calls():
            reason = hitl.NEW_MESSAGE_INTERRUPT if state.awaiting_confirmation else hitl.RECOVERED
            if state.awaiting_confirmation or self.cfg.recover_pending_tools:
                closed = hitl.close_pending(state, reason)
                yield HintEvent(
                    text=f"closed {len(closed)} unfinished tool call(s): {reason}", **self._ev()
                )
        state.reply_id = new_id()
        state.cur_iter = 0
        yield ReplyStartEvent(session_id=state.session_id, **self._ev())
        state.context.extend(_as_messages(input))

    async def _resume(
        self, decisions: list[tuple[ToolUseBlock, ConfirmResult]]
    ) -> AsyncIterator[AgentEvent]:
        run: list[ToolUseBlock] = []
        results: dict[str, ToolResultBlock] = {}
        for call, answer in decisions:
            if not answer.confirmed:
                results[call.id] = ToolResultBlock(
                    tool_use_id=call.id, name=call.name, output=hitl.REJECTED, is_error=True
                )
                continue
            run.append(call)
            tool = self.toolkit.get(call.name)
            if answer.remember and tool is not None:
                ws = self.opts.env.workspace if self.opts.env else None
                rule = self.agent.permissions.remember_rule(tool, call.input, workspace=ws)
                if rule not in self.state.permission_context.rules:
                    self.state.permission_context.rules.append(rule)
        async for ev in self._execute(run, results):
            yield ev
        self._append_results([c for c, _ in decisions], results)

    async def _loop(self) -> AsyncIterator[AgentEvent]:
        state = self.state
        while True:
            if state.cur_iter >= self.cfg.max_iters:
                yield ExceedMaxItersEvent(max_iters=self.cfg.max_iters, **self._ev())
                response = None
                async for item in self._reason(final=True):
                    if isinstance(item, ModelResponse):
                        response = item
                    else:
                        yield item
                assert response is not None
                final = self._record(response, final=True)
                break
            async for ev in self._inject_and_compress():
                yield ev
            response = None
            async for item in self._reason(final=False):
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
            assert response is not None
            if not response.tool_calls:
                final = self._record(response, final=True)
                break
            self._record(response, final=False)
            if self.opts.checkpoint is not None:
                await self.opts.checkpoint(state)
            async for ev in self._act(response.tool_calls):
                yield ev
            if self.paused:
                calls = [c for c in response.tool_calls if c.id in state.awaiting_confirmation]
                yield RequireUserConfirmEvent(tool_calls=calls, **self._ev())
                note = AssistantMsg(
                    "Waiting for the user to confirm: " + ", ".join(c.name for c in calls),
                    name=self.agent.name,
                    metadata={"awaiting_confirmation": [c.id for c in calls]},
                )
                yield ReplyEndEvent(msg=note, **self._ev())
                return
        yield ReplyEndEvent(msg=final, **self._ev())

    async def _inject_and_compress(self) -> AsyncIterator[AgentEvent]:
        for injector in self.opts.injectors:
            for msg in await injector(self.state):
                self.state.context.append(msg)
                yield HintEvent(text=f"injected: {msg.get_text_content()[:200]}", **self._ev())
        cc = self.cfg.compression
        context = self.state.context
        if not cc.enabled or sum(map(comp.estimate_tokens, context)) <= cc.trigger_tokens:
            return
        split = comp.choose_split(context, cc.keep_recent_tokens)
        if split <= 0:
            return
        removed = context[:split]
        try:
            summary = await comp.summarize(self.agent.model, self.state.summary, removed, cc)
        except Exception as exc:  # compression is an optimization: never fail the reply for it
            log.warning("context compression skipped: %s", exc)
            return
        if self.opts.archiver is not None:
            await self.opts.archiver(removed)
        self.state.summary = summary
        del context[:split]
        yield HintEvent(text=f"compressed {split} older message(s) into the summary", **self._ev())

    def _request(self, final: bool) -> ModelRequest:
        system = self.agent.system_prompt
        if self.opts.system_suffix:
            system = f"{system}\n\n{self.opts.system_suffix}".strip()
        if self.state.summary:
            system += f"\n\n## Summary of the earlier conversation\n{self.state.summary}"
        messages = list(self.state.context)
        tools: list[ToolSchema] = []
        if final:
            messages.append(UserMsg(MAX_ITERS_HINT, name="system"))
        else:
            tools = self.toolkit.schemas()
        return ModelRequest(system_prompt=system, messages=messages, tools=tools)

    async def _reason(self, final: bool) -> AsyncIterator[AgentEvent | ModelResponse]:
        iteration = self.state.cur_iter
        yield ModelCallStartEvent(iteration=iteration, **self._ev())
        request = self._request(final)
        response: ModelResponse | None = None
        if self.cfg.stream_model:
            async for item in self.agent.model.stream(request):
                if isinstance(item, TextDelta):
                    yield TextDeltaEvent(text=item.text, **self._ev())
                elif isinstance(item, ModelResponse):
                    response = item
        else:
            response = await self.agent.model.generate(request)
        if response is None:
            raise ModelResponseError(
                f"model {self.agent.model.model_name} ended its stream without a response"
            )
        self.state.cur_iter += 1
        yield ModelCallEndEvent(iteration=iteration, usage=response.usage, **self._ev())
        yield response

    def _record(self, response: ModelResponse, final: bool) -> Msg:
        content: list[TextBlock | ToolUseBlock] = list(response.content)
        if final:
            content = [b for b in content if isinstance(b, TextBlock)]
        msg = Msg(
            id=self.state.reply_id if final else new_id(),
            role="assistant",
            name=self.agent.name,
            content=list(content),
            metadata={"reply_id": self.state.reply_id, "usage": response.usage.model_dump()},
        )
        self.state.context.append(msg)
        return msg

    async def _act(self, calls: list[ToolUseBlock]) -> AsyncIterator[AgentEvent]:
        results: dict[str, ToolResultBlock] = {}
        to_run, to_ask = [], []
        for call in calls:
            tool = self.toolkit.get(call.name)
            if tool is None:
                to_run.append(call)  # the toolkit answers with an "unknown tool" error result
                continue
            ws = self.opts.env.workspace if self.opts.env else None
            decision = self.agent.permissions.check(
                tool, call.input, self.state.permission_context, workspace=ws
            )
            if decision.behavior == "deny":
                results[call.id] = ToolResultBlock(
                    tool_use_id=call.id, name=call.name, output=decision.reason, is_error=True
                )
            elif decision.behavior == "ask":
                to_ask.append(call)
            else:
                to_run.append(call)
        async for ev in self._execute(to_run, results):
            yield ev
        if to_ask:
            self.paused = True
            self.state.awaiting_confirmation = [c.id for c in to_ask]
            self._append_results([c for c in calls if c.id in results], results)
        else:
            self._append_results(calls, results)

    async def _execute(
        self, calls: list[ToolUseBlock], results: dict[str, ToolResultBlock]
    ) -> AsyncIterator[AgentEvent]:
        for call in calls:
            yield ToolCallEvent(tool_call=call, **self._ev())
        env_cm = use_tool_env(self.opts.env) if self.opts.env is not None else nullcontext()
        with env_cm:
            for batch in self._batches(calls):
                if len(batch) == 1:
                    results[batch[0].id] = await self.toolkit.execute(batch[0])
                    continue
                async with anyio.create_task_group() as tg:
                    for call in batch:
                        tg.start_soon(self._run_one, call, results)
        for call in calls:
            yield ToolResultEvent(result=results[call.id], **self._ev())

    async def _run_one(self, call: ToolUseBlock, results: dict[str, ToolResultBlock]) -> None:
        results[call.id] = await self.toolkit.execute(call)

    def _batches(self, calls: list[ToolUseBlock]) -> list[list[ToolUseBlock]]:
        """Consecutive concurrency-safe calls form one parallel batch; others run alone, in order."""
        batches: list[list[ToolUseBlock]] = []
        for call in calls:
            if self._safe(call) and batches and self._safe(batches[-1][0]):
                batches[-1].append(call)
            else:
                batches.append([call])
        return batches

    def _safe(self, call: ToolUseBlock) -> bool:
        tool = self.toolkit.get(call.name)
        return self.cfg.parallel_tools and tool is not None and tool.concurrency_safe

    def _append_results(
        self, calls: list[ToolUseBlock], results: dict[str, ToolResultBlock]
    ) -> None:
        ordered = [results[c.id] for c in calls if c.id in results]
        if ordered:
            self.state.context.append(hitl.tool_results_msg(ordered))


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
