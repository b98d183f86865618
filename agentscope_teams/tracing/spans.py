"""The spans a call makes: ``invoke_agent``, ``chat``, ``execute_tool`` and the HITL pause / resume.

Each hook returns a shared no-op object when tracing is off for the running call and metrics are
off (:mod:`.metrics`), so the loop pays one ``ContextVar.get`` and one attribute read per hook. Spans that enclose other work (``invoke_agent``, ``execute_tool``)
become the current span inside a plain coroutine; ``chat`` is never made current, so it may be held
across the ``yield`` of a streaming generator.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from . import metrics, names
from .active import ACTIVE, Active, otel_context, otel_trace, resolve
from .propagation import carrier_of, link_to, take_pending_links

#: The kind of the agent whose call is running (``agent`` or ``subagent``), set while metrics are
#: on: the ``agent`` label of the model series.
AGENT_KIND: ContextVar[str] = ContextVar("agentscope_teams_agent_kind", default="agent")

if TYPE_CHECKING:
    from opentelemetry.context import Context


class Response(Protocol):
    """What ``chat`` spans read of a model response (``ModelResponse`` has it)."""

    @property
    def model(self) -> str: ...
    @property
    def stop_reason(self) -> str: ...
    @property
    def usage(self) -> Any: ...
    def model_dump_json(self) -> str: ...


class Request(Protocol):
    """What ``chat`` spans read of a model request (only when contents are recorded)."""

    def model_dump_json(self) -> str: ...


class Model(Protocol):
    """What ``chat`` spans read of a model (``ChatModel`` has it). A model that also has a string
    ``provider`` (the SDK-based ones: ``openai``, ``dashscope``, ``anthropic``, ...) names it in
    ``gen_ai.provider.name``."""

    @property
    def model_name(self) -> str: ...


class NoSpan:
    """What a hook returns when tracing is off: every method does nothing (exact signatures:
    this is the hot path when tracing is off)."""

    __slots__ = ()

    def __enter__(self) -> NoSpan:
        return self

    @staticmethod
    def __exit__(et: object, e: object, tb: object) -> None:
        """A static method: a ``with`` block then holds this function, not a bound method made
        for each block."""
        return None

    def response(self, response: Response) -> None:
        return None

    def result(self, is_error: bool, output: str) -> None:
        return None


NO_SPAN = NoSpan()


class _Span:
    """A started span, ended (with the error, if any) when its ``with`` block exits."""

    __slots__ = ("active", "span")

    def __init__(self, active: Active, span: Any) -> None:
        self.active, self.span = active, span

    def __enter__(self) -> _Span:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if e is not None:
            self.span.set_attribute(names.ERROR_TYPE, type(e).__qualname__)
            if isinstance(e, Exception):
                self.span.record_exception(e)
            self.span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, str(e)[:200]))
        self.span.end()


class ChatSpan(_Span):
    """``chat {model}``: one model request, with the response's model, usage and finish reason."""

    def __enter__(self) -> ChatSpan:
        return self

    def response(self, response: Response) -> None:
        span, usage, stop = self.span, response.usage, response.stop_reason
        if response.model:
            span.set_attribute(names.RESPONSE_MODEL, response.model)
        span.set_attribute(names.INPUT_TOKENS, usage.input_tokens)
        span.set_attribute(names.OUTPUT_TOKENS, usage.output_tokens)
        span.set_attribute(names.FINISH_REASONS, [names.FINISH_REASON_OF.get(stop, stop)])
        if self.active.capture_content:
            span.set_attribute(names.OUTPUT_MESSAGES, response.model_dump_json())


class ToolSpan(_Span):
    """``execute_tool {tool}``: current while the tool runs (a subagent it starts is its child)."""

    __slots__ = ("token",)
    token: Token[Context]

    def __enter__(self) -> ToolSpan:
        self.token = otel_context.attach(otel_trace.set_span_in_context(self.span))
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        otel_context.detach(self.token)
        super().__exit__(et, e, tb)

    def result(self, is_error: bool, output: str) -> None:
        if is_error:
            self.span.set_attribute(names.ERROR_TYPE, "tool_error")
            self.span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, output[:200]))
        if self.active.capture_content:
            self.span.set_attribute(names.TOOL_RESULT, output)


