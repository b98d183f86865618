"""Trace context through the store: the W3C ``traceparent`` / ``tracestate`` of a span, kept in a
run or task record, and joined again by whoever executes the record (another process or host).

Joined work becomes a *child* of the span that created the record, so a lead's request, its
background subagents and the team tasks it handed out are one trace, whichever process runs them;
a parent that already ended is fine in OpenTelemetry. A resumed HITL pause is a new request and
*links* to the pause instead (:func:`~.spans.hitl_resume`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .active import ACTIVE, otel_context, otel_trace


def _propagator() -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator()


def carrier_of(span: Any) -> dict[str, str] | None:
    """The W3C context of ``span`` (``traceparent`` and maybe ``tracestate``), None if invalid."""
    if not span.get_span_context().is_valid:
        return None
    out: dict[str, str] = {}
    _propagator().inject(out, context=otel_trace.set_span_in_context(span))
    return out or None


def carrier() -> dict[str, str] | None:
    """The W3C context of the current span, to store in a record; None when tracing is off."""
    if ACTIVE.get() is None:
        return None
    return carrier_of(otel_trace.get_current_span())


def trace_id_of(stored: dict[str, str] | None) -> str | None:
    """The 32-hex-digit trace id in a stored ``traceparent`` (None if absent or malformed)."""
    parts = (stored or {}).get("traceparent", "").split("-")
    if len(parts) == 4 and len(parts[1]) == 32:
        return parts[1]
    return None


@contextmanager
def joined(stored: dict[str, str] | None) -> Iterator[None]:
    """Run the block as part of the trace ``stored`` names: the next span started is its child."""
    if not stored or otel_trace is None:
        yield
        return
    token = otel_context.attach(_propagator().extract(stored))
    try:
        yield
    finally:
        otel_context.detach(token)


def link_to(stored: dict[str, str] | None) -> list[Any]:
    """A link to the span ``stored`` names (empty if none)."""
    if not stored or otel_trace is None:
        return []
    span = otel_trace.get_current_span(_propagator().extract(stored))
    ctx = span.get_span_context()
    return [otel_trace.Link(ctx)] if ctx.is_valid else []
