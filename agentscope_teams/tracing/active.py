"""Whether tracing is on for the running call, and with which tracer.

``opentelemetry`` is imported here only if it is installed; without it every hook is a no-op. With it,
tracing is on for a call when it was given a ``TracerProvider`` or the global provider was set (the
API's default proxy provider counts as off). The active tracer lives in a context variable set for the
duration of an ``invoke_agent`` span, so a hook on the hot path costs one ``ContextVar.get`` when off.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._version import __version__
from . import names
from .usage import GOVERNANCE, METER

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - exercised when the otel extra is not installed
    otel_context = None  # type: ignore[assignment]
    otel_trace = None  # type: ignore[assignment]

__all__ = [
    "ACTIVE",
    "AVAILABLE",
    "Active",
    "fresh_context",
    "otel_context",
    "otel_trace",
    "resolve",
]

#: True when the ``opentelemetry-api`` package is importable.
AVAILABLE = otel_trace is not None


@dataclass(frozen=True, slots=True)
class Active:
    """The tracing of one call: its tracer and whether contents are recorded (no reference to the
    provider: it keys a weak cache of these)."""

    tracer: Tracer
    capture_content: bool


ACTIVE: contextvars.ContextVar[Active | None] = contextvars.ContextVar(
    "agentscope_teams_tracing", default=None
)

#: id(provider) -> (the provider, weakly; its Active). Bounded: an SDK tracer refers to its provider,
#: so an entry keeps the provider alive until the cache is cleared.
_tracers: dict[int, tuple[weakref.ref[Any], Active]] = {}
_MAX_CACHED = 32


def capture_content() -> bool:
    """Whether the opt-in variable asks for message contents (``true`` / ``1``)."""
    return os.environ.get(names.CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


def resolve(provider: Any = None) -> Active | None:
    """The tracing for a call given ``provider`` (None: the enclosing call's, else the global one);
    None when tracing is off."""
    if otel_trace is None:
        return None
    if provider is None:
        enclosing = ACTIVE.get()
        if enclosing is not None:
            return enclosing
        provider = otel_trace.get_tracer_provider()
        if isinstance(provider, otel_trace.ProxyTracerProvider | otel_trace.NoOpTracerProvider):
            return None
    capture = capture_content()
    cached = _tracers.get(id(provider))
    if cached is not None and cached[0]() is provider and cached[1].capture_content == capture:
        return cached[1]
    if len(_tracers) >= _MAX_CACHED:
        _tracers.clear()
    found = Active(provider.get_tracer(names.INSTRUMENTATION, __version__), capture)
    with contextlib.suppress(TypeError):  # a provider without weak references is not cached
        _tracers[id(provider)] = (weakref.ref(provider), found)
    return found


def fresh_context() -> contextvars.Context:
    """An empty ``contextvars.Context`` that keeps only the running call's tracing choice (and
    usage meter, budgets and rate limits).

    For tasks that must not inherit the caller's context (a background run, a team runtime) but
    should trace with the same provider; where they sit in a trace comes from the store
    (:func:`~agentscope_teams.tracing.joined`), not from the caller's current span.
    """
    ctx = contextvars.Context()
    active, meter = ACTIVE.get(), METER.get()
    if active is not None:
        ctx.run(ACTIVE.set, active)
    if meter is not None:
        ctx.run(METER.set, meter)
    governance = GOVERNANCE.get()
    if governance is not None:
        ctx.run(GOVERNANCE.set, governance)
    return ctx