class _Metered:
    """Counts one model or tool call in :mod:`.metrics` around the span (or no-op) it wraps."""

    __slots__ = ("inner", "labels", "m", "outcome", "started")

    def __init__(self, m: metrics.Metrics, inner: Any, labels: tuple[str, ...]) -> None:
        self.inner, self.m, self.labels, self.outcome = inner, m, labels, "ok"
        self.started = 0.0

    def __enter__(self) -> Any:
        self.inner.__enter__()
        self.started = time.perf_counter()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.count(time.perf_counter() - self.started, e)
        self.inner.__exit__(et, e, tb)

    def count(self, seconds: float, e: BaseException | None) -> None:
        raise NotImplementedError


class MeteredChat(_Metered):
    """A ``chat`` hook with metrics on: the call, its latency and reported tokens."""

    __slots__ = ()

    def response(self, response: Response) -> None:
        usage, kind = response.usage, AGENT_KIND.get()
        self.m.model_tokens.inc(*self.labels, kind, "input", amount=usage.input_tokens)
        self.m.model_tokens.inc(*self.labels, kind, "output", amount=usage.output_tokens)
        cost = getattr(response, "cost_usd", None)
        if cost:
            self.m.model_cost.inc(*self.labels, kind, amount=float(cost))
        self.inner.response(response)

    def count(self, seconds: float, e: BaseException | None) -> None:
        self.m.model_calls.inc(*self.labels, "ok" if e is None else "error")
        self.m.model_seconds.observe(seconds, *self.labels)


class MeteredTool(_Metered):
    """An ``execute_tool`` hook with metrics on: the call by outcome, and its duration."""

    __slots__ = ()

    def result(self, is_error: bool, output: str) -> None:
        self.outcome = "tool_error" if is_error else "ok"
        self.inner.result(is_error, output)

    def count(self, seconds: float, e: BaseException | None) -> None:
        self.m.tool_calls.inc(*self.labels, "exception" if e is not None else self.outcome)
        self.m.tool_seconds.observe(seconds, *self.labels)


class AgentSpan(_Span):
    """``invoke_agent {agent}``: current while the call runs, its tracing active inside (a hook
    of the call reads it); started when entered."""

    __slots__ = ("attributes", "name", "tokens")
    tokens: tuple[Token[Active | None], Token[Context]]

    def __init__(self, active: Active, name: str, attributes: dict[str, Any]) -> None:
        super().__init__(active, None)
        self.name, self.attributes = name, attributes

    def __enter__(self) -> AgentSpan:
        self.span = span = self.active.tracer.start_span(
            self.name, attributes=self.attributes, links=take_pending_links()
        )
        active = ACTIVE.set(self.active)
        self.tokens = active, otel_context.attach(otel_trace.set_span_in_context(span))
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        active, current = self.tokens
        try:
            otel_context.detach(current)
            super().__exit__(et, e, tb)
        finally:
            ACTIVE.reset(active)


class MeteredAgent:
    """An ``invoke_agent`` hook with metrics on: the calls running, and each by outcome, with the
    agent's kind current (:data:`AGENT_KIND`) inside."""

    __slots__ = ("inner", "kind", "m", "token")

    def __init__(self, m: metrics.Metrics, inner: AgentSpan | NoSpan, kind: str) -> None:
        self.m, self.inner, self.kind = m, inner, kind

    def __enter__(self) -> MeteredAgent:
        self.m.agent_calls_running.inc(self.kind)
        self.token = AGENT_KIND.set(self.kind)
        try:
            self.inner.__enter__()
        except BaseException as exc:
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.inner.__exit__(et, e, tb)
        finally:
            AGENT_KIND.reset(self.token)
            self.m.agent_calls_running.inc(self.kind, amount=-1)
            outcome = "ok" if e is None else "error" if isinstance(e, Exception) else "cancelled"
            self.m.agent_calls.inc(self.kind, outcome)


