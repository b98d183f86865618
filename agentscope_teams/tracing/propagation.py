"""Trace context through the store: the W3C ``traceparent`` / ``tracestate`` of a span, kept in a
run or task record, and joined again by whoever executes the record (another process or host).

Joined work becomes a *child* of the span that created the record, so a lead's request, its
background subagents and the team tasks it handed out are one trace, whichever process runs them;
a parent that already ended is fine in OpenTelemetry. A resumed HITL pause is a new request and
*links* to the pause instead (:func:`~.spans.hitl_resume`).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from .active import ACTIVE, otel_context, otel_trace

#: A version-00 W3C ``traceparent`` with a non-zero trace id and span id.
_TRACEPARENT = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}")
_TRACESTATE_CHARS = 512  # the W3C limit of tracestate

#: The W3C context a request arrived with (see :func:`incoming`), for records it creates.
INCOMING: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "agentscope_teams_incoming_trace", default=None
)


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
    """The W3C context to store in a record: the current span's when this call traces; else the
    one the request arrived with (:func:`incoming`); else None."""
    if ACTIVE.get() is None:
        found = INCOMING.get()
        return dict(found) if found else None
    return carrier_of(otel_trace.get_current_span())


def parse_incoming(headers: Mapping[str, str]) -> dict[str, str] | None:
    """The W3C ``traceparent`` (and ``tracestate``) of request ``headers``, if the traceparent is
    well formed; None otherwise (a malformed one is ignored, as the W3C spec asks)."""
    parent = (headers.get("traceparent") or "").strip().lower()
    if not _TRACEPARENT.fullmatch(parent):
        return None
    out = {"traceparent": parent}
    state = (headers.get("tracestate") or "").strip()
    if state and len(state) <= _TRACESTATE_CHARS:
        out["tracestate"] = state
    return out


@contextmanager
def incoming(headers: Mapping[str, str]) -> Iterator[None]:
    """Serve a request from another process: the records the block creates (tasks, teams, runs)
    carry the W3C context of its ``traceparent`` header, so the work they start joins the
    caller's trace even when this process does not trace. Works without ``opentelemetry``."""
    token = INCOMING.set(parse_incoming(headers))
    try:
        yield
    finally:
        INCOMING.reset(token)


def outgoing() -> dict[str, str]:
    """Headers for a request to another process: the W3C context of :func:`carrier` (none when
    there is nothing to propagate)."""
    return carrier() or {}


def trace_id_of(stored: dict[str, str] | None) -> str | None:
    """The 32-hex-digit trace id in a stored ``traceparent`` (None if absent or malformed)."""
    parts = (stored or {}).get("traceparent", "").split("-")
    if len(parts) == 4 and len(parts[1]) == 32:
        return parts[1]
    return None


#: Links the next ``invoke_agent`` span takes (see :func:`joined`); it takes them once.
PENDING_LINKS: contextvars.ContextVar[tuple[dict[str, str], ...]] = contextvars.ContextVar(
    "agentscope_teams_pending_links", default=()
)


@contextmanager
def joined(stored: dict[str, str] | None, linked: Sequence[dict[str, str]] = ()) -> Iterator[None]:
    """Run the block as part of the trace ``stored`` names: the next span started is its child.
    ``linked``: other records' contexts the block's ``invoke_agent`` span links to (a member woken
    for several tasks is a child of the first task's creator and links to the others')."""
    if otel_trace is None or not (stored or linked):
        yield
        return
    links = PENDING_LINKS.set(tuple(linked))
    token = otel_context.attach(_propagator().extract(stored)) if stored else None
    try:
        yield
    finally:
        if token is not None:
            otel_context.detach(token)
        PENDING_LINKS.reset(links)


def take_pending_links() -> list[Any]:
    """The links :func:`joined` left for the span being started, once (nested spans get none)."""
    pending = PENDING_LINKS.get()
    if not pending:
        return []
    PENDING_LINKS.set(())
    return [link for stored in pending for link in link_to(stored)]


def link_to(stored: dict[str, str] | None) -> list[Any]:
    """A link to the span ``stored`` names (empty if none)."""
    if not stored or otel_trace is None:
        return []
    span = otel_trace.get_current_span(_propagator().extract(stored))
    ctx = span.get_span_context()
    return [otel_trace.Link(ctx)] if ctx.is_valid else []
