"""OpenTelemetry tracing, following the GenAI semantic conventions; a no-op without ``opentelemetry``.

Hooks (one call per site) are spread over the agent loop, subagent runs and team tasks; span names
and attributes live in :mod:`.names`. Configuration: ``HarnessAgent(tracer_provider=...)`` or the
global provider; the CLI sets one up from ``OTEL_*`` variables (:mod:`.setup`). Message contents are
recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``. See docs/tracing.md.
The same hooks feed the Prometheus metrics of :mod:`.metrics` when they are on (docs/operations.md).
"""

from __future__ import annotations

from . import names
from .active import AVAILABLE, fresh_context
from .propagation import carrier, incoming, joined, link_to, outgoing, trace_id_of
from .spans import (
    NO_SPAN,
    chat,
    conflict,
    denial,
    event,
    execute_tool,
    hitl_pause,
    hitl_resume,
    hook_denial,
    invoke_agent,
    sandbox_denial,
    task_event,
    task_wakeup,
)
from .usage import AgentUsage, UsageMeter, metering, record_usage

__all__ = [
    "AgentUsage",
    "UsageMeter",
    "metering",
    "record_usage",
    "AVAILABLE",
    "NO_SPAN",
    "carrier",
    "chat",
    "conflict",
    "denial",
    "event",
    "execute_tool",
    "fresh_context",
    "hitl_pause",
    "hitl_resume",
    "hook_denial",
    "incoming",
    "invoke_agent",
    "joined",
    "link_to",
    "names",
    "outgoing",
    "sandbox_denial",
    "task_event",
    "task_wakeup",
    "trace_id_of",
]