def invoke_agent(
    agent: str,
    *,
    provider: Any = None,
    session_id: str,
    user_id: str | None = None,
    org_id: str | None = None,
    depth: int = 0,
) -> AgentSpan | MeteredAgent | NoSpan:
    """``invoke_agent {agent}`` around one ``call()`` / ``stream()``: its tracing (resolved now,
    see :func:`.active.resolve`) is active inside, and it is counted when metrics are on. With
    both off, the shared no-op (nothing is allocated per call)."""
    active, m = resolve(provider), metrics.METRICS
    span: AgentSpan | NoSpan = NO_SPAN
    if active is not None:
        attributes: dict[str, Any] = {
            names.OPERATION: "invoke_agent",
            names.AGENT_NAME: agent,
            names.CONVERSATION_ID: session_id,
            names.DEPTH: depth,
        }
        if user_id:
            attributes[names.USER_ID] = user_id
        if org_id:
            attributes[names.ORG_ID] = org_id
        span = AgentSpan(active, f"{names.INVOKE_AGENT} {agent}", attributes)
    if m is None:
        return span
    return MeteredAgent(m, span, "subagent" if depth else "agent")


def chat(model: Model, agent: str, request: Request) -> ChatSpan | NoSpan | MeteredChat:
    """``chat {model}`` for one model request by ``agent`` (a client span, never made current)."""
    active, m = ACTIVE.get(), metrics.METRICS
    if m is None:  # the hot path when metrics are off: no further call
        return NO_SPAN if active is None else _chat(active, model, agent, request)
    span = NO_SPAN if active is None else _chat(active, model, agent, request)
    provider = getattr(model, "provider", None)
    labels = (provider if isinstance(provider, str) and provider else "", model.model_name)
    return MeteredChat(m, span, labels)


def _chat(active: Active, model: Model, agent: str, request: Request) -> ChatSpan:
    name = model.model_name
    attributes: dict[str, Any] = {
        names.OPERATION: "chat",
        names.REQUEST_MODEL: name,
        names.AGENT_NAME: agent,
    }
    provider = getattr(model, "provider", None)
    if isinstance(provider, str) and provider:
        attributes[names.PROVIDER] = provider
    if active.capture_content:
        attributes[names.INPUT_MESSAGES] = request.model_dump_json()
    kind = otel_trace.SpanKind.CLIENT
    return ChatSpan(
        active, active.tracer.start_span(f"{names.CHAT} {name}", kind=kind, attributes=attributes)
    )


def execute_tool(
    name: str, call_id: str, arguments: object = None
) -> ToolSpan | NoSpan | MeteredTool:
    """``execute_tool {tool}`` for one tool call."""
    active, m = ACTIVE.get(), metrics.METRICS
    if m is None:
        return NO_SPAN if active is None else _execute_tool(active, name, call_id, arguments)
    span = NO_SPAN if active is None else _execute_tool(active, name, call_id, arguments)
    return MeteredTool(m, span, (name,))


def _execute_tool(active: Active, name: str, call_id: str, arguments: object) -> ToolSpan:
    attributes: dict[str, Any] = {
        names.OPERATION: "execute_tool",
        names.TOOL_NAME: name,
        names.TOOL_CALL_ID: call_id,
        names.TOOL_TYPE: "function",
    }
    if active.capture_content and arguments is not None:
        attributes[names.TOOL_ARGUMENTS] = json.dumps(arguments, default=str, ensure_ascii=False)
    span = active.tracer.start_span(f"{names.EXECUTE_TOOL} {name}", attributes=attributes)
    return ToolSpan(active, span)


