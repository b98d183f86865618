"""SDK setup for the command line from the standard ``OTEL_*`` environment variables.

Tracing is set up only when the SDK is installed and the environment asks for it: ``OTEL_TRACES_EXPORTER``
names an exporter (``otlp``, ``console``; ``none`` turns it off) or an OTLP endpoint is set
(``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), and ``OTEL_SDK_DISABLED``
is not ``true``. The OTLP exporter speaks HTTP/protobuf and reads its own variables (headers,
timeout, ...); the resource reads ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError

log = logging.getLogger(__name__)

DEFAULT_SERVICE_NAME = "agentscope-teams"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def wanted_exporters(env: Mapping[str, str]) -> list[str]:
    """The exporters the environment asks for (empty: tracing stays off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = [e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()]
    if named:
        return [e for e in named if e != "none"]
    return ["otlp"] if any(env.get(k) for k in _ENDPOINTS) else []


def configure_from_env(env: Mapping[str, str] | None = None) -> Any | None:
    """Install an SDK ``TracerProvider`` as the global one if the environment asks for tracing.

    Returns the provider (call ``shutdown()`` at exit to flush it) or None when tracing stays off.
    Raises :class:`ConfigurationError` for an exporter it does not know or a missing SDK.
    """
    env = os.environ if env is None else env
    exporters = wanted_exporters(env)
    if not exporters:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigurationError(
            "OTEL_* variables ask for tracing but the OpenTelemetry SDK is not installed; "
            "install it (pip install 'agentscope-teams[otel]' opentelemetry-sdk "
            "opentelemetry-exporter-otlp-proto-http) or unset OTEL_TRACES_EXPORTER / "
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        ) from exc
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", DEFAULT_SERVICE_NAME)})
    provider = TracerProvider(resource=resource)
    for name in exporters:
        provider.add_span_processor(BatchSpanProcessor(_exporter(name)))
    trace.set_tracer_provider(provider)
    return provider


def _exporter(name: str) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigurationError(
                "OTEL_TRACES_EXPORTER=otlp needs the OTLP/HTTP exporter: "
                "pip install opentelemetry-exporter-otlp-proto-http"
            ) from exc
        return OTLPSpanExporter()
    raise ConfigurationError(
        f"OTEL_TRACES_EXPORTER names {name!r}, which agentscope-teams does not support; "
        "use otlp, console or none"
    )


def shutdown(provider: Any | None) -> None:
    """Flush and stop a provider made by :func:`configure_from_env` (nothing if None)."""
    if provider is None:
        return
    try:
        provider.shutdown()
    except Exception as exc:  # exporting is best effort: never fail the command for it
        log.warning("could not flush traces: %s", exc)