def hitl_pause(tools: Sequence[str]) -> dict[str, str] | None:
    """A span marking a pause for the user's confirmation; its W3C context (to store with the state,
    so the resume can link to it), or None when tracing is off."""
    active = ACTIVE.get()
    if active is None:
        return None
    span = active.tracer.start_span(names.HITL_PAUSE, attributes={names.TOOLS: list(tools)})
    span.end()
    return carrier_of(span)


def hitl_resume(paused: dict[str, str] | None, confirmed: int, rejected: int) -> None:
    """A span marking the resume of a pause, linked to the span that paused (another trace, most
    likely: the resume is a new request)."""
    active = ACTIVE.get()
    if active is None:
        return
    links = link_to(paused)
    attributes = {names.CONFIRMED: confirmed, names.REJECTED: rejected}
    active.tracer.start_span(names.HITL_RESUME, attributes=attributes, links=links).end()


def task_event(name: str, team_id: str, member: str, task: Any) -> None:
    """A task claimed or finished by ``member`` (``task`` has ``id`` and ``status``; None: nothing
    was claimed), as an event of the current span (and counted when metrics are on)."""
    if task is None:
        return
    status = getattr(task.status, "value", task.status)
    m = metrics.METRICS
    if m is not None:
        claimed = name == names.TASK_CLAIM
        m.task_events.inc("claimed" if claimed else str(status))
        if claimed and getattr(task, "attempts", None) == 1:
            _observe_wait(m, task)
    if ACTIVE.get() is None:
        return
    event(
        name,
        {
            names.TEAM_ID: team_id,
            names.MEMBER: member,
            names.TASK_ID: task.id,
            names.TASK_STATUS: status,
        },
    )


def _observe_wait(m: metrics.Metrics, task: Any) -> None:
    """A first claim: how long the task waited since it was created."""
    created, claimed = getattr(task, "created_at", None), getattr(task, "updated_at", None)
    if created is not None and claimed is not None:
        m.task_wait_seconds.observe(max(0.0, (claimed - created).total_seconds()))


def denial(source: str, tool: str) -> None:
    """A tool call refused before it ran: by a hook (``hook``) or by the permission rules, the
    mode or a PermissionRequest hook (``permission``); counted when metrics are on."""
    m = metrics.METRICS
    if m is not None:
        m.tool_denials.inc(tool, source)


def sandbox_denial(reason: str) -> None:
    """A shell command refused (``reason``: one of :data:`.metrics.SANDBOX_REASONS`); counted when
    metrics are on. ``agentscope_teams.sandbox.denials`` calls it, once per denial."""
    m = metrics.METRICS
    if m is not None:
        m.sandbox_denials.inc(reason)


def hook_denial(event: str) -> None:
    """Hooks of ``event`` blocked what they were asked about; counted when metrics are on."""
    m = metrics.METRICS
    if m is not None:
        m.hook_denials.inc(event)


def task_wakeup(task: Any, member: str) -> None:
    """``member``'s claim of ``task`` landed: when the task was assigned to it and this is its
    first claim, how long the member took to wake up and claim it (metrics on only)."""
    m = metrics.METRICS
    if m is None or task is None or getattr(task, "assignee", None) != member:
        return
    if getattr(task, "attempts", None) != 1:
        return
    assigned, claimed = getattr(task, "created_at", None), getattr(task, "updated_at", None)
    if assigned is not None and claimed is not None:
        m.task_wakeup_seconds.observe(max(0.0, (claimed - assigned).total_seconds()))


def conflict(key: Sequence[str]) -> None:
    """A lost compare-and-set on ``key``, as an event of the current span (the caller retries)."""
    m = metrics.METRICS
    if m is not None:
        m.store_conflicts.inc()
    event(names.STORE_CONFLICT, {names.STORE_KEY: "/".join(key)})


def event(name: str, attributes: dict[str, Any]) -> None:
    """Add an event to the current span (spawns, task claims and results, store conflicts)."""
    if ACTIVE.get() is None:
        return
    span = otel_trace.get_current_span()
    if span.is_recording():
        span.add_event(name, {k: v for k, v in attributes.items() if v is not None})
